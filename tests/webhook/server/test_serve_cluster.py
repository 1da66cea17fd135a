"""The real `fieldwarden serve` (gunicorn's gevent workers) watching a cluster: the API test fake over HTTPS.

The inventory's watches run inside gevent-patched workers, over TLS as with every real API
server (a client library that took `ssl.SSLContext` before gevent patched it fails every
HTTPS connection with RecursionError: plain HTTP would hide that). An HPA created while the
server runs is honoured by FW403 in every worker, and one deleted stops being honoured. Every
worker's inventory gauges follow its inventory (first list, a relist pending after an API server
restart, the relist done) without waiting for a request or a scrape to reach that worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from fieldwarden.webhook.server.certs import ensure_certificates
from tests.webhook.fake_apiserver import HPA, VPA, FakeApiServer
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.live import Server, clean_environment
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



def pod_gauges(folder: Path) -> tuple[float | None, float | None]:
    """(ready, stale) of the pod's inventory as the workers last wrote them (their metric files,
    read as a scrape reads them, but without a scrape: that would make the worker answering it
    write its own first)."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(next(folder.glob("fieldwarden-metrics-*"))))  # type: ignore[no-untyped-call]
    return (registry.get_sample_value("fieldwarden_inventory_ready", {"source": "cluster"}),
            registry.get_sample_value("fieldwarden_inventory_stale", {"source": "cluster"}))


def test_every_worker_writes_its_inventory_gauges_when_its_inventory_changes(tmp_path: Path) -> None:
    api_tls = ensure_certificates(tmp_path / "api-tls")
    assert api_tls.ca is not None
    env = clean_environment(tmp_path)
    env["TMPDIR"] = str(tmp_path / "tmp")  # where serve makes its metrics folder
    (tmp_path / "tmp").mkdir()
    with FakeApiServer(tls=(str(api_tls.cert), str(api_tls.key))) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, ca=api_tls.ca)
        server = Server(["--kubeconfig", str(kubeconfig), "--cert-dir", str(tmp_path / "tls"), "--workers", "2"],
                        tmp_path, env=env)
        try:  # No request reaches a worker here: what the gauges say, the workers wrote by themselves.
            eventually(lambda: api.list_calls(HPA) == 2 and api.list_calls(VPA) == 2, "both workers listed",
                       timeout=10)
            eventually(lambda: pod_gauges(tmp_path / "tmp") == (1, 0), "the pod's inventory ready and fresh",
                       timeout=2)
            api.hold_lists()  # the restarted API server lists slowly: the relists stay pending
            api.crash()
            api.restart()
            eventually(lambda: api.lists_waiting == 4, "both workers waiting for their relists", timeout=5)
            eventually(lambda: pod_gauges(tmp_path / "tmp") == (1, 1), "the pod's inventory stale", timeout=2)
            api.hold_lists(False)
            eventually(lambda: pod_gauges(tmp_path / "tmp") == (1, 0), "the pod's inventory fresh again",
                       timeout=2)
            assert api.list_calls(HPA) == 4 and api.list_calls(VPA) == 4
        finally:
            assert server.stop() == 0, server.stderr()
