"""The readiness-gate condition FW401, FW402 and the webhook's controller share; not a rule module.

FW402 injects `spec.readinessGates: [{conditionType: T}]` into new pods; FW401's
stricter mode lets an image change through only while the pod's condition T is
"False". Both rules default T to OpenKruise's `InPlaceUpdateReady` and validate it
the way the API server validates a readiness gate's conditionType (a qualified name).
"""

from __future__ import annotations

from typing import Any, Mapping

DEFAULT_CONDITION_TYPE = "InPlaceUpdateReady"

# A Kubernetes qualified name: optional DNS-subdomain prefix and "/", then a name part.
_QUALIFIED_NAME = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)

CONDITION_TYPE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": _QUALIFIED_NAME,
    "maxLength": 316,
}


def has_readiness_gate(pod: Mapping[str, Any], condition_type: str) -> bool:
    """Whether the pod's spec.readinessGates name `condition_type`."""
    spec = pod.get("spec")
    gates = spec.get("readinessGates") if isinstance(spec, dict) else None
    return isinstance(gates, list) and any(
        isinstance(gate, dict) and gate.get("conditionType") == condition_type for gate in gates
    )


def pod_condition(pod: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    """The pod's status condition of that type, if it has one."""
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for entry in conditions if isinstance(conditions, list) else ():
        if isinstance(entry, dict) and entry.get("type") == condition_type:
            return entry
    return None
