"""Two or more horizontal autoscalers scale the same workload.

## What it does
Reports every HorizontalPodAutoscaler and KEDA ScaledObject whose `scaleTargetRef`
names a workload (same namespace, API group, kind and name; `extensions`
Deployments count as `apps`) that another HPA or ScaledObject of the set also
targets, naming the others. The workload itself need not be in the manifests.
The same autoscaler defined twice counts once (FW305 reports the duplicate).

## Why is this bad?
Each autoscaler computes its own replica count and writes it through the scale
subresource; they overwrite each other every sync period and the workload flaps.
Kubernetes' HPA controller refuses to act when it sees a second HPA on the same
pods (`AmbiguousSelector`), and KEDA's admission webhook rejects a ScaledObject
whose target an HPA already scales — so the problem shows up as a failed deploy
or an autoscaler that silently stopped working.

## Example
```yaml
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-cpu}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-memory}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
```

## Use instead
One autoscaler per workload, listing every metric; it scales to the highest
replica count any metric asks for.
```yaml
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics:
    - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}
    - {type: Resource, resource: {name: memory, target: {type: Utilization, averageUtilization: 80}}}
```
"""

from __future__ import annotations

from collections import defaultdict

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Sequence

from ..autoscalers import HPA, SCALE_TARGET_FIELDS, SCALE_TARGET_PATH, SCALED_OBJECT, scale_target
from ..kube import kinds_of
from ..model import ERROR, ObjectKey, Violation
from ..rule import SET, SetObject

CODE = "FW302"
NAME = "multiple-hpas"
SEVERITY = ERROR
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
CONTEXT_PATHS: tuple[tuple[str, ...], ...] = SCALE_TARGET_FIELDS


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation on each target autoscaler whose workload another one scales too."""
    namespace = str(conf.get("default-namespace", "default"))
    scaled_by: dict[ObjectKey, list[int]] = defaultdict(list)
    aims: dict[int, ObjectKey] = {}
    for index, (item, kind) in enumerate(zip(objects, kinds_of(objects))):
        if kind != HPA and kind != SCALED_OBJECT:  # (scale_target's own test, on the unit's kinds made once)
            continue
        target = scale_target(item.data, namespace)
        if target is not None:
            scaled_by[target].append(index)
            aims[index] = target
    for index in targets:
        target = aims.get(index)
        if target is None:
            continue
        own = objects[index].key
        others: dict[object, str] = {}
        for other in scaled_by[target]:
            key = objects[other].key
            if other == index or (key is not None and key == own):
                continue
            identity: object = key if key is not None else other
            others.setdefault(identity, _describe(objects[other]))
        if not others:
            continue
        yield index, Violation(
            SCALE_TARGET_PATH,
            f"{target.label()} is also scaled by {', '.join(others.values())}; "
            "the autoscalers overwrite each other's replica count",
            "keep one HPA or ScaledObject per workload and list all metrics in it",
        )


def _describe(item: SetObject) -> str:
    label = item.key.label() if item.key else str(item.data.get("kind", "autoscaler"))
    return f"{label} ({item.origin})"
