"""build_response: the AdmissionReview answer, and the JSON error body."""

from __future__ import annotations

import base64
import copy
import json

import jsonpatch

from fieldwarden.webhook.server.patch import diff
from fieldwarden.webhook.server.response import MAX_WARNING_LENGTH, MAX_WARNINGS, build_response, error_body, rule_message
from tests.webhook.samples import review

UID = "84462173-7f2d-44a3-9ad1-a0f27d642311"
V1 = "admission.k8s.io/v1"


def test_allowed_without_changes_has_no_patch() -> None:
    answer = build_response(UID, V1, True)
    assert answer == {"apiVersion": V1, "kind": "AdmissionReview", "response": {"uid": UID, "allowed": True}}


def test_patch_is_base64_json_patch_that_applies() -> None:
    pod = review("pod-create")["request"]["object"]
    target = copy.deepcopy(pod)
    target["spec"]["readinessGates"] = [{"conditionType": "InPlaceUpdateReady"}]
    target["metadata"]["labels"]["fieldwarden.io/readiness-gate"] = "injected"
    response = build_response(UID, V1, True, patch=diff(pod, target))["response"]
    assert response["patchType"] == "JSONPatch"
    assert jsonpatch.apply_patch(pod, json.loads(base64.b64decode(response["patch"]))) == target


def test_a_patch_with_non_ascii_text_and_integers_beyond_64_bits_still_encodes() -> None:
    ops = [{"op": "add", "path": "/metadata/annotations/note", "value": "größe ✓"},
           {"op": "replace", "path": "/spec/big", "value": 2**70}]
    response = build_response(UID, V1, True, patch=ops)["response"]
    assert json.loads(base64.b64decode(response["patch"])) == ops
    assert "größe ✓".encode() in base64.b64decode(response["patch"])  # UTF-8, not \u escapes


def test_denial_has_a_status_and_never_a_patch() -> None:
    message = rule_message("FW401", "pod-update-not-image-only", "this one also changes spec.containers[name=c].env")
    assert message == "[FW401 pod-update-not-image-only] this one also changes spec.containers[name=c].env"
    ops = [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]
    response = build_response(UID, V1, False, patch=ops, message=message)["response"]
    assert response == {"uid": UID, "allowed": False, "status": {"code": 403, "message": message}}
    assert build_response(UID, V1, False, message="later", code=503)["response"]["status"]["code"] == 503


def test_warnings_are_short_printable_and_few() -> None:
    long = "x" * 1000
    warnings = ["first\nline", long] + [f"w{i}" for i in range(20)]
    shown = build_response(UID, V1, True, warnings=warnings)["response"]["warnings"]
    assert shown[0] == "first line"
    assert len(shown[1]) == MAX_WARNING_LENGTH and shown[1].endswith("...")
    assert len(shown) == MAX_WARNINGS and "11 more warnings" in shown[-1]
    assert "warnings" not in build_response(UID, V1, True, warnings=[""])["response"]


def test_error_body_is_a_kubernetes_status() -> None:
    body = error_body(415, "content type must be application/json (got text/plain)")
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": 415,
        "reason": "UnsupportedMediaType",
        "message": "content type must be application/json (got text/plain)",
    }
