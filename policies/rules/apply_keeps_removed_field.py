"""A field taken out of the manifest stays in the cluster: another field manager owns it too (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster` and server-side apply (the default `--apply-mode server`),
reports each field the team's field manager applied last time (its `Apply` entry in the live
managedFields), that the manifest no longer sets, and that the next apply keeps because
another manager owns it as well:

    .metadata.labels.tier stays "web": the manifest no longer sets it, but "platform" owns it too, and an apply removes only what no other manager owns

A server-side apply removes a field the manifest drops only when no other manager owns it; two
appliers that set the same value share it (a second pipeline, a GitOps controller, an operator
that applies). The dry run shows the field kept; with `--read-only` it is predicted from the live
managedFields. Client-side apply (`--apply-mode client`) removes what its last-applied
configuration had, whoever else owns it, so it is not reported there.

## Why is this bad?
The change looks done in git: the label, annotation, env var or port is gone from the manifest,
the apply succeeds, and the cluster keeps it. Selectors, routing and policies that match on it
keep matching, and nothing says so.

## Example
```yaml
# live: labels {team: a, tier: web}, applied by "ci" and tier also applied by "platform"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {team: a}   # tier removed
```

## Use instead
Have the other manager stop applying it too (remove it from its configuration), or remove it
with a write that is not an apply (`kubectl label deployment web tier-`), or keep it in the
manifest if it should stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import WARNING, FieldPath, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW510"
NAME = "apply-keeps-removed-field"
SEVERITY = WARNING
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

LIMIT = 20  # per object


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Fields the applier owned, the manifest dropped and another manager keeps."""
    from ..live import SERVER, Owner, bookkeeping, follow, is_ours, manager_text, nearest, show_at, value_at
    from ..managed_fields import ManagedFieldsError, field_managers

    live = case.live
    if live is None or case.mode != SERVER:
        return
    if case.result is not None:
        how = ""
    elif case.read_only:
        how = " (predicted from managedFields: --read-only)"
    else:
        return
    try:
        entries = field_managers(live)
    except (ManagedFieldsError, RecursionError):
        return
    ours: list[tuple[FieldPath, str]] = []
    others: dict[str, Owner] = {}  # the field's text -> its first other owner
    for entry in entries:
        owner = Owner(entry.manager, entry.operation, entry.subresource, entry.api_version)
        if is_ours(owner, case):
            ours.extend((tuple(path), text) for path, text in entry.fields)
        else:
            for _, text in entry.fields:
                others.setdefault(text, owner)
    shown = 0
    for path, text in ours:
        other = others.get(text)
        if other is None or bookkeeping(path) or follow(case.manifest, path, live) is not None:
            continue  # the apply removes it, or the manifest still sets it
        current = value_at(live, path)
        if case.result is not None and not _kept(case.result, path, live, current):
            continue
        shown += 1
        if shown > LIMIT:
            return
        yield Violation(
            nearest(case.manifest, path, live),
            f"{text} stays {show_at(case, path, current)}: the manifest no longer sets it, but {manager_text(other)} "
            f"owns it too, and an apply removes only what no other manager owns{how}",
            f"stop {other.manager} applying it too, or remove it with a write that is not an apply (kubectl label/"
            "annotate NAME KEY-, kubectl edit); or keep it in the manifest if it should stay",
        )


def _kept(result: Mapping[str, Any], path: FieldPath, live: Mapping[str, Any], current: Any) -> bool:
    from ..live import MISSING, follow, same, value_at

    found = follow(result, path, live)
    stored = value_at(result, found) if found is not None else MISSING
    return stored is not MISSING and same(stored, current)
