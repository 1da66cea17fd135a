"""A workload sets `spec.replicas` although a HorizontalPodAutoscaler scales it.

## What it does
Reports `spec.replicas` on an object that a HorizontalPodAutoscaler (`autoscaling/v1`,
`v2`, `v2beta1`, `v2beta2`) or a KEDA ScaledObject in the same set of manifests
targets: same namespace (an unset namespace counts as `default-namespace`), same API
group (`extensions` Deployments count as `apps`), kind and name. The autoscaler may
live in another file: the linter loads the rest of the project as context. Any
scalable kind counts, custom resources such as Argo Rollouts included. An HPA with
`minReplicas: 0` (scale to zero: the `HPAScaleToZero` feature gate, with an Object or
External metric) is an HPA like any other, and `replicas: 0` beside it is still its field.

Not reported when the workload carries the annotation
`werf.io/set-replicas-only-on-creation: "true"`: werf then writes `replicas` only
when it creates the object and leaves the autoscaler's count alone on later
deploys. (Only the string `"true"` counts, as werf reads it.)

## Why is this bad?
The autoscaler changes the replica count in the cluster; the manifest still says
`replicas: 3`. Every deploy (`kubectl apply`, Helm, Argo CD, Flux) sets it back to
3, and the HPA needs a few sync periods to scale up again — under load, every
release scales the application down. Server-side apply reports the clash as a
conflict on `.spec.replicas`.

Removing the field is the fix, but mind the migration: `kubectl apply` (client-side)
treats a field that disappears from the manifest as "delete it", the API server then
defaults `replicas` to 1, and the workload briefly scales to one pod. Remove it from
`kubectl.kubernetes.io/last-applied-configuration` first (`kubectl apply
edit-last-applied`), or deploy with server-side apply. That is why this rule offers
no automatic fix.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  # ...
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 10
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  # no replicas: the HPA owns them (minReplicas sets the floor)
  # ...
```
"""

from __future__ import annotations

from collections import defaultdict

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Sequence

from ..autoscalers import HPA, SCALE_TARGET_FIELDS, SCALED_OBJECT, scale_target
from ..kube import get_path, kinds_of
from ..model import ERROR, ObjectKey, Violation
from ..rule import SET, SetObject

CODE = "FW301"
NAME = "replicas-owned-by-hpa"
SEVERITY = ERROR
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

WERF_ANNOTATION = "werf.io/set-replicas-only-on-creation"

CONTEXT_PATHS: tuple[tuple[str, ...], ...] = (
    ("spec", "replicas"),
    ("metadata", "annotations", WERF_ANNOTATION),
    *SCALE_TARGET_FIELDS,
)


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation on spec.replicas of each target object an autoscaler scales."""
    namespace = str(conf.get("default-namespace", "default"))
    scaled_by: dict[ObjectKey, list[int]] = defaultdict(list)
    for index, (item, kind) in enumerate(zip(objects, kinds_of(objects))):
        if kind != HPA and kind != SCALED_OBJECT:  # (scale_target's own test, on the unit's kinds made once)
            continue
        target = scale_target(item.data, namespace)
        if target is not None:
            scaled_by[target].append(index)
    if not scaled_by:
        return
    for index in targets:
        item = objects[index]
        if item.key is None or item.key not in scaled_by:
            continue
        spec = item.data.get("spec")
        if not isinstance(spec, dict) or "replicas" not in spec:
            continue
        if get_path(item.data, ("metadata", "annotations", WERF_ANNOTATION)) == "true":
            continue
        scalers = ", ".join(_describe(objects[i]) for i in scaled_by[item.key])
        value = get_path(item.data, ("spec", "replicas"))
        reset_to = "1 (null is defaulted)" if value is None else str(value)
        yield index, Violation(
            ("spec", "replicas"),
            f"spec.replicas is set, but {scalers} scales it: every deploy "
            f"resets the autoscaler's replica count to {reset_to}",
            f"remove spec.replicas (the autoscaler's minimum sets the floor), or annotate "
            f'the object {WERF_ANNOTATION}: "true" when werf deploys it',
        )


def _describe(item: SetObject) -> str:
    label = item.key.label() if item.key else str(item.data.get("kind", "autoscaler"))
    return f"{label} ({item.origin})"
