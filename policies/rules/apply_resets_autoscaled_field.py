"""The next apply resets what a live autoscaler set: replicas under an HPA, resources under a VPA.

## What it does
With `fieldwarden lint --cluster`, compares the live object with what the dry run of the
apply would store, for the fields the cluster's autoscalers own: `spec.replicas` of a workload
that a live HorizontalPodAutoscaler (or one of the manifests, KEDA's included) scales, and the
`resources` a live VerticalPodAutoscaler controls (its `controlledResources`, limits unless
`RequestsOnly`, not when `updateMode` or the container's `mode` is `Off`). The message carries
both values:

    spec.replicas: HorizontalPodAutoscaler web scales this Deployment (live 4); the apply would store 1

It catches what a static check cannot: a manifest that *drops* `replicas` under client-side
`kubectl apply` (the three-way merge deletes the field, the server defaults it to 1), or an HPA
that exists only in the cluster. With `--read-only` the outcome is predicted: a manifest value
that differs from the live one, a field removed from the last-applied configuration
(client-side), or one that the applier alone owns and the manifest leaves out (server-side).

## Why is this bad?
The apply succeeds and the damage is silent: the workload drops to the manifest's replica
count (or to 1) until the HPA scales it back, minutes later, and pods restart with resources
the VPA had moved away from.

## Example
```yaml
# live: replicas 4, set by HPA web; last-applied had replicas: 3; applied client-side
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
```

## Use instead
Give the field to the autoscaler once and for all: remove it from the live last-applied
configuration first (`kubectl apply edit-last-applied`, or switch to server-side apply, which
leaves a field it no longer owns), or keep the live value in the manifest's deploy tooling
(werf's `set-replicas-only-on-creation`); fieldwarden's webhook (FW403) keeps live values too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..kube import group_kind, pod_template_path
from ..model import WARNING, FieldPath, Violation, format_path
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW505"
NAME = "apply-resets-autoscaled-field"
SEVERITY = WARNING
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

REPLICAS: FieldPath = ("spec", "replicas")
HPA_HINT = ("leave spec.replicas to the autoscaler: out of the manifest, and out of the last-applied configuration "
            "(kubectl apply edit-last-applied) or owned by it (server-side apply)")
VPA_HINT = "leave the resources the VPA controls out of the manifest, or set its updateMode to Off"


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Replicas and resources the apply would move away from what the autoscalers set."""
    if case.live is None:
        return
    if case.hpas:
        yield from _replicas(case, case.live)
    if case.vpas:
        yield from _resources(case, case.live)


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name")) if isinstance(meta, Mapping) else "?"


def _replicas(case: LiveCase, live: Mapping[str, Any]) -> Iterator[Violation]:
    from ..live import MISSING, nearest, same, show_at, value_at

    current = value_at(live, REPLICAS)
    if case.result is not None:
        stored, how = value_at(case.result, REPLICAS), ""
    elif case.read_only:
        stored, how = _predicted_replicas(case, live), " (predicted from the live object: --read-only)"
    else:
        return
    if stored is MISSING or current is MISSING or same(stored, current):
        return
    kind = str(case.manifest.get("kind", "object"))
    yield Violation(
        nearest(case.manifest, REPLICAS, case.manifest),
        f"spec.replicas: HorizontalPodAutoscaler {_name(case.hpas[0])} scales this {kind} (live "
        f"{show_at(case, REPLICAS, current)}); the apply would store {show_at(case, REPLICAS, stored)}{how}",
        HPA_HINT,
    )


def _predicted_replicas(case: LiveCase, live: Mapping[str, Any]) -> Any:
    """What the apply stores in spec.replicas, from the live object alone (MISSING: no change)."""
    from ..live import CLIENT, MISSING, REPLICAS_DEFAULT_ONE, is_ours, last_applied, owners, owners_of, value_at

    wanted = value_at(case.manifest, REPLICAS)
    others = [o for o in owners_of(owners(live), REPLICAS) if not is_ours(o, case)]
    if wanted is not MISSING:
        if case.mode == CLIENT or case.force or not others:
            return wanted
        return MISSING  # a conflict: apply-conflicts-with-manager says so
    removed = False
    if case.mode == CLIENT:
        removed = value_at(last_applied(live) or {}, REPLICAS) is not MISSING
    else:
        removed = not others and any(is_ours(o, case) for o in owners_of(owners(live), REPLICAS))
    if removed and group_kind(case.manifest) in REPLICAS_DEFAULT_ONE:
        return 1
    return MISSING


def _resources(case: LiveCase, live: Mapping[str, Any]) -> Iterator[Violation]:
    from ..autoscalers import vpa_controlled
    from ..live import value_at

    template = pod_template_path(*group_kind(case.manifest))
    if template is None:
        return
    after = case.result if case.result is not None else (case.manifest if case.read_only else None)
    if after is None:
        return
    how = "" if case.result is not None else " (predicted from the live object: --read-only)"
    containers = value_at(live, template + ("spec", "containers"))
    for index, container in enumerate(containers if isinstance(containers, list) else ()):
        name = container.get("name") if isinstance(container, Mapping) else None
        if not isinstance(name, str):
            continue
        for vpa in case.vpas:
            controlled = vpa_controlled(vpa, name)
            for part, names in (("requests", controlled.requests), ("limits", controlled.limits)):
                for resource in sorted(names):
                    path = template + ("spec", "containers", index, "resources", part, resource)
                    yield from _resource(case, live, after, path, vpa, how)


def _resource(case: LiveCase, live: Mapping[str, Any], after: Mapping[str, Any], live_path: FieldPath,
              vpa: Mapping[str, Any], how: str) -> Iterator[Violation]:
    from ..live import MISSING, covered, follow, nearest, show_at, value_at

    current = value_at(live, live_path)
    found = follow(after, live_path, live)
    stored = value_at(after, found) if found is not None else MISSING
    if current is MISSING or (stored is MISSING and case.result is None) or covered(stored, current):
        return
    where = nearest(case.manifest, live_path, live)
    yield Violation(
        where,
        f"{format_path(live_path, live)}: VerticalPodAutoscaler {_name(vpa)} controls it (live "
        f"{show_at(case, live_path, current)}); the apply would store {show_at(case, live_path, stored)}{how}",
        VPA_HINT,
    )
