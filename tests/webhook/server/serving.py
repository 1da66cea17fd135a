"""The webhook server the tests of this folder run: its arguments, and a checked AdmissionReview POST."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.webhook.live import Client
from tests.webhook.samples import FIXTURES

MAX_REQUEST_BYTES = 1024 * 1024
CONFIG = f"webhook:\n  max-request-bytes: {MAX_REQUEST_BYTES}\n"


def server_args(folder: Path) -> list[str]:
    (folder / "hpa.yaml").write_text((FIXTURES / "hpa-web.yaml").read_text())
    (folder / "fieldwarden.yaml").write_text(CONFIG)
    return ["--cert-dir", str(folder / "tls"), "--inventory", "hpa.yaml", "--config", "fieldwarden.yaml",
            "--tls-reload-seconds", "0.2", "--workers", "2"]


def admit(client: Client, path: str, data: dict[str, Any]) -> dict[str, Any]:
    """POST an AdmissionReview; the checked response body."""
    reply = client.post(path, data)
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == "application/json"
    answer = reply.json()
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == data["request"]["uid"]
    return answer  # type: ignore[no-any-return]
