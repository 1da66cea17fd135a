"""The kind or apiVersion is not part of the Kubernetes API of the target version.

## What it does
Checks each object's `apiVersion` and `kind` against the built-in API of the target Kubernetes
version (`--k8s-version`, or `kubernetes-version` in the configuration), offline, from the API's
own OpenAPI schemas (`fieldwarden[schemas]`):

- an API version that was **removed** is reported on `apiVersion`, naming the version that
  removed it and its replacement (`extensions/v1beta1` Deployment: removed in 1.16, use
  `apps/v1`); one that is only **deprecated** in the target version, as a warning;
- a `kind` that the apiVersion does not have (a typo) is reported on `kind`, with the closest
  kind of that apiVersion, or the apiVersion that has it (`kind: Deployment` with
  `apiVersion: v1`: it is in `apps/v1`), else the kinds the apiVersion has;
- a version that a built-in API group does not have (`apps/v2`), on `apiVersion`, with the
  versions it has.

Kinds of API groups that are not built in (custom resources) are left to the CRDs of the
project; this rule never reports them. A kubeconfig (`apiVersion: v1`, `kind: Config`) is a
client's file, not an API object: not reported. Without the schemas installed, the rule does
nothing (one notice says so).

Removals (Kubernetes' Deprecated API Migration Guide): 1.16 `extensions/v1beta1`,
`apps/v1beta1` and `apps/v1beta2` workloads; 1.22 the `v1beta1` versions of admission
webhooks, CRDs, APIService, TokenReview, access reviews, CSRs, Lease, Ingress and
IngressClass, RBAC, PriorityClass and storage kinds; 1.25 `batch/v1beta1` CronJob,
`discovery.k8s.io/v1beta1`, `events.k8s.io/v1beta1`, `autoscaling/v2beta1`, `policy/v1beta1`
(PodSecurityPolicy without a replacement), `node.k8s.io/v1beta1`; 1.26 `autoscaling/v2beta2`,
`flowcontrol.apiserver.k8s.io/v1beta1`; 1.27 `storage.k8s.io/v1beta1` CSIStorageCapacity;
1.29 `flowcontrol.apiserver.k8s.io/v1beta2`; 1.32 `flowcontrol.apiserver.k8s.io/v1beta3`.

## Why is this bad?
The API server refuses the object (`no matches for kind "Deployment" in version
"extensions/v1beta1"`): the apply fails, in CI at best, during a cluster upgrade at worst.

## Example
```yaml
apiVersion: extensions/v1beta1   # removed in Kubernetes 1.16
kind: Deployment
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..model import ERROR, WARNING, Violation
from ..rule import OBJECT

CODE = "FW601"
NAME = "unknown-kind"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

_NET, _RBAC, _STORAGE = "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io"
_FLOW = "flowcontrol.apiserver.k8s.io"
_WORKLOADS = ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet", "ControllerRevision")

# (apiVersion, kind) -> (the version that stopped serving it, its replacement or "" for none,
# the version that deprecated it, when the schemas of a target version may still carry it).
REMOVED: dict[tuple[str, str], tuple[str, str, str]] = {
    **{("extensions/v1beta1", kind): ("1.16", "apps/v1", "1.9") for kind in ("Deployment", "DaemonSet", "ReplicaSet")},
    ("extensions/v1beta1", "NetworkPolicy"): ("1.16", f"{_NET}/v1", "1.9"),
    ("extensions/v1beta1", "PodSecurityPolicy"): ("1.16", "", "1.10"),
    **{(f"apps/{v}", kind): ("1.16", "apps/v1", "1.9") for v in ("v1beta1", "v1beta2") for kind in _WORKLOADS},
    ("extensions/v1beta1", "Ingress"): ("1.22", f"{_NET}/v1", "1.14"),
    (f"{_NET}/v1beta1", "Ingress"): ("1.22", f"{_NET}/v1", "1.19"),
    (f"{_NET}/v1beta1", "IngressClass"): ("1.22", f"{_NET}/v1", "1.19"),
    **{(f"admissionregistration.k8s.io/v1beta1", kind): ("1.22", "admissionregistration.k8s.io/v1", "1.16")
       for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")},
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"): ("1.22", "apiextensions.k8s.io/v1", "1.16"),
    ("apiregistration.k8s.io/v1beta1", "APIService"): ("1.22", "apiregistration.k8s.io/v1", "1.19"),
    ("authentication.k8s.io/v1beta1", "TokenReview"): ("1.22", "authentication.k8s.io/v1", "1.19"),
    **{("authorization.k8s.io/v1beta1", kind): ("1.22", "authorization.k8s.io/v1", "1.19")
       for kind in ("SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview")},
    ("certificates.k8s.io/v1beta1", "CertificateSigningRequest"): ("1.22", "certificates.k8s.io/v1", "1.19"),
    ("coordination.k8s.io/v1beta1", "Lease"): ("1.22", "coordination.k8s.io/v1", "1.19"),
    **{(f"{_RBAC}/v1beta1", kind): ("1.22", f"{_RBAC}/v1", "1.17")
       for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")},
    ("scheduling.k8s.io/v1beta1", "PriorityClass"): ("1.22", "scheduling.k8s.io/v1", "1.14"),
    **{(f"{_STORAGE}/v1beta1", kind): ("1.22", f"{_STORAGE}/v1", "1.19")
       for kind in ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment")},
    ("batch/v1beta1", "CronJob"): ("1.25", "batch/v1", "1.21"),
    ("discovery.k8s.io/v1beta1", "EndpointSlice"): ("1.25", "discovery.k8s.io/v1", "1.21"),
    ("events.k8s.io/v1beta1", "Event"): ("1.25", "events.k8s.io/v1", "1.22"),
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): ("1.25", "autoscaling/v2", "1.22"),
    ("policy/v1beta1", "PodDisruptionBudget"): ("1.25", "policy/v1", "1.21"),
    ("policy/v1beta1", "PodSecurityPolicy"): ("1.25", "", "1.21"),
    ("node.k8s.io/v1beta1", "RuntimeClass"): ("1.25", "node.k8s.io/v1", "1.22"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): ("1.26", "autoscaling/v2", "1.23"),
    **{(f"{_FLOW}/v1beta1", kind): ("1.26", f"{_FLOW}/v1", "1.23") for kind in ("FlowSchema", "PriorityLevelConfiguration")},
    (f"{_STORAGE}/v1beta1", "CSIStorageCapacity"): ("1.27", f"{_STORAGE}/v1", "1.24"),
    **{(f"{_FLOW}/v1beta2", kind): ("1.29", f"{_FLOW}/v1", "1.26") for kind in ("FlowSchema", "PriorityLevelConfiguration")},
    **{(f"{_FLOW}/v1beta3", kind): ("1.32", f"{_FLOW}/v1", "1.29") for kind in ("FlowSchema", "PriorityLevelConfiguration")},
}
# Files with an apiVersion and kind that no API server serves, read by clients: a kubeconfig.
CLIENT_FILES = frozenset({("v1", "Config")})
REMOVED_GROUPS = frozenset(api.split("/")[0] for api, _ in REMOVED if "/" in api)  # (FW603 leaves them to FW601)
_SHOWN = 12  # kinds listed at most


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """The object's apiVersion or kind, when the target version's built-in API lacks them."""
    from ..schemas import builtin

    version = conf.get("kubernetes-version", builtin.DEFAULT_VERSION)
    try:
        kinds_of = builtin.index(version)
    except (builtin.SchemasMissing, KeyError):
        return  # (the linter says so once, or refuses the version)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    if (api_version, kind) in CLIENT_FILES:
        return
    target = _number(version)
    removed = REMOVED.get((api_version, kind))
    if kind in kinds_of.get(api_version, ()):
        if removed is not None and _number(removed[2]) <= target:
            yield Violation(("apiVersion",), f"{kind} {api_version} is deprecated since Kubernetes {removed[2]} and "
                            f"removed in {removed[0]}{_use(removed[1], kind)}", _hint(removed[1]), WARNING)
        return
    if removed is not None and _number(removed[0]) <= target:
        yield Violation(("apiVersion",), f"{kind} {api_version} was removed in Kubernetes {removed[0]}"
                        f"{_use(removed[1], kind)}", _hint(removed[1]))
        return
    group = api_version.rpartition("/")[0]
    if group not in builtin.groups(version) and group not in REMOVED_GROUPS:  # a custom resource: its CRD's business
        crds = conf.get("crds")  # (the run's CRDs: policies/schemas/crd.py)
        unserved = crds.unserved(api_version, kind) if crds is not None else None
        if unserved is not None:
            yield Violation((unserved[0],), unserved[1], "use a kind or apiVersion its CRD serves")
        return
    elsewhere = sorted(name for name, kinds in kinds_of.items() if kind in kinds)
    if api_version in kinds_of:
        kinds = sorted(kinds_of[api_version])
        message = f'{api_version} has no kind "{kind}" in Kubernetes {version}'
        if elsewhere:
            message += f"; {kind} is in {', '.join(elsewhere)}"
            yield Violation(("apiVersion",), message, f"use apiVersion: {elsewhere[0]}")
            return
        close = _closest(kind, kinds)
        if close:
            yield Violation(("kind",), f"{message}; did you mean {close}?", f"kind: {close}")
        else:
            shown = ", ".join(kinds[:_SHOWN]) + (", ..." if len(kinds) > _SHOWN else "")
            yield Violation(("kind",), f"{message}; it has {shown}", "use a kind of this apiVersion")
        return
    versions = sorted(name for name in kinds_of if name.rpartition("/")[0] == group)
    message = f'Kubernetes {version} has no API version "{api_version}"'
    if elsewhere:
        message += f"; {kind} is in {', '.join(elsewhere)}"
        yield Violation(("apiVersion",), message, f"use apiVersion: {elsewhere[0]}")
    else:
        yield Violation(("apiVersion",), message + (f"; the group has {', '.join(versions)}" if versions else ""),
                        "use a version the target Kubernetes version serves")


def _number(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _use(replacement: str, kind: str) -> str:
    return f"; use {replacement}" if replacement else f"; {kind} has no replacement"


def _hint(replacement: str) -> str:
    return f"apiVersion: {replacement}" if replacement else "remove the object (see the Kubernetes deprecation guide)"


def _closest(kind: str, kinds: list[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(kind, kinds, n=1, cutoff=0.6)
    if not close:
        close = [k for k in kinds if k.lower() == kind.lower()]
    return close[0] if close else None
