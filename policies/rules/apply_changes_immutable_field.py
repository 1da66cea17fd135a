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

The message carries the live value and the manifest's.

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
        INVALID, MISSING, format_steps, immutable_changes, invalid_causes, is_immutable, manifest_path, refusal_kind,
        show_at,
    )

    if case.live is None:
        return
    predicted = immutable_changes(case.manifest, case.live)
    if case.refusal is not None and refusal_kind(case.refusal) == INVALID:
        for cause in invalid_causes(case.refusal):
            if not is_immutable(cause.message):
                continue
            path = manifest_path(case, cause.field) if cause.field else ()
            where = f"{cause.field}: " if cause.field else ""
            # a cause on a whole spec (StatefulSet) is shown on each field that changes below it
            inner = [p for p in predicted if tuple(p[0][: len(path)]) == path and len(p[0]) > len(path)]
            for at, live, wanted in inner or [(path, _live_value(case, cause.field), MISSING)]:
                change = (f" ({format_steps(at)}: live {show_at(case, at, live)}, the manifest {show_at(case, at, wanted)})"
                          if wanted is not MISSING else (f" (live {show_at(case, at, live)})" if live is not MISSING else ""))
                yield Violation(at, f"the API server refuses the apply: {where}{cause.message}{change}", HINT)
        return
    if case.result is None and case.refusal is None and case.read_only:
        for at, live, wanted in predicted:
            yield Violation(
                at,
                f"{format_steps(at)} cannot change once the object exists (live {show_at(case, at, live)}, the manifest "
                f"{show_at(case, at, wanted)}): the apply will be refused (predicted from the live object: --read-only)",
                HINT,
            )


def _live_value(case: LiveCase, field: str) -> Any:
    from ..live import MISSING, follow, parse_field, value_at

    steps = parse_field(field)
    if case.live is None:
        return MISSING
    found = follow(case.live, steps, case.live)
    return value_at(case.live, found) if found is not None else MISSING
