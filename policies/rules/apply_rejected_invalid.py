"""The API server refuses the next apply of this object as invalid (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster`, each object is sent to the cluster as a dry run of the
apply the team uses (server-side apply, or what client-side `kubectl apply` sends; see
`--apply-mode`), and every field error of a refusal (HTTP 422 `Invalid`) is reported on the
line of the field it names, in the API server's own words:

    spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'

An invalid value of an existing object is reported on the value the manifest changes under
the field named (`app: other` under the template's `labels`); an error about a field's presence
(`Forbidden`, `Required`) on that field. A field that is not in the manifest is reported on its
nearest parent that is (the `strategy:` line above), with a hint when the field is only in the live object: the server
defaulted it, or another writer set it, and the apply leaves it there. Immutable fields are
`apply-changes-immutable-field` (FW502), admission denials `apply-denied-by-admission` (FW504).
Not run with `--read-only`: only the API server can validate.

## Why is this bad?
The manifest is valid on its own and the static rules see nothing wrong, yet the deploy fails:
what the API server validates is the live object merged with the manifest. The classic case:
a Deployment created without `strategy` got `type: RollingUpdate` and a defaulted
`rollingUpdate` from the server; the manifest now says `type: Recreate`, and a server-side
apply keeps the `rollingUpdate` it does not own, so every apply fails until someone edits the
live object.

## Example
```yaml
# live: strategy {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  strategy:
    type: Recreate
```

## Use instead
Clear the left-over field in the cluster together with the change, e.g.
`kubectl patch deployment web --type=merge -p '{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}'`,
then apply; or fix the manifest so that the server accepts it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import ERROR, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW501"
NAME = "apply-rejected-invalid"
SEVERITY = ERROR
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
# errors about a value (on the changed value under the field); the others are about the field itself
VALUE_REASONS = ("FieldValueInvalid", "")


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """One violation per field error of an `Invalid` refusal (immutable fields excepted)."""
    from ..live import INVALID, invalid_causes, is_immutable, refusal_kind
    from ..places import cause_place, readable

    if case.refusal is None or refusal_kind(case.refusal) != INVALID:
        return
    for cause in invalid_causes(case.refusal):
        if is_immutable(cause.message):
            continue
        path = cause_place(case, cause.field, changed=cause.reason in VALUE_REASONS)
        where = f"{cause.field.lstrip('.')}: " if cause.field else ""
        yield Violation(path, f"the API server refuses the apply: {where}{readable(case, cause.field, cause.message)}",
                        _hint(case, cause.field, path))


def _hint(case: LiveCase, field: str, path: tuple[str | int, ...]) -> str:
    from ..live import MISSING, parse_field, value_at

    steps = parse_field(field)
    left_over = (
        case.live is not None and len(path) < len(steps) and steps and value_at(case.live, steps) is not MISSING
        and all(isinstance(step, str) for step in steps)
    )
    if not left_over:
        return "change the manifest so that the API server accepts it (the dry run above is its answer)"
    how = "server-side apply leaves fields it does not own" if case.mode == "server" else (
        "client-side apply deletes only what its last-applied configuration lists")
    return (f"{field} is in the live object but not in the manifest (the server defaulted it, or another writer set "
            f"it) and {how}: clear it in the cluster together with the change, e.g. {_patch(case, steps)}")


def _patch(case: LiveCase, steps: list[str | int]) -> str:
    """A `kubectl patch` that sets the manifest's parent map and deletes the left-over field."""
    from ..live import value_at

    import json

    parent = value_at(case.manifest, steps[:-1])
    inner: dict[str, Any] = dict(parent) if isinstance(parent, Mapping) else {}
    inner[str(steps[-1])] = None
    body: Any = inner
    for step in reversed(steps[:-1]):
        body = {str(step): body}
    meta = case.manifest.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace = f" -n {meta['namespace']}" if isinstance(meta.get("namespace"), str) else ""
    kind = str(case.manifest.get("kind", "")).lower()
    return f"kubectl patch {kind} {meta.get('name', '')}{namespace} --type=merge -p '{json.dumps(body, separators=(',', ':'))}'"
