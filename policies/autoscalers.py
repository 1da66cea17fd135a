"""Who autoscales what: HPA / KEDA ScaledObject scale targets and VPA control.

Shared by the linter's ownership rules and the webhook's keep-live mutation. Every
function is pure and total over untrusted input: a malformed autoscaler yields
None (no target) or "controls nothing", never an exception. The functions read only
these fields, so a set rule's projection that lists them is enough:

* `spec.scaleTargetRef.{apiVersion,kind,name}` (HPA, ScaledObject);
* `spec.targetRef.{apiVersion,kind,name}`, `spec.updatePolicy.updateMode`,
  `spec.resourcePolicy.containerPolicies` (VPA);
* `apiVersion`, `kind`, `metadata.namespace` of the autoscaler itself.

Semantics, as the controllers implement them:

* **HPA** (`autoscaling/v1`, `v2`, `v2beta1`, `v2beta2`): the controller takes the
  group from `scaleTargetRef.apiVersion` and maps group + kind to a resource; an absent
  apiVersion therefore means the core group, where no Deployment lives (the HPA
  then fails with "unable to determine resource"). Legacy `extensions` Deployments,
  DaemonSets and ReplicaSets mean the `apps` ones.
* **KEDA ScaledObject** (`keda.sh`): `scaleTargetRef.apiVersion` defaults to `apps/v1`
  and `kind` to `Deployment`, each on its own. KEDA creates the HPA in the cluster.
* **VPA** (`autoscaling.k8s.io`): for the well-known controllers (Deployment,
  StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob) the VPA
  finds the target by kind alone, so the apiVersion does not matter; other kinds go
  through the scale subresource by group + kind.
* Targets are namespace-local: the autoscaler's own namespace, or the default
  namespace when it sets none.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Mapping, NamedTuple
else:
    from .records import NamedTuple

from .kube import api_group, canonical_group, get_path, group_kind, object_namespace
from .model import FieldPath, ObjectKey

HPA = ("autoscaling", "HorizontalPodAutoscaler")
SCALED_OBJECT = ("keda.sh", "ScaledObject")
VPA = ("autoscaling.k8s.io", "VerticalPodAutoscaler")

SCALE_TARGET_PATH: FieldPath = ("spec", "scaleTargetRef")
VPA_TARGET_PATH: FieldPath = ("spec", "targetRef")

# Fields the functions here read, for a set rule's CONTEXT_PATHS.
SCALE_TARGET_FIELDS: tuple[tuple[str, ...], ...] = tuple(
    ("spec", "scaleTargetRef", field) for field in ("apiVersion", "kind", "name")
)
VPA_TARGET_FIELDS: tuple[tuple[str, ...], ...] = tuple(
    ("spec", "targetRef", field) for field in ("apiVersion", "kind", "name")
)
VPA_FIELDS: tuple[tuple[str, ...], ...] = VPA_TARGET_FIELDS + (
    ("spec", "updatePolicy", "updateMode"),
    ("spec", "resourcePolicy", "containerPolicies"),
)

# Kinds the VPA's controller fetcher resolves by kind alone (its informers), and
# the group they live in.
_VPA_WELL_KNOWN = {
    "Deployment": "apps",
    "StatefulSet": "apps",
    "DaemonSet": "apps",
    "ReplicaSet": "apps",
    "ReplicationController": "",
    "Job": "batch",
    "CronJob": "batch",
}

_KEDA_DEFAULT_API_VERSION = "apps/v1"
_KEDA_DEFAULT_KIND = "Deployment"

# VPA update modes (spec.updatePolicy.updateMode).
OFF = "Off"
INITIAL = "Initial"
RECREATE = "Recreate"
IN_PLACE_OR_RECREATE = "InPlaceOrRecreate"
AUTO = "Auto"  # deprecated alias of Recreate

DEFAULT_CONTROLLED = frozenset({"cpu", "memory"})
ALL_CONTAINERS = "*"


class ControlledResources(NamedTuple):
    """Resource names whose requests / limits a VPA sets in a container."""

    requests: frozenset[str]
    limits: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.requests or self.limits)


NOTHING = ControlledResources(frozenset(), frozenset())


def is_horizontal_autoscaler(obj: Mapping[str, Any]) -> bool:
    """An HPA (any autoscaling version) or a KEDA ScaledObject."""
    return group_kind(obj) in (HPA, SCALED_OBJECT)


def is_vpa(obj: Mapping[str, Any]) -> bool:
    """A VerticalPodAutoscaler (any autoscaling.k8s.io version)."""
    return group_kind(obj) == VPA


def _name(ref: Mapping[str, Any]) -> str | None:
    name = ref.get("name")
    return name if isinstance(name, str) and name else None


def scale_target(obj: Mapping[str, Any], default_namespace: str = "default") -> ObjectKey | None:
    """The object an HPA or ScaledObject scales, or None (not one, or no usable ref)."""
    which = group_kind(obj)
    if which not in (HPA, SCALED_OBJECT):
        return None
    ref = get_path(obj, SCALE_TARGET_PATH)
    if not isinstance(ref, dict):
        return None
    name = _name(ref)
    api_version = ref.get("apiVersion")
    kind = ref.get("kind")
    if which == SCALED_OBJECT:
        api_version = _KEDA_DEFAULT_API_VERSION if api_version in (None, "") else api_version
        kind = _KEDA_DEFAULT_KIND if kind in (None, "") else kind
    elif api_version is None:
        api_version = ""
    if name is None or not isinstance(kind, str) or not kind or not isinstance(api_version, str):
        return None
    group = canonical_group(api_group(api_version), kind)
    return ObjectKey(group, kind, object_namespace(obj, default_namespace), name)


def vpa_target(obj: Mapping[str, Any], default_namespace: str = "default") -> ObjectKey | None:
    """The workload a VPA's targetRef names, or None (not a VPA, or no usable ref)."""
    if not is_vpa(obj):
        return None
    ref = get_path(obj, VPA_TARGET_PATH)
    if not isinstance(ref, dict):
        return None
    name = _name(ref)
    kind = ref.get("kind")
    api_version = ref.get("apiVersion")
    if name is None or not isinstance(kind, str) or not kind:
        return None
    if kind in _VPA_WELL_KNOWN:
        group = _VPA_WELL_KNOWN[kind]
    elif isinstance(api_version, str):
        group = canonical_group(api_group(api_version), kind)
    else:
        group = ""
    return ObjectKey(group, kind, object_namespace(obj, default_namespace), name)


def vpa_update_mode(obj: Mapping[str, Any]) -> str:
    """spec.updatePolicy.updateMode, normalised: unset and `Auto` mean `Recreate`."""
    mode = get_path(obj, ("spec", "updatePolicy", "updateMode"))
    if not isinstance(mode, str) or not mode or mode == AUTO:
        return RECREATE
    return mode


def container_policy(vpa: Mapping[str, Any], container_name: str) -> Mapping[str, Any] | None:
    """The containerPolicies entry for a container: its own name first, else `*`.

    As the VPA does: the first entry with the exact name wins; among `*` entries, the last.
    """
    policies = get_path(vpa, ("spec", "resourcePolicy", "containerPolicies"))
    if not isinstance(policies, list):
        return None
    fallback: Mapping[str, Any] | None = None
    for policy in policies:
        if not isinstance(policy, dict):
            continue
        name = policy.get("containerName")
        if name == container_name:
            return policy
        if name == ALL_CONTAINERS:
            fallback = policy
    return fallback


def vpa_controlled(vpa: Mapping[str, Any], container_name: str) -> ControlledResources:
    """Which requests and limits of this container the VPA sets.

    Nothing when updateMode is `Off` or the container's policy has `mode: Off`;
    otherwise `controlledResources` (default cpu and memory; an explicit list, even
    empty, is taken as written) for requests, and for limits too unless
    `controlledValues: RequestsOnly`.
    """
    if vpa_update_mode(vpa) == OFF:
        return NOTHING
    policy = container_policy(vpa, container_name)
    if policy is None:
        return ControlledResources(DEFAULT_CONTROLLED, DEFAULT_CONTROLLED)
    if policy.get("mode") == OFF:
        return NOTHING
    listed = policy.get("controlledResources")
    if isinstance(listed, list):
        resources = frozenset(item for item in listed if isinstance(item, str))
    else:
        resources = DEFAULT_CONTROLLED
    limits = frozenset() if policy.get("controlledValues") == "RequestsOnly" else resources
    return ControlledResources(resources, limits)
