"""The readiness-gate condition FW401 and FW402 share; not a rule module itself.

FW402 injects `spec.readinessGates: [{conditionType: T}]` into new pods; FW401's
stricter mode lets an image change through only while the pod's condition T is
"False". Both rules default T to OpenKruise's `InPlaceUpdateReady` and validate it
the way the API server validates a readiness gate's conditionType (a qualified name).
"""

from __future__ import annotations

from typing import Any

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
