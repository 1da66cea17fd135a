"""FW402 pod-without-readiness-gate as a MutatingAdmissionPolicy (see policies/export/assemble.py).

A JSONPatch mutation on Pod CREATE: `spec.readinessGates` is an atomic list, which an
ApplyConfiguration may not change, so the gate is appended (`/spec/readinessGates/-`) or
the list added whole when there is none, and the label the readiness-gate controller
watches is set. The match conditions leave pods that already have the gate (or opt out)
alone, so a reinvocation (`reinvocationPolicy: IfNeeded`) changes nothing. (No `variables`: a
MutatingAdmissionPolicy with match conditions and variables is refused when it is the first one an
API server validates, kubernetes/kubernetes#134808.)
"""

from __future__ import annotations

from typing import Any

from .cel import Options, Policy, exemption_conditions, literal
from ..rules import pod_without_readiness_gate as rule

CODE, NAME = rule.CODE, rule.NAME


def build(options: Options) -> list[Policy]:
    """The MutatingAdmissionPolicy of FW402."""
    def cel(option: str) -> str:
        return options.cel(CODE, option)

    condition_type, opt_out, label = cel("condition-type"), cel("opt-out-annotation"), cel("injected-label")
    annotations = "object.metadata.annotations"
    gate = f"{{\"conditionType\": {condition_type}}}"
    patch = (
        "(has(object.spec.readinessGates) ? "
        f"[JSONPatch{{op: \"add\", path: \"/spec/readinessGates/-\", value: {gate}}}] : "
        f"[JSONPatch{{op: \"add\", path: \"/spec/readinessGates\", value: [{gate}]}}]) + "
        "(has(object.metadata.labels) ? "
        f"[JSONPatch{{op: \"add\", path: \"/metadata/labels/\" + jsonpatch.escapeKey({label}.key), "
        f"value: {label}.value}}] : "
        f"[JSONPatch{{op: \"add\", path: \"/metadata/labels\", value: {{ {label}.key: {label}.value }}}}])"
    )
    spec: dict[str, Any] = {
        "matchConstraints": {
            "matchPolicy": "Equivalent",
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                               "resources": ["pods"], "scope": "Namespaced"}],
        },
        "matchConditions": [
            *exemption_conditions(CODE, NAME, cel("exempt-namespaces"), cel("exempt-users"), cel("exempt-groups")),
            {"name": "not-opted-out",
             "expression": f"!(has({annotations}) && {opt_out} in {annotations} && "
                           f"{annotations}[{opt_out}] == {literal(rule.OPT_OUT_VALUE)})"},
            {"name": "gate-missing",
             "expression": "!(has(object.spec.readinessGates) && object.spec.readinessGates.exists(g, "
                           f"has(g.conditionType) && g.conditionType == {condition_type}))"},
        ],
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
        "reinvocationPolicy": "IfNeeded",
    }
    return [Policy("MutatingAdmissionPolicy", f"{CODE.lower()}-{NAME}", spec)]


EXACTNESS = "exact"
NOTES = (
    "Pods created without the gate get {conditionType: <condition-type>} appended to spec.readinessGates "
    "(the list added whole when absent) and the injected label, exactly as the webhook patches them; "
    "pods that have a gate of that type, or opt out with the annotation, are left alone, so a "
    "reinvocation (another mutating policy or webhook changing the pod) adds nothing.",
    "Never on UPDATE, on subresources or on workload templates (the policy matches pods CREATE only).",
    "The webhook's patch is routine and carries no warning; neither does the policy.",
)
