"""The AdmissionReview response, built by one pure function, and the JSON error body.

Two error channels: a policy denial is HTTP 200 with `allowed: false` and a `status`;
a request that is not a usable AdmissionReview is an HTTP 4xx with `error_body`.

Warnings travel back to the user as HTTP `Warning` headers: the API server may cut ones
longer than 256 characters and drop some of many, so they are kept short and few here,
printable, and the cut is marked.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Sequence

import orjson

from .patch import Operation
from .review import KIND

MAX_WARNING_LENGTH = 256
MAX_WARNINGS = 12
MAX_MESSAGE_LENGTH = 16 * 1024
DENIED = 403
# The fallback for what orjson refuses (integers beyond 64 bits): compact UTF-8 JSON too.
_PATCH_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def rule_message(code: str, name: str, message: str) -> str:
    """`[FW401 pod-update-not-image-only] message`: every denial and warning names its rule."""
    return f"[{code} {name}] {message}"


def build_response(
    uid: str,
    api_version: str,
    allowed: bool,
    *,
    patch: Sequence[Operation] = (),
    warnings: Sequence[str] = (),
    message: str = "",
    code: int = DENIED,
) -> dict[str, Any]:
    """The AdmissionReview answering request `uid`.

    `patch` is sent (base64 JSON, patchType JSONPatch) only on an allowed response with
    operations in it; `message` and `code` become the `status` of a denial.
    """
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if allowed and patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(_patch_bytes(patch)).decode("ascii")
    if not allowed:
        response["status"] = {"code": code, "message": _cut(_printable(message), MAX_MESSAGE_LENGTH)}
    shown = _warnings(warnings)
    if shown:
        response["warnings"] = shown
    return {"apiVersion": api_version, "kind": KIND, "response": response}


def _patch_bytes(patch: Sequence[Operation]) -> bytes:
    try:
        return orjson.dumps(list(patch))
    except TypeError:
        return _PATCH_ENCODER.encode(list(patch)).encode("utf-8")


def error_body(status: int, message: str) -> dict[str, Any]:
    """A JSON body for an HTTP error, shaped like a Kubernetes Status."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": status,
        "reason": _REASONS.get(status, "BadRequest" if status < 500 else "InternalError"),
        "message": _cut(_printable(message), MAX_MESSAGE_LENGTH),
    }


_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "Timeout",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    500: "InternalError",
}


def _warnings(warnings: Sequence[str]) -> list[str]:
    shown = [_cut(_printable(w), MAX_WARNING_LENGTH) for w in warnings if w]
    if len(shown) > MAX_WARNINGS:
        left_out = len(shown) - (MAX_WARNINGS - 1)
        shown = shown[: MAX_WARNINGS - 1] + [f"... and {left_out} more warnings (see the webhook's log)"]
    return shown


def _printable(text: str) -> str:
    """Control characters (newlines included) become spaces: warnings become HTTP headers."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
