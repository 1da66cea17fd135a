"""The readiness-gate condition of a pod: reading it, and the patches that write it (pure).

The webhook's FW402 injects `spec.readinessGates: [{conditionType: T}]`; nobody but
fieldwarden writes condition T (the kubelet only reads it to compute `Ready`). Its
states, as the controller and `fieldwarden set-image` use them:

- absent: a new pod; the controller sets it "True" (reason `PodInitialized`);
- "False": an in-place update holds the pod out of its Services (reason `InPlaceUpdate`
  while it runs, `InPlaceUpdateFailed` when it failed or timed out); nobody but the next
  update sets it "True" again;
- "True": serving (reason `InPlaceUpdateDone` after an update, `InPlaceUpdateRefused`
  when the API server refused the image patch, so that nothing changed).

Condition patches are strategic-merge patches of `status.conditions`, merged by `type`,
so no other condition (`Ready`, `ContainersReady`: the kubelet's) is written. They carry
`metadata.resourceVersion`, which the API server treats as a precondition: a pod that
changed since it was read (an update set the condition meanwhile) answers 409 Conflict
instead of being overwritten.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from ...policies.rules._readiness_gate import has_readiness_gate, pod_condition

TRUE = "True"
FALSE = "False"
REASON_NEW_POD = "PodInitialized"
REASON_UPDATING = "InPlaceUpdate"
REASON_UPDATED = "InPlaceUpdateDone"
REASON_FAILED = "InPlaceUpdateFailed"
REASON_REFUSED = "InPlaceUpdateRefused"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
_FINISHED_PHASES = ("Succeeded", "Failed")


def now_text(moment: datetime | None = None) -> str:
    """A Kubernetes Time (RFC 3339, seconds, UTC): what lastTransitionTime holds."""
    moment = moment or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


has_gate = has_readiness_gate  # whether spec.readinessGates name the type
condition = pod_condition  # the status condition of the type, or None


def needs_marking(pod: Mapping[str, Any], condition_type: str) -> bool:
    """Whether the controller should set the gate "True": a gated pod that never had the condition.

    Not a pod being deleted or finished; not one whose condition exists in any state
    ("False" is an update's hold, kept until that update says otherwise).
    """
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("deletionTimestamp"):
        return False
    status = pod.get("status")
    if isinstance(status, dict) and status.get("phase") in _FINISHED_PHASES:
        return False
    return has_gate(pod, condition_type) and condition(pod, condition_type) is None


def held(pod: Mapping[str, Any], condition_type: str) -> bool:
    """Whether an in-place update holds the pod out of its Services (condition "False")."""
    entry = condition(pod, condition_type)
    return entry is not None and entry.get("status") == FALSE


def condition_patch(
    condition_type: str, status: str, reason: str, message: str,
    resource_version: str | None = None, previous: Mapping[str, Any] | None = None,
    moment: datetime | None = None,
) -> dict[str, Any]:
    """A strategic-merge patch of pods/status that sets only this condition.

    `previous` is the condition as read: when its status stays, so does its
    lastTransitionTime (only a change of status is a transition).
    """
    transition = now_text(moment)
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        transition = str(previous["lastTransitionTime"])
    entry = {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": transition,
    }
    patch: dict[str, Any] = {"status": {"conditions": [entry]}}
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


def image_patch(images: Mapping[str, str]) -> dict[str, Any]:
    """A strategic-merge patch of a pod that changes only these containers' images (merged by name)."""
    return {"spec": {"containers": [{"name": name, "image": image} for name, image in images.items()]}}
