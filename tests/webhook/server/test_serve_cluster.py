"""The real `fieldwarden serve` (gunicorn's gevent workers) watching a cluster: the API test fake over HTTPS.

The inventory's watches run inside gevent-patched workers, over TLS as with every real API
server (a client library that took `ssl.SSLContext` before gevent patched it fails every
HTTPS connection with RecursionError: plain HTTP would hide that). An HPA created while the
server runs is honoured by FW403 in every worker, and one deleted stops being honoured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fieldwarden.webhook.server.certs import ensure_certificates
from tests.webhook.fake_apiserver import FakeApiServer
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.live import Server
from tests.webhook.samples import FIXTURES, patched, review
from tests.webhook.server.serving import admit
from tests.webhook.waiting import eventually

CONNECTIONS = 6  # fresh connections per check: the two workers both answer some of them


def replicas_after_update(server: Server) -> set[int]:
    """The replicas each of several fresh connections' answers leaves in the updated Deployment."""
    data = review("deployment-update-apply")
    found = set()
    for _ in range(CONNECTIONS):
        client = server.client()
        try:
            answer: dict[str, Any] = admit(client, "/mutate", data)
        finally:
            client.close()
        found.add(patched(data, answer)["spec"]["replicas"])
    return found


def test_an_hpa_created_while_serving_is_honoured_by_every_worker(tmp_path: Path) -> None:
    data = review("deployment-update-apply")
    live, sent = data["request"]["oldObject"]["spec"]["replicas"], data["request"]["object"]["spec"]["replicas"]
    assert live != sent
    hpa = yaml.safe_load((FIXTURES / "hpa-web.yaml").read_text())
    api_tls = ensure_certificates(tmp_path / "api-tls")
    assert api_tls.ca is not None
    with FakeApiServer(tls=(str(api_tls.cert), str(api_tls.key))) as api:
        assert api.url.startswith("https://")
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, ca=api_tls.ca)
        server = Server(["--kubeconfig", str(kubeconfig), "--cert-dir", str(tmp_path / "tls"), "--workers", "2"],
                        tmp_path)
        try:
            client = server.client()
            try:
                eventually(lambda: client.request("GET", "/readyz").status == 200, "listed", timeout=10)
            finally:
                client.close()
            assert replicas_after_update(server) == {sent}  # no autoscaler yet: the manifest's value
            api.apply(hpa)
            eventually(lambda: replicas_after_update(server) == {live}, "the HPA honoured", timeout=10)
            api.delete("HorizontalPodAutoscaler", "default", "web")
            eventually(lambda: replicas_after_update(server) == {sent}, "the HPA forgotten", timeout=10)
        finally:
            assert server.stop() == 0, server.stderr()
        assert "Traceback" not in server.stderr() and "RecursionError" not in server.stderr()
