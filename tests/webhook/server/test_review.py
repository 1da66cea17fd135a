"""Reading AdmissionReviews: the real ones parse; anything else is a 4xx saying why."""

from __future__ import annotations

from typing import Any

import pytest

from fieldwarden.webhook.server.review import MAX_DEPTH, BadRequest, parse_review
from tests.webhook.samples import FIXTURES, JSON, edit, encode, review

SAMPLES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def bad(body: bytes, content_type: str = JSON, max_bytes: int = 8 << 20) -> BadRequest:
    with pytest.raises(BadRequest) as caught:
        parse_review(body, content_type, max_bytes)
    return caught.value


@pytest.mark.parametrize("name", SAMPLES)
def test_every_captured_review_parses(name: str) -> None:
    data = review(name)
    parsed = parse_review(encode(data), JSON)
    assert parsed.api_version == "admission.k8s.io/v1"
    request = parsed.request
    assert request.uid == data["request"]["uid"]
    assert request.object == data["request"]["object"]
    assert request.old_object == data["request"]["oldObject"]
    assert request.username == "cluster-admin" and "system:masters" in request.groups


def test_fields_the_rules_read() -> None:
    create = parse_review(encode(review("pod-create-generatename")), JSON).request
    assert (create.operation, create.group, create.version, create.kind) == ("CREATE", "", "v1", "Pod")
    assert (create.resource, create.sub_resource, create.namespace, create.name) == ("pods", "", "default", "")
    assert create.old_object is None and not create.dry_run
    scale = parse_review(encode(review("deployment-scale-subresource")), JSON).request
    assert (scale.group, scale.kind, scale.resource, scale.sub_resource) == ("autoscaling", "Scale", "deployments", "scale")
    assert parse_review(encode(review("deployment-update-dryrun")), JSON).request.dry_run
    delete = parse_review(encode(review("pod-delete")), JSON).request
    assert delete.object is None and delete.old_object is not None


@pytest.mark.parametrize("content_type", ["Application/JSON; charset=utf-8", "application/json;charset=UTF-8",
                                          " application/json ; foo=bar"])
def test_content_type_parameters_are_accepted(content_type: str) -> None:
    body = encode(review("pod-create"))
    parsed = parse_review(body, content_type)
    assert parsed == parse_review(body, JSON)  # the same review as with the bare media type
    assert parsed.request.uid == review("pod-create")["request"]["uid"]
    assert bad(body, "application/jsonl; charset=utf-8").status == 415  # the control: the media type still counts


@pytest.mark.parametrize("content_type", ["", "text/plain", "application/yaml", "application/x-www-form-urlencoded"])
def test_other_content_types_are_415(content_type: str) -> None:
    assert bad(encode(review("pod-create")), content_type).status == 415


def test_body_over_the_limit_is_413() -> None:
    body = encode(review("pod-create"))
    assert bad(body, max_bytes=len(body) - 1).status == 413
    parse_review(body, JSON, max_bytes=len(body))


@pytest.mark.parametrize(
    "body",
    [b"", b"{", b"not json", b"\xff\xfe\x00garbage", b'{"kind": NaN}', b"[" * 100_000 + b"]" * 100_000],
    ids=["empty", "truncated", "text", "bytes", "nan", "deep"],
)
def test_not_json_is_400(body: bytes) -> None:
    error = bad(body)
    assert error.status == 400 and "JSON" in error.message


@pytest.mark.parametrize("body", [b"[]", b"null", b"3", b'"AdmissionReview"'])
def test_not_an_object_is_400(body: bytes) -> None:
    assert "JSON object" in bad(body).message


def test_v1beta1_is_refused_naming_what_is_supported() -> None:
    data = review("pod-create")
    data["apiVersion"] = "admission.k8s.io/v1beta1"
    error = bad(encode(data))
    assert error.status == 400
    assert "admission.k8s.io/v1beta1" in error.message and "supported: admission.k8s.io/v1" in error.message


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(kind="AdmissionRequest"),
        lambda d: d.pop("kind"),
        lambda d: d.pop("apiVersion"),
        lambda d: d.update(apiVersion="v1"),
        lambda d: d.pop("request"),
        lambda d: d.update(request=None),
        lambda d: d.update(request=[]),
    ],
    ids=["kind", "no-kind", "no-apiVersion", "apiVersion", "no-request", "null-request", "list-request"],
)
def test_wrong_envelope_is_400(change: Any) -> None:
    data = review("pod-create")
    change(data)
    assert bad(encode(data)).status == 400


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda r: r.pop("uid"), "request.uid"),
        (lambda r: r.update(uid=""), "request.uid"),
        (lambda r: r.update(uid=7), "request.uid"),
        (lambda r: r.update(object=[]), "request.object"),
        (lambda r: r.update(object="pod"), "request.object"),
        (lambda r: r.update(oldObject=[1]), "request.oldObject"),
        (lambda r: r.pop("kind"), "request.kind"),
        (lambda r: r.pop("operation"), "request.operation"),
        (lambda r: r.update(namespace=3), "request.namespace"),
        (lambda r: r.update(dryRun="yes"), "request.dryRun"),
        (lambda r: r["userInfo"].update(groups="system:masters"), "request.userInfo.groups"),
    ],
    ids=["no-uid", "empty-uid", "number-uid", "list-object", "string-object", "list-oldObject", "no-kind",
         "no-operation", "namespace", "dryRun", "groups"],
)
def test_malformed_request_is_400_naming_the_field(change: Any, says: str) -> None:
    error = bad(encode(edit(review("pod-update-label"), change)))
    assert error.status == 400 and says in error.message


def test_optional_fields_may_be_absent_or_null() -> None:
    def strip(request: dict[str, Any]) -> None:
        for key in ("name", "subResource", "dryRun", "userInfo", "oldObject", "options"):
            request.pop(key, None)
        request["namespace"] = None

    parsed = parse_review(encode(edit(review("pod-create"), strip)), JSON).request
    assert (parsed.name, parsed.namespace, parsed.username, parsed.groups, parsed.dry_run) == ("", "", "", (), False)


def test_nesting_deeper_than_orjson_allows_is_400_saying_so() -> None:
    def deep(levels: int) -> bytes:
        text = encode(review("pod-update-label")).decode()
        marker = '"@deep@"'
        text = text.replace('"spec": {', '"spec": {"x": ' + marker + ", ", 1)
        return text.replace(marker, "[" * levels + "1" + "]" * levels).encode()

    # review, request, object, spec: the deepest value the field may hold is 1020 lists
    parsed = parse_review(deep(MAX_DEPTH - 4), JSON)
    assert parsed.request.object is not None and "x" in parsed.request.object["spec"]
    error = bad(deep(MAX_DEPTH - 3))
    assert error.status == 400
    assert error.message.startswith(f"body nests JSON deeper than {MAX_DEPTH} levels (line 1 column ")
