"""The next apply silently takes fields over from another field manager (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster`, reports each field that another field manager owns in the
live object and that the apply would change (or remove), with the owner, the live value and
the one the apply would store:

    takes .spec.template.spec.containers[name="web"].image over from "kubectl-set" (live "nginx:1.27"); the apply would store "nginx:1.25"

This is what a client-side `kubectl apply` does to other writers' fields (its update never
conflicts), and what a server-side apply with `--force-conflicts` does (Flux and Argo CD's
`ServerSideApply` force). A plain server-side apply is refused instead (FW503). Managers that
created the object (`kubectl-create`, `before-first-apply`, the client-side applier) are not
"other writers", nor, when the field manager is kubectl's, kubectl's other apply mode (a team
moving between client- and server-side apply); the replicas and resources of live autoscalers
are FW505's. With `--read-only` the change is predicted from the manifest's values and the
live managedFields.

## Why is this bad?
Someone changed the live object on purpose (an image set by an image updater, a value an
operator or a person set with `kubectl edit`): the deploy reverts it without a word, and the
other writer sets it again: the two fight on every deploy.

## Example
```yaml
# live: image nginx:1.27, set by `kubectl set image` (manager kubectl-set)
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.25
```

## Use instead
Bring the manifest up to the live value (the change belongs in git), or stop the other writer;
or leave the field out of the manifest if it belongs to that writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import WARNING, FieldPath, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW506"
NAME = "apply-takes-over-field"
SEVERITY = WARNING
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

LIMIT = 20  # per object: a wholesale takeover is one story, not a page of findings


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Fields of other managers whose value the apply changes."""
    from ..live import (
        CLIENT, MISSING, Owner, bookkeeping, follow, manager_text, nearest, ours_or_creation, same, show_at, value_at,
    )

    live = case.live
    if live is None:
        return
    if case.result is not None:
        after, how = case.result, ""
    elif case.read_only and (case.mode == CLIENT or case.force):
        after, how = case.manifest, " (predicted from managedFields: --read-only)"
    else:
        return
    from ..managed_fields import ManagedFieldsError, field_managers
    from ..places import place_under

    try:
        entries = field_managers(live)
    except (ManagedFieldsError, RecursionError):
        return
    shown = 0
    seen: set[str] = set()
    for entry in entries:
        owner = Owner(entry.manager, entry.operation, entry.subresource, entry.api_version)
        if ours_or_creation(owner, case):
            continue
        for live_path, text in entry.fields:
            if text in seen or bookkeeping(live_path) or _autoscaled(case, live_path):
                continue
            current = value_at(live, live_path)
            found = follow(after, live_path, live)
            stored = value_at(after, found) if found is not None else MISSING
            if stored is MISSING and after is case.manifest or same(stored, current):
                continue  # (read-only: a field the manifest does not set is left alone)
            seen.add(text)
            shown += 1
            if shown > LIMIT:
                return
            yield Violation(
                place_under(case, nearest(case.manifest, live_path, live), live_path),
                f"takes {text} over from {manager_text(owner)} (live {show_at(case, live_path, current)}); the apply "
                f"would store {show_at(case, live_path, stored)}{how}",
                f"bring the manifest up to the live value, or leave {text} out of it if it belongs to "
                f"{entry.manager}",
            )


def _autoscaled(case: LiveCase, path: FieldPath) -> bool:
    """Replicas under an HPA and resources under a VPA: apply-resets-autoscaled-field reports them."""
    if case.hpas and tuple(path) == ("spec", "replicas"):
        return True
    return bool(case.vpas) and "resources" in path and "containers" in path
