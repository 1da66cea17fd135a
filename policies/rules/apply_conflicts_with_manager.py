"""The next server-side apply conflicts with another field manager (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster` and `--apply-mode server` (the default), reports each field
of the manifest that another field manager owns in the live object and that the apply would
change, worded as the API server words the conflict, with the live value and the manifest's:

    conflict with "kube-controller-manager" with subresource "scale": .spec.replicas (live 4, the manifest 3)

From the dry run's 409 answer; with `--read-only`, predicted from the live object's
`metadata.managedFields`: a field that another manager owns (a manager is its name, operation
and subresource: `kubectl scale` writes as `kubectl` through `scale`, which is not the
`kubectl` of `kubectl apply --server-side`) and whose live value differs from the manifest's.
With `--force-conflicts` (the team's applies force, as Flux does) nothing conflicts: the fields
are taken over instead, which `apply-takes-over-field` (FW506) reports.

## Why is this bad?
A server-side apply fails with `Apply failed with 1 conflict`, and the usual "fix" is to
force it, which takes the field from its owner: the HPA's replica count goes back to the
manifest's on every deploy, an operator's setting is reverted and set again in a loop.

## Example
```yaml
# live: spec.replicas 4, owned by kube-controller-manager through the scale subresource (an HPA)
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
```

## Use instead
Leave the field to its owner and out of the manifest; or, if the manifest is meant to own it,
take it over once on purpose (`kubectl apply --server-side --force-conflicts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import ERROR, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW503"
NAME = "apply-conflicts-with-manager"
SEVERITY = ERROR
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}



def _hint(field: str) -> str:
    return (f"leave {field} out of the manifest and to its owner, or take it over on purpose "
            "(kubectl apply --server-side --force-conflicts): then every deploy sets it back")


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Each conflicting field of the dry run's 409, or (read-only) the predicted ones."""
    from ..live import CONFLICT, SERVER, causes, refusal_kind, show_at, ssa_paths, ssa_text_path, value_at
    from ..places import place_under

    if case.refusal is not None and refusal_kind(case.refusal) == CONFLICT:
        live_paths = ssa_paths(case.live, case.live) if case.live is not None else {}
        for cause in causes(case.refusal):
            if cause.reason != "FieldManagerConflict":
                continue
            path = ssa_text_path(cause.field, case)
            live_path = live_paths.get(cause.field)
            live = value_at(case.live, live_path) if live_path is not None else None
            values = (f" (live {show_at(case, live_path, live)}, the manifest "
                      f"{show_at(case, path, value_at(case.manifest, path))})" if live_path else "")
            yield Violation(place_under(case, path, cause.field),
                            f"the API server refuses the apply: {cause.message}: {cause.field}{values}",
                            _hint(cause.field))
        return
    if not case.read_only or case.live is None or case.mode != SERVER or case.force:
        return
    yield from _predicted(case, case.live)


def _predicted(case: LiveCase, live: Mapping[str, Any]) -> Iterator[Violation]:
    """Fields of the manifest that other managers own and whose live value the apply would change."""
    from ..live import Owner, bookkeeping, covered, is_ours, manager_text, show_at, ssa_paths, value_at
    from ..places import place_under

    from ..managed_fields import ManagedFieldsError, field_managers

    try:
        entries = field_managers(live)
    except (ManagedFieldsError, RecursionError):
        return
    in_manifest = ssa_paths(case.manifest, live)
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        owner = Owner(entry.manager, entry.operation, entry.subresource, entry.api_version)
        if is_ours(owner, case):
            continue
        for live_path, text in entry.fields:
            if bookkeeping(live_path) or (text, entry.manager) in seen:
                continue
            path = in_manifest.get(text)
            if path is None:
                continue
            wanted, current = value_at(case.manifest, path), value_at(live, live_path)
            if covered(wanted, current):
                continue
            seen.add((text, entry.manager))
            yield Violation(
                place_under(case, path, path),
                f"conflict with {manager_text(owner)}: {text} (live {show_at(case, live_path, current)}, the manifest "
                f"{show_at(case, path, wanted)}): "
                "the apply will be refused (predicted from managedFields: --read-only)",
                _hint(text),
            )

