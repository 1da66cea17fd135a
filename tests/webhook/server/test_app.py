"""The Flask app through its test client (the real HTTPS server is tested in test_serve*)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from fieldwarden.policies.config import Settings
from fieldwarden.webhook.server import app as app_module
from fieldwarden.webhook.server.app import create_app
from fieldwarden.webhook.inventory.sources import StaticInventory
from tests.webhook.exposition import value
from tests.webhook.samples import JSON, encode, patched, review


def make(inventory: StaticInventory | None = None, **config: Any) -> FlaskClient:
    app: Flask = create_app(Settings(config), inventory or StaticInventory())
    return app.test_client()


@pytest.fixture
def client() -> FlaskClient:
    return make()


def test_validate_answers_an_admission_review(client: FlaskClient) -> None:
    data = review("pod-update-set-image")
    reply = client.post("/validate", data=encode(data), content_type=JSON)
    assert reply.status_code == 200 and reply.mimetype == "application/json"
    assert reply.get_json() == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": data["request"]["uid"], "allowed": True},
    }


def test_mutate_answers_with_a_patch_that_applies(client: FlaskClient) -> None:
    data = review("pod-create")
    reply = client.post("/mutate", data=encode(data), content_type="application/json; charset=utf-8")
    assert reply.status_code == 200
    pod = patched(data, reply.get_json())
    assert pod["spec"]["readinessGates"] == [{"conditionType": "InPlaceUpdateReady"}]


def test_health_and_readiness() -> None:
    ready = make()
    assert ready.get("/healthz").status_code == 200
    assert ready.head("/healthz").status_code == 200
    assert ready.get("/readyz").status_code == 200
    waiting = make(StaticInventory(ready=False))
    assert waiting.get("/healthz").status_code == 200
    reply = waiting.get("/readyz")
    assert reply.status_code == 503 and reply.get_json()["inventory"]["source"] == "static"


def test_metrics_count_requests_and_describe_the_inventory() -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5},
    }
    client = make(StaticInventory([hpa]))
    client.post("/mutate", data=encode(review("deployment-update-apply")), content_type=JSON)
    reply = client.get("/metrics")
    assert reply.status_code == 200 and reply.content_type.startswith("text/plain; version=0.0.4")
    text = reply.get_data(as_text=True)
    assert value(text, "fieldwarden_admission_requests_total",
                 endpoint="mutate", operation="UPDATE", kind="Deployment", decision="patched") >= 1
    assert value(text, "fieldwarden_admission_duration_seconds_count", endpoint="mutate") >= 1
    assert value(text, "fieldwarden_admission_duration_seconds_bucket", endpoint="mutate", le="+Inf") >= 1
    assert value(text, "fieldwarden_inventory_autoscalers", source="static") == 1
    assert value(text, "fieldwarden_inventory_ready", source="static") == 1
    assert "# TYPE fieldwarden_admission_duration_seconds histogram" in text


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"not json", JSON, 400),
        (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": {}}', JSON, 400),
        (b"{}", "text/plain", 415),
        (b"", "", 415),
    ],
    ids=["not-json", "v1beta1", "text", "nothing"],
)
def test_bad_requests_get_json_4xx(client: FlaskClient, body: bytes, content_type: str, status: int) -> None:
    reply = client.post("/validate", data=body, content_type=content_type)
    assert reply.status_code == status and reply.mimetype == "application/json"
    assert reply.get_json()["code"] == status and reply.get_json()["kind"] == "Status"


def test_a_body_over_the_limit_is_413_before_it_is_read() -> None:
    client = make(webhook={"max-request-bytes": 65536})
    reply = client.post("/mutate", data=b"{" + b" " * 70_000 + b"}", content_type=JSON)
    assert reply.status_code == 413 and reply.get_json()["reason"] == "RequestEntityTooLarge"


def test_unknown_paths_and_methods_are_json(client: FlaskClient) -> None:
    assert client.get("/mutate").status_code == 405
    reply = client.get("/nowhere")
    assert reply.status_code == 404 and reply.get_json()["reason"] == "NotFound"


def test_an_unexpected_error_is_a_json_500_without_internals(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("secret detail in /work/main/webhook/handlers.py")

    monkeypatch.setattr(app_module, "admit", broken)
    client = make()
    reply = client.post("/validate", data=encode(review("pod-create")), content_type=JSON)
    assert reply.status_code == 500
    body = reply.get_json()
    assert body["message"] == "internal error" and "secret" not in json.dumps(body)
    assert b"Traceback" not in reply.get_data()
