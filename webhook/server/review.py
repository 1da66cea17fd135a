"""Reading an AdmissionReview: request bytes -> a checked AdmissionRequest, or a BadRequest.

Only `admission.k8s.io/v1` is spoken (the API server sends the first version in the
webhook configuration's `admissionReviewVersions` that it supports; v1 is in every
supported Kubernetes release). What the API server always sends is required; fields it
may leave out (`name` with generateName, `subResource`, `dryRun`, `userInfo.groups`)
default to empty. A body that is not what a kube-apiserver sends is refused with a 4xx
before any rule sees it; so is JSON nested deeper than orjson's 1024 levels (a 400 that
says so). Within that bound the rules and the patch diff compare without recursion, so
a deeply nested object is judged like any other, not skipped.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, NamedTuple

import orjson

from ...policies.admission import AdmissionRequest
from ...policies.config import DEFAULT_MAX_REQUEST_BYTES

API_VERSION = "admission.k8s.io/v1"
SUPPORTED_API_VERSIONS = (API_VERSION,)
KIND = "AdmissionReview"
MAX_DEPTH = 1024  # orjson's nesting limit: arrays and objects, the review's own envelope included


class BadRequest(Exception):
    """A request the webhook cannot answer as an AdmissionReview (HTTP 4xx)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Review(NamedTuple):
    """A checked AdmissionReview: the version to answer in and the request."""

    api_version: str
    request: AdmissionRequest


def parse_review(body: bytes, content_type: str, max_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> Review:
    """Check and read an AdmissionReview body; raise BadRequest saying what is wrong."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        shown = media_type or "none"
        raise BadRequest(415, f"content type must be application/json (got {shown})")
    if len(body) > max_bytes:
        raise BadRequest(413, f"request body of {len(body)} bytes is over the limit of {max_bytes}")
    review = _load_json(body)
    if not isinstance(review, dict):
        raise BadRequest(400, f"an AdmissionReview must be a JSON object, not {_json_type(review)}")
    api_version = review.get("apiVersion")
    if review.get("kind") != KIND:
        raise BadRequest(400, f"kind must be {KIND} (got {_shown(review.get('kind'))})")
    if api_version not in SUPPORTED_API_VERSIONS:
        raise BadRequest(
            400,
            f"apiVersion {_shown(api_version)} is not supported; supported: {', '.join(SUPPORTED_API_VERSIONS)} "
            "(set admissionReviewVersions: [v1] in the webhook configuration)",
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadRequest(400, "request is missing or not an object")
    return Review(api_version, _request(request))


def _load_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)  # strict JSON: no NaN/Infinity, UTF-8 only, depth-limited
    except orjson.JSONDecodeError as exc:
        # orjson's words: "depth limit exceeded" now, "array and object recursion depth exceeded" up to 3.11 at least
        if exc.msg.startswith(("depth limit", "array and object recursion depth")):
            where = f"line {exc.lineno} column {exc.colno}"
            raise BadRequest(400, f"body nests JSON deeper than {MAX_DEPTH} levels ({where})") from None
        raise BadRequest(400, f"body is not valid JSON: {exc}") from None


def _request(request: Mapping[str, Any]) -> AdmissionRequest:
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadRequest(400, "request.uid is missing or not a non-empty string")
    kind = _mapping(request, "kind", required=True)
    resource = _mapping(request, "resource", required=True)
    user = _mapping(request, "userInfo", required=False)
    groups = user.get("groups")
    if groups is None:
        groups = []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise BadRequest(400, "request.userInfo.groups must be a list of strings")
    dry_run = request.get("dryRun", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        raise BadRequest(400, "request.dryRun must be true or false")
    # The checks in the order of the fields: the first bad one is the one reported.
    operation = _string(request, "operation", "request.operation", required=True)
    group = _string(kind, "group", "request.kind.group")
    version = _string(kind, "version", "request.kind.version", required=True)
    kind_name = _string(kind, "kind", "request.kind.kind", required=True)
    resource_name = _string(resource, "resource", "request.resource.resource", required=True)
    sub_resource = _string(request, "subResource", "request.subResource")
    namespace = _string(request, "namespace", "request.namespace")
    name = _string(request, "name", "request.name")
    obj = request.get("object")
    if obj is not None and type(obj) is not dict:
        obj = _object(request, "object")
    old_obj = request.get("oldObject")
    if old_obj is not None and type(old_obj) is not dict:
        old_obj = _object(request, "oldObject")
    username = _string(user, "username", "request.userInfo.username")
    # (positional, in the order of AdmissionRequest's fields: keywords cost more)
    return AdmissionRequest(
        uid, operation, group, version, kind_name, resource_name, sub_resource, namespace, name,
        obj, old_obj, dry_run, username, tuple(groups),
    )


def _mapping(parent: Mapping[str, Any], key: str, required: bool) -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(400, f"request.{key} is missing or not an object")
    return value


def _string(parent: Mapping[str, Any], key: str, where: str, required: bool = False) -> str:
    value = parent.get(key)
    if type(value) is str and value:  # (the common case first)
        return value
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise BadRequest(400, f"{where} is missing or not a non-empty string")
    return value


def _object(request: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = request.get(key)
    if value is not None and not isinstance(value, dict):
        raise BadRequest(400, f"request.{key} must be an object or null, not {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _shown(value: Any) -> str:
    """A value from the request, quoted and cut short for an error message."""
    text = json.dumps(value) if value is not None else "none"
    return text if len(text) <= 80 else text[:77] + "..."
