"""An autoscaler targets a workload that the manifests do not define.

## What it does
Reports a HorizontalPodAutoscaler or KEDA ScaledObject whose `spec.scaleTargetRef`,
and a VerticalPodAutoscaler whose `spec.targetRef`, names an object that is not in
the set: same namespace as the autoscaler (unset counts as `default-namespace`),
same API group and kind, same name. The set is the linted files plus, unless
`--no-context`, the rest of the project.

How the reference resolves follows the controllers: an HPA takes the group from
`scaleTargetRef.apiVersion` (absent means the core group, where no Deployment
lives — the HPA then fails); a ScaledObject defaults to `apps/v1` `Deployment`;
a VPA finds Deployments, StatefulSets, DaemonSets, ReplicaSets,
ReplicationControllers, Jobs and CronJobs by kind alone. `extensions` Deployments
count as `apps`.

Option `ignore-kinds` lists target kinds not to check — for workloads that an
operator creates and that therefore never appear in git.

## Why is this bad?
A typo in the name, a namespace left out, or a workload renamed without its
autoscaler: the autoscaler does nothing, reports `FailedGetScale` in its events,
and the workload runs without the scaling everyone believes it has.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-frontend}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
```

## Use instead
```yaml
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web-frontend}
  maxReplicas: 10
```
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from ..autoscalers import (
    SCALE_TARGET_FIELDS,
    SCALE_TARGET_PATH,
    VPA_TARGET_FIELDS,
    VPA_TARGET_PATH,
    is_horizontal_autoscaler,
    scale_target,
    vpa_target,
)
from ..kube import get_path
from ..model import WARNING, ObjectKey, Violation
from ..rule import SET, SetObject

CODE = "FW303"
NAME = "autoscaler-target-missing"
SEVERITY = WARNING
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {
    "ignore-kinds": {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "description": "kinds of scale targets not to check (e.g. workloads an operator creates)",
    },
}
DEFAULTS: dict[str, Any] = {"ignore-kinds": []}
CONTEXT_PATHS: tuple[tuple[str, ...], ...] = SCALE_TARGET_FIELDS + VPA_TARGET_FIELDS


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation on each target autoscaler whose target is absent from the set."""
    namespace = str(conf.get("default-namespace", "default"))
    ignored = conf.get("ignore-kinds") or []
    ignore = {kind for kind in ignored if isinstance(kind, str)} if isinstance(ignored, list) else set()
    present: dict[ObjectKey, int] = {}
    by_kind_name: dict[tuple[str, str], list[int]] = {}
    for index, item in enumerate(objects):
        if item.key is not None:
            present.setdefault(item.key, index)
            by_kind_name.setdefault((item.key.kind, item.key.name), []).append(index)
    for index in targets:
        item = objects[index]
        if is_horizontal_autoscaler(item.data):
            target, ref_path = scale_target(item.data, namespace), SCALE_TARGET_PATH
        else:
            target, ref_path = vpa_target(item.data, namespace), VPA_TARGET_PATH
        if target is None or target.kind in ignore or target in present:
            continue
        message = f"target {target.label()} is not defined in the manifests"
        hint = "fix the reference, add the workload, or list its kind in ignore-kinds"
        near = [objects[i] for i in by_kind_name.get((target.kind, target.name), ())]
        if near:
            other = near[0]
            assert other.key is not None
            if other.key.namespace != target.namespace:
                hint = (
                    f"{other.key.label()} ({other.origin}) is in another namespace; "
                    "the reference is namespace-local"
                )
            else:
                hint = f"{other.key.label()} ({other.origin}) is in API group {other.key.group or 'core'!r}; "
                if get_path(item.data, ref_path + ("apiVersion",)) is None:
                    hint += f"{ref_path[-1]} has no apiVersion, which means the core group: set it"
                else:
                    hint += f"the reference names group {target.group or 'core'!r}: fix its apiVersion"
        yield index, Violation(ref_path + ("name",), message, hint)
