"""A workload's pod template sets container resources that a VerticalPodAutoscaler controls.

## What it does
On a Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job or
CronJob that a VerticalPodAutoscaler of the set targets (`spec.targetRef`, same
namespace) with an `updateMode` other than `Off`, reports each
`resources.requests.<resource>` and `resources.limits.<resource>` of a container
that the VPA controls, following `spec.resourcePolicy.containerPolicies`:

- the policy whose `containerName` is the container's name wins over `*`;
- `mode: Off` in that policy controls nothing in the container;
- `controlledResources` (default `[cpu, memory]`) names the resources;
- `controlledValues: RequestsOnly` leaves limits alone; the default
  `RequestsAndLimits` controls both.

`updateMode` unset or `Auto` means `Recreate`; `Recreate`, `InPlaceOrRecreate` and
`Initial` all count. Init containers are not reported: the VPA leaves them alone.

Not reported when the workload carries the annotation
`werf.io/set-resources-only-on-creation: "true"`: werf then writes `resources` only
when it creates the object and leaves them alone on later deploys.

## Why is this bad?
The VPA writes its own requests (and proportional limits) into every pod it
admits, so the values in git are not what runs. Worse, a deploy tool that resets
the template (or a person who "fixes" the numbers) changes the pod template and
rolls every pod of the workload for a value the VPA will overwrite again.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - name: web
          resources:
            requests: {cpu: 250m, memory: 256Mi}
---
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: web}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    werf.io/set-resources-only-on-creation: "true"  # or drop the resources
spec:
  template:
    spec:
      containers:
        - name: web
          resources:
            requests: {cpu: 250m, memory: 256Mi}
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Sequence

from ..autoscalers import OFF, VPA, VPA_FIELDS, vpa_controlled, vpa_target, vpa_update_mode
from ..kube import get_path, kinds_of, pod_template_path
from ..model import WARNING, ObjectKey, Violation
from ..rule import SET, SetObject

CODE = "FW304"
NAME = "resources-owned-by-vpa"
SEVERITY = WARNING
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

WERF_ANNOTATION = "werf.io/set-resources-only-on-creation"

_TEMPLATES = (("spec", "template"), ("spec", "jobTemplate", "spec", "template"))
_KINDS = ("requests", "limits")

CONTEXT_PATHS: tuple[tuple[str, ...], ...] = (
    ("metadata", "annotations", WERF_ANNOTATION),
    *VPA_FIELDS,
    *(template + ("spec", "containers", "*", "name") for template in _TEMPLATES),
    *(template + ("spec", "containers", "*", "resources") for template in _TEMPLATES),
    # the standard resources once more, one by one, so findings point at the key
    *(
        template + ("spec", "containers", "*", "resources", kind, resource)
        for template in _TEMPLATES
        for kind in _KINDS
        for resource in ("cpu", "memory")
    ),
)


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation for each VPA-controlled request or limit of a targeted workload."""
    namespace = str(conf.get("default-namespace", "default"))
    vpas: dict[ObjectKey, list[int]] = {}
    for index, (item, kind) in enumerate(zip(objects, kinds_of(objects))):
        if kind != VPA:  # (vpa_target's own test, on the unit's kinds made once)
            continue
        target = vpa_target(item.data, namespace)
        if target is not None and vpa_update_mode(item.data) != OFF:
            vpas.setdefault(target, []).append(index)
    if not vpas:
        return
    for index in targets:
        item = objects[index]
        if item.key is None or item.key not in vpas:
            continue
        template = pod_template_path(item.key.group, item.key.kind)
        if template is None or get_path(item.data, ("metadata", "annotations", WERF_ANNOTATION)) == "true":
            continue
        containers = get_path(item.data, template + ("spec", "containers"))
        if not isinstance(containers, list):
            continue
        for position, container in enumerate(containers):
            if not isinstance(container, dict) or not isinstance(container.get("name"), str):
                continue
            yield from _container(objects, vpas[item.key], index, template, position, container)


def _container(
    objects: Sequence[SetObject],
    vpa_indices: list[int],
    index: int,
    template: tuple[str | int, ...],
    position: int,
    container: Mapping[str, Any],
) -> Iterator[tuple[int, Violation]]:
    name = container["name"]
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return
    controlled = [(objects[i], vpa_controlled(objects[i].data, name)) for i in vpa_indices]
    for kind in _KINDS:
        values = resources.get(kind)
        if not isinstance(values, dict):
            continue
        for resource in values:
            if not isinstance(resource, str):
                continue
            owners = [vpa for vpa, control in controlled if resource in (control.requests if kind == "requests" else control.limits)]
            if not owners:
                continue
            who = ", ".join(_describe(vpa) for vpa in owners)
            yield index, Violation(
                template + ("spec", "containers", position, "resources", kind, resource),
                f"resources.{kind}.{resource} of container {name!r} is controlled by {who}: "
                "the VPA overrides it in every pod, and changing it rolls the pods for nothing",
                "drop the value, exclude it from the VPA (resourcePolicy.containerPolicies: "
                "controlledResources, controlledValues: RequestsOnly, mode: Off), or annotate "
                f'the workload {WERF_ANNOTATION}: "true" when werf deploys it',
            )


def _describe(item: SetObject) -> str:
    label = item.key.label() if item.key else "VerticalPodAutoscaler"
    return f"{label} ({item.origin}, updateMode {vpa_update_mode(item.data)})"
