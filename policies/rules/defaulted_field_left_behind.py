"""A field the server defaulted when the object was created stays, though the manifest now implies another value.

## What it does
With `fieldwarden lint --cluster`, runs two dry runs for an existing object: the apply, and
the creation of the manifest as a new object; it reports each field that the manifest does
not set, that nobody but the applier (or the command that created the object) owns, whose
live value the apply keeps, and that a new object would get with another value:

    spec.template.spec.containers[name=web].imagePullPolicy stays "Always" (the server set it when the object was created); a new object from this manifest gets "IfNotPresent"

The typical cause is a default that depends on another field: `imagePullPolicy` is `Always`
for an image tagged `:latest` and `IfNotPresent` otherwise, and it is computed once. Values
the server allocates (a Service's `clusterIP` and node ports, a PVC's `volumeName`, anything
carrying the object's uid or name) are left out, and so is `spec.replicas` when a live
HorizontalPodAutoscaler scales the object: the HPA set that count, not the server, and leaving
replicas out of the manifest is right there (FW301). Not run with `--read-only` (it needs the two
dry runs).

## Why is this bad?
Nothing fails, and the cluster runs something the manifest does not describe: the same
manifest applied to a new cluster behaves differently from the old one, and the difference
shows up in an incident, not in a review.

## Example
```yaml
# created with image nginx:latest -> imagePullPolicy Always (defaulted); now pinned:
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.27
```

## Use instead
Write the field in the manifest with the value you mean (`imagePullPolicy: IfNotPresent`), and
the live object follows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import WARNING, FieldPath, Violation, format_path
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW507"
NAME = "defaulted-field-left-behind"
SEVERITY = WARNING
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

LIMIT = 10  # per object
REPLICAS: FieldPath = ("spec", "replicas")
# Values the API server allocates rather than defaults: they differ between any two objects.
_ALLOCATED: tuple[tuple[str, ...], ...] = (
    ("spec", "clusterIP"), ("spec", "clusterIPs"), ("spec", "healthCheckNodePort"), ("spec", "volumeName"),
)


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Fields the apply keeps that a new object from the manifest would get otherwise."""
    from ..live import MISSING, follow, leaves, nearest, ours_or_creation, owners, owners_of, same, show_at, value_at

    if case.live is None or case.result is None or case.fresh is None:
        return
    result, fresh, live = case.result, case.fresh, case.live
    owned = owners(result)
    shown = 0
    for path, value in leaves(result):
        if not path or path[0] in ("metadata", "status", "apiVersion", "kind") or _allocated(path):
            continue
        if case.hpas and path == REPLICAS:
            continue  # the autoscaler's count (even where the first server-side apply gave it to "before-first-apply")
        if follow(case.manifest, path, result) is not None:
            continue  # the manifest sets it
        in_fresh = follow(fresh, path, result)
        new = value_at(fresh, in_fresh) if in_fresh is not None else MISSING
        if new is MISSING or same(new, value):
            continue
        in_live = follow(live, path, result)
        if in_live is None or not same(value_at(live, in_live), value):
            continue  # the apply changes it: not left behind
        if any(not ours_or_creation(owner, case) for owner in owners_of(owned, path)):
            continue  # another writer's field
        shown += 1
        if shown > LIMIT:
            return
        shown_path = format_path(path, result)
        yield Violation(
            nearest(case.manifest, path, result),
            f"{shown_path} stays {show_at(case, path, value)} (the server set it when the object was created); a new "
            f"object from this manifest gets {show_at(case, path, new)}",
            f"write {shown_path} in the manifest with the value you mean (e.g. {show_at(case, path, new)}), and the "
            "live object follows",
        )


def _allocated(path: FieldPath) -> bool:
    names = tuple(step for step in path if isinstance(step, str))
    return names[:2] in _ALLOCATED or names[-1:] == ("nodePort",)
