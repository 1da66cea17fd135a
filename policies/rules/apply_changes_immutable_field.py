"""The next apply changes a field the API server does not let change (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster`, reports each field whose change the API server refuses
on an existing object, on the field's line: from the dry run's answer (`field is immutable`,
`may not change once set`, StatefulSet's `updates to statefulset spec for fields other than
... are forbidden`), or, with `--read-only`, predicted by comparing the manifest with the live
object for the fields the API server's update validation keeps fixed:

| kind | fields |
|---|---|
| Deployment, ReplicaSet, DaemonSet | `spec.selector` |
| StatefulSet | `spec.selector`, `serviceName`, `podManagementPolicy`, `volumeClaimTemplates` |
| Job | `spec.selector`, `spec.template`, `spec.completionMode` |
| Service | `spec.clusterIP`, `spec.clusterIPs` |
| PersistentVolumeClaim | `spec.accessModes`, `selector`, `storageClassName`, `volumeMode`, `dataSource`, `dataSourceRef` |
| ConfigMap, Secret with `immutable: true` | `data`, `binaryData` (and a Secret's `type` always) |
| RoleBinding, ClusterRoleBinding | `roleRef` |
| StorageClass | `provisioner`, `parameters`, `reclaimPolicy`, `volumeBindingMode` |

The finding goes on the line of the value that changes (`app: web2` under `matchLabels`, the
one storage request of a volume claim template), and the message carries its live value and
the manifest's.

## Why is this bad?
Such a change cannot be applied: the deploy fails on every attempt (`kubectl diff` stops at
the first one) until the object is deleted and re-created, which for a StatefulSet or a
PersistentVolumeClaim is a data operation, not a deploy.

## Example
```yaml
# live: selector {matchLabels: {app: web}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web, tier: front}
```

## Use instead
Keep the live value, or plan the replacement: a new object under a new name (and move
traffic), or delete and re-create it (`kubectl replace --force`) when losing it for a moment
is fine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import ERROR, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW502"
NAME = "apply-changes-immutable-field"
SEVERITY = ERROR
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

HINT = ("keep the live value, or replace the object on purpose (a new name, or `kubectl replace --force`, "
        "which deletes it first)")


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """The refused immutable fields of the dry run, or (read-only) the predicted ones."""
    from ..live import (
        INVALID, MISSING, format_steps, immutable_changes, invalid_causes, is_immutable, refusal_kind, show_at, value_at,
    )
    from ..places import changed_field, error_path, readable

    if case.live is None:
        return
    predicted = immutable_changes(case.manifest, case.live)
    if case.refusal is not None and refusal_kind(case.refusal) == INVALID:
        for cause in invalid_causes(case.refusal):
            if not is_immutable(cause.message):
                continue
            path, whole = error_path(case, cause.field) if cause.field else ((), False)
            where = f"{cause.field}: " if cause.field else ""
            said = readable(case, cause.field, cause.message)
            # a cause on a whole spec (StatefulSet) is shown on each field that changes below it
            inner = [p for p in predicted if tuple(p[0][: len(path)]) == path and len(p[0]) > len(path)]
            for at, live, wanted in inner or [(path, _live_value(case, cause.field), MISSING)]:
                place = changed_field(case.manifest, case.live, at) if inner or whole else at
                if place != at:
                    at, live, wanted = place, _live_at(case, place), value_at(case.manifest, place)
                change = (f" ({format_steps(at)}: live {show_at(case, at, live)}, the manifest {show_at(case, at, wanted)})"
                          if wanted is not MISSING else (f" (live {show_at(case, at, live)})" if live is not MISSING else ""))
                yield Violation(at, f"the API server refuses the apply: {where}{said}{change}", HINT)
        return
    if case.result is None and case.refusal is None and case.read_only:
        for at, live, wanted in predicted:
            yield Violation(
                changed_field(case.manifest, case.live, at),
                f"{format_steps(at)} cannot change once the object exists (live {show_at(case, at, live)}, the manifest "
                f"{show_at(case, at, wanted)}): the apply will be refused (predicted from the live object: --read-only)",
                HINT,
            )


def _live_at(case: LiveCase, path: tuple[str | int, ...]) -> Any:
    """The live value of a field of the manifest (MISSING: the live object has none)."""
    from ..live import MISSING, follow, value_at

    found = follow(case.live, path, case.manifest) if case.live is not None else None
    return MISSING if found is None or case.live is None else value_at(case.live, found)


def _live_value(case: LiveCase, field: str) -> Any:
    from ..live import MISSING, follow, parse_field, value_at

    steps = parse_field(field)
    if case.live is None:
        return MISSING
    found = follow(case.live, steps, case.live)
    return value_at(case.live, found) if found is not None else MISSING
