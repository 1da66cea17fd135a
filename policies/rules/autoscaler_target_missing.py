"""An autoscaler targets a workload that the manifests do not define.

## What it does
Reports a HorizontalPodAutoscaler or KEDA ScaledObject whose `spec.scaleTargetRef`,
and a VerticalPodAutoscaler whose `spec.targetRef`, names an object that is not in
the set: same namespace as the autoscaler (unset counts as `default-namespace`),
same API group and kind, same name. The set is the linted files plus, unless
`--no-context`, the rest of the project. When the target is defined in another apply
unit of the project, the finding says where (the file and line, and that unit) instead of
"not defined": the two are not applied together.

How the reference resolves follows the controllers: an HPA takes the group from
`scaleTargetRef.apiVersion`; a ScaledObject defaults to `apps/v1` `Deployment`;
a VPA finds Deployments, StatefulSets, DaemonSets, ReplicaSets,
ReplicationControllers, Jobs and CronJobs by kind alone. `extensions` Deployments
count as `apps`.

An HPA whose `scaleTargetRef` has no `apiVersion` (or an empty one) is reported as
exactly that, at `scaleTargetRef`, whether or not the workload is in the set: the HPA
controller reads a missing apiVersion as the core group (`v1`), where only
ReplicationControllers live, so it never finds a Deployment or StatefulSet
(`unable to determine resource for scale target reference`), and API servers that
validate HPA apiVersions (kubernetes/kubernetes#132537, which keeps accepting stored
HPAs that are not changed) refuse to create one. A ReplicationController target needs
no apiVersion. The hint names the apiVersion to write: that of the workload in the set,
or `apps/v1` for the built-in kinds.

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

from collections.abc import Mapping  # (isinstance at run time)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Sequence

from ..autoscalers import (
    HPA,
    SCALE_TARGET_FIELDS,
    SCALED_OBJECT,
    SCALE_TARGET_PATH,
    VPA,
    VPA_TARGET_FIELDS,
    VPA_TARGET_PATH,
    is_horizontal_autoscaler,
    scale_target,
    vpa_target,
)
from ..kube import get_path, group_kind, kinds_of
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
READS_ELSEWHERE = True  # conf["elsewhere"]: the project's other objects, key -> (where, unit)
CONTEXT_PATHS: tuple[tuple[str, ...], ...] = SCALE_TARGET_FIELDS + VPA_TARGET_FIELDS


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation on each target autoscaler whose target is absent from the set."""
    namespace = str(conf.get("default-namespace", "default"))
    ignored = conf.get("ignore-kinds") or []
    ignore = {kind for kind in ignored if isinstance(kind, str)} if isinstance(ignored, list) else set()
    elsewhere = conf.get("elsewhere")
    present: dict[ObjectKey, int] = {}
    by_kind_name: dict[tuple[str, str], list[int]] = {}
    for index, item in enumerate(objects):
        if item.key is not None:
            present.setdefault(item.key, index)
            by_kind_name.setdefault((item.key.kind, item.key.name), []).append(index)
    kinds = kinds_of(objects)
    for index in targets:
        if kinds[index] not in _AUTOSCALERS:  # (what the tests below return None or skip on first)
            continue
        item = objects[index]
        missing = _missing_api_version(item, objects, by_kind_name, namespace, ignore)
        if missing is not None:
            yield index, missing
            continue
        if is_horizontal_autoscaler(item.data):
            target, ref_path = scale_target(item.data, namespace), SCALE_TARGET_PATH
        else:
            target, ref_path = vpa_target(item.data, namespace), VPA_TARGET_PATH
        if target is None or target.kind in ignore or target in present:
            continue
        found = elsewhere.get(target) if isinstance(elsewhere, Mapping) else None
        if found is not None:
            where, unit = found
            message = (f"target {target.label()} is not in this apply unit: it is defined in {where} "
                       f"(another unit: {unit})")
            yield index, Violation(ref_path + ("name",), message,
                                   "apply both together: move the autoscaler to the workload's unit, "
                                   "or declare one unit for both (docs: Apply units)")
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


_AUTOSCALERS = frozenset({HPA, SCALED_OBJECT, VPA})  # the kinds this rule judges

# The built-in kinds an HPA can scale, and where they live.
_BUILT_IN_SCALABLE = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "ReplicaSet": "apps/v1"}


def _missing_api_version(
    item: SetObject,
    objects: Sequence[SetObject],
    by_kind_name: Mapping[tuple[str, str], list[int]],
    namespace: str,
    ignore: set[str],
) -> Violation | None:
    """An HPA whose scaleTargetRef names a kind and a name but no apiVersion (not an RC)."""
    if group_kind(item.data) != HPA:
        return None
    ref = get_path(item.data, SCALE_TARGET_PATH)
    if not isinstance(ref, dict) or ref.get("apiVersion") not in (None, ""):
        return None
    kind, name = ref.get("kind"), ref.get("name")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        return None  # the API server refuses it for the missing kind or name first
    if kind == "ReplicationController" or kind in ignore:
        return None
    said = "no apiVersion" if ref.get("apiVersion") is None else "an empty apiVersion"
    message = (
        f"scaleTargetRef has {said}: the HPA reads it as the core API group (v1), which has no {kind}, "
        f"so it never finds {kind} {name} and never scales it; newer API servers refuse to create such an HPA"
    )
    target = scale_target(item.data, namespace)
    hint = "set scaleTargetRef.apiVersion to the target's group and version"
    for other_index in by_kind_name.get((kind, name), ()):
        other = objects[other_index]
        api_version = other.data.get("apiVersion")
        if other.key is not None and target is not None and other.key.namespace == target.namespace and isinstance(api_version, str):
            hint = f"set scaleTargetRef.apiVersion: {api_version} ({other.key.label()} is at {other.origin})"
            break
    else:
        if kind in _BUILT_IN_SCALABLE:
            hint = f"set scaleTargetRef.apiVersion: {_BUILT_IN_SCALABLE[kind]}"
    return Violation(SCALE_TARGET_PATH, message, hint)
