"""Kubernetes object semantics the rules share: identity, scope, workloads, pod templates."""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

from .model import FieldPath, ObjectKey

# Kinds that left the `extensions` group; references and duplicates must see one object.
_MOVED_FROM_EXTENSIONS = {
    "Deployment": "apps",
    "DaemonSet": "apps",
    "ReplicaSet": "apps",
    "Ingress": "networking.k8s.io",
    "NetworkPolicy": "networking.k8s.io",
    "PodSecurityPolicy": "policy",
}

CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("networking.k8s.io", "IngressClass"),
        ("policy", "PodSecurityPolicy"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("cert-manager.io", "ClusterIssuer"),
    }
)

# (group, kind) -> path of the pod template and of the selector in that kind.
_WORKLOAD_PATHS: dict[tuple[str, str], tuple[FieldPath, FieldPath]] = {
    ("apps", "Deployment"): (("spec", "template"), ("spec", "selector")),
    ("apps", "ReplicaSet"): (("spec", "template"), ("spec", "selector")),
    ("apps", "StatefulSet"): (("spec", "template"), ("spec", "selector")),
    ("apps", "DaemonSet"): (("spec", "template"), ("spec", "selector")),
    ("", "ReplicationController"): (("spec", "template"), ("spec", "selector")),
    ("batch", "Job"): (("spec", "template"), ("spec", "selector")),
    ("batch", "CronJob"): (
        ("spec", "jobTemplate", "spec", "template"),
        ("spec", "jobTemplate", "spec", "selector"),
    ),
}


def api_group(api_version: str) -> str:
    """The group of an apiVersion: `apps/v1` -> `apps`, `v1` -> `` (core)."""
    return api_version.rpartition("/")[0]


def canonical_group(group: str, kind: str) -> str:
    """Map legacy groups to where the kind lives now (`extensions` Deployment -> `apps`)."""
    if group == "extensions":
        return _MOVED_FROM_EXTENSIONS.get(kind, group)
    return group


def is_kubernetes_object(doc: Any) -> bool:
    """A mapping with string `apiVersion` and `kind`: anything else is not ours to judge."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("apiVersion"), str)
        and isinstance(doc.get("kind"), str)
        and bool(doc["kind"])
    )


def group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Canonical (group, kind) of an object."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    if api_version.__class__ is str and kind.__class__ is str:  # (rules ask for it often: remembered)
        found = _GROUP_KINDS.get((api_version, kind))
        if found is None:
            found = canonical_group(api_group(api_version), kind), kind
            if len(_GROUP_KINDS) < _GROUP_KINDS_MAX and len(api_version) + len(kind) <= _GROUP_KIND_TEXT_MAX:
                _GROUP_KINDS[(api_version, kind)] = found
        return found
    kind = str(kind)
    return canonical_group(api_group(str(api_version)), kind), kind


_GROUP_KINDS: dict[tuple[str, str], tuple[str, str]] = {}
_GROUP_KINDS_MAX = 10_000
# a request may carry any apiVersion: only names of a real type's length are remembered (a group is a
# DNS subdomain, 253 characters; a version and a kind are short), so the memo stays a few MB at most
_GROUP_KIND_TEXT_MAX = 320


def kinds_of(objects: Sequence[Any]) -> list[tuple[str, str]]:
    """group_kind of each item's `.data` (a set rule's objects), in order.

    The set rules of a unit run one after another over the same list, and each picks the kinds
    it judges: the list's kinds are made once and kept for the last list asked about, while it
    holds the same items (the check that it does costs one identity comparison per item).
    """
    from operator import is_  # (here: a one-file lint runs no set rule and need not import it)

    if _LAST_KINDS:
        last, items, kinds = _LAST_KINDS[0]
        if last is objects and len(items) == len(objects) and all(map(is_, items, objects)):
            return kinds
    kinds = [group_kind(item.data) for item in objects]
    _LAST_KINDS[:] = [(objects, tuple(objects), kinds)]
    return kinds


_LAST_KINDS: list[tuple[Sequence[Any], tuple[Any, ...], list[tuple[str, str]]]] = []


def is_cluster_scoped(group: str, kind: str) -> bool:
    """Whether objects of this kind live outside namespaces."""
    return (group, kind) in CLUSTER_SCOPED


def object_namespace(obj: Mapping[str, Any], default_namespace: str) -> str:
    """The namespace the object lands in; unset means `default_namespace`; `` if cluster-scoped."""
    group, kind = group_kind(obj)
    if is_cluster_scoped(group, kind):
        return ""
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) and namespace else default_namespace


def object_key(obj: Mapping[str, Any], default_namespace: str) -> ObjectKey | None:
    """Identity of a named object, or None when it has no name (e.g. only `generateName`)."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return None
    group, kind = group_kind(obj)
    return ObjectKey(group, kind, object_namespace(obj, default_namespace), name)


def object_annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """metadata.annotations, or an empty mapping when absent or malformed."""
    meta = obj.get("metadata")
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def get_path(obj: Any, path: FieldPath) -> Any:
    """The value at `path`, or None when any step is missing or of the wrong type."""
    node = obj
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                return None
            node = node[part]
        else:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
    return node


def is_workload(group: str, kind: str) -> bool:
    """Kinds that own pods through a pod template and a selector."""
    return (group, kind) in _WORKLOAD_PATHS


WORKLOADS = frozenset(_WORKLOAD_PATHS)  # the (group, kind) of every workload (is_workload)


def pod_template_path(group: str, kind: str) -> FieldPath | None:
    """Where the pod template lives in this kind (CronJob nests it in jobTemplate)."""
    paths = _WORKLOAD_PATHS.get((group, kind))
    return paths[0] if paths else None


def selector_path(group: str, kind: str) -> FieldPath | None:
    """Where the pod selector lives in this kind."""
    paths = _WORKLOAD_PATHS.get((group, kind))
    return paths[1] if paths else None


def pod_template_labels(obj: Mapping[str, Any]) -> Any:
    """The pod template's labels of a workload (None when absent)."""
    path = pod_template_path(*group_kind(obj))
    return get_path(obj, path + ("metadata", "labels")) if path else None
