"""Objects and API server answers for the live rules' unit tests (FW5xx).

The Status bodies are those a v1.32 kube-apiserver sent for the same requests (recorded by hand
from tests/e2e/test_live_lint.py's cases); the end-to-end tests check them against the server.
"""

from __future__ import annotations

import copy
from typing import Any

from fieldwarden.policies.live import LiveCase

Obj = dict[str, Any]


def deployment(**spec: Any) -> Obj:
    """A Deployment `web` in `shop` with the given spec fields over a minimal valid spec."""
    base: Obj = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
    }
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}, "spec": base}


def live(manifest: Obj, managed: list[Obj] | None = None, **changes: Any) -> Obj:
    """The manifest as the API server stores it: defaults, managedFields, and `changes` in spec."""
    obj = copy.deepcopy(manifest)
    spec = obj["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
    for container in spec["template"]["spec"]["containers"]:
        container.setdefault("imagePullPolicy", "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
    spec.update(changes)
    obj["metadata"].update(uid="4f1c", resourceVersion="7", managedFields=managed or [])
    return obj


def apply_entry(manager: str, fields: Obj, operation: str = "Apply", subresource: str = "") -> Obj:
    entry: Obj = {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                  "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


def case(manifest: Obj, live: Obj | None = None, **kwargs: Any) -> LiveCase:
    return LiveCase(manifest=manifest, live=live, result=kwargs.pop("result", None), refusal=kwargs.pop("refusal", None),
                    **kwargs)


RECREATE_REFUSED: Obj = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified "
               "when strategy `type` is 'Recreate'",
    "reason": "Invalid",
    "details": {"name": "web", "group": "apps", "kind": "Deployment", "causes": [{
        "reason": "FieldValueForbidden", "message": "Forbidden: may not be specified when strategy `type` is 'Recreate'",
        "field": "spec.strategy.rollingUpdate"}]},
    "code": 422,
}
SELECTOR_REFUSED: Obj = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:"
               "map[string]string{\"app\":\"web2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
    "reason": "Invalid",
    "details": {"name": "web", "group": "apps", "kind": "Deployment", "causes": [{
        "reason": "FieldValueInvalid",
        "message": "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web2\"}, MatchExpressions:"
                   "[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        "field": "spec.selector"}]},
    "code": 422,
}
SCALE_CONFLICT: Obj = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "Apply failed with 1 conflict: conflict with \"kube-controller-manager\" with subresource \"scale\" "
               "using apps/v1: .spec.replicas",
    "reason": "Conflict",
    "details": {"causes": [{"reason": "FieldManagerConflict",
                            "message": "conflict with \"kube-controller-manager\" with subresource \"scale\" using apps/v1",
                            "field": ".spec.replicas"}]},
    "code": 409,
}
POLICY_DENIED: Obj = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' "
               "denied request: image nginx:latest uses the latest tag",
    "reason": "Invalid",
    "details": {"name": "web", "group": "apps", "kind": "deployments", "causes": [{
        "message": "ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: image nginx:latest "
                   "uses the latest tag"}]},
    "code": 422,
}
NAMESPACE_NOT_FOUND: Obj = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "namespaces \"nope\" not found",
    "reason": "NotFound", "details": {"name": "nope", "kind": "namespaces"}, "code": 404,
}
RBAC_FORBIDDEN: Obj = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "deployments.apps \"web\" is forbidden: User \"ci\" cannot patch resource \"deployments\" in API group "
               "\"apps\" in the namespace \"shop\"",
    "reason": "Forbidden", "details": {"name": "web", "group": "apps", "kind": "deployments"}, "code": 403,
}
