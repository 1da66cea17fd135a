"""The real AdmissionReviews in tests/fixtures/admission/ and variants derived from them."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any, Callable

import jsonpatch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "admission"
JSON = "application/json"


def review(name: str) -> dict[str, Any]:
    """A captured AdmissionReview (a fresh copy each time)."""
    return json.loads((FIXTURES / f"{name}.json").read_text())


def edit(data: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """A copy of an AdmissionReview with `change` applied to its `request`."""
    changed = copy.deepcopy(data)
    change(changed["request"])
    return changed


def encode(data: Any) -> bytes:
    return json.dumps(data).encode()


def patched(data: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The request's object after the response's patch (the object itself without one)."""
    obj = data["request"]["object"]
    response = answer["response"]
    if "patch" not in response:
        return copy.deepcopy(obj)
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    return jsonpatch.apply_patch(obj, ops)  # type: ignore[no-any-return]


def patch_ops(answer: dict[str, Any]) -> list[dict[str, Any]]:
    response = answer["response"]
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
