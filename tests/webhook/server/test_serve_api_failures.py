"""The real `fieldwarden serve` when the API server fails a worker's request: the API test fake fails it once.

A worker whose first list of HPAs is answered 500 logs it, lists again after its backoff and then
honours the HPA like the other worker; admission is answered throughout and nothing crashes.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fieldwarden.webhook.server.certs import ensure_certificates
from tests.webhook.fake_apiserver import HPA, FakeApiServer
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.live import Server
from tests.webhook.samples import FIXTURES, review
from tests.webhook.server.test_serve_cluster import replicas_after_update
from tests.webhook.waiting import eventually

HPA_LIST = "/apis/autoscaling/v2/horizontalpodautoscalers"


def test_a_worker_whose_hpa_list_fails_with_500_lists_again_and_honours_the_hpa(tmp_path: Path) -> None:
    data = review("deployment-update-apply")
    live = data["request"]["oldObject"]["spec"]["replicas"]
    api_tls = ensure_certificates(tmp_path / "api-tls")
    assert api_tls.ca is not None
    with FakeApiServer(tls=(str(api_tls.cert), str(api_tls.key))) as api:
        api.apply(yaml.safe_load((FIXTURES / "hpa-web.yaml").read_text()))  # there before the workers start
        api.fail_once("GET", HPA_LIST, 500)  # the first worker to list gets it
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, ca=api_tls.ca)
        server = Server(["--kubeconfig", str(kubeconfig), "--cert-dir", str(tmp_path / "tls"), "--workers", "2"],
                        tmp_path)
        try:
            eventually(lambda: api.list_calls(HPA) == 2, "both workers listed (200)", timeout=10)
            lists = [c.status for c in api.calls if c.path == HPA_LIST and not c.watch]
            assert lists[0] == 500 and lists[1:] == [200, 200] and api.failures_pending == []
            eventually(lambda: replicas_after_update(server) == {live}, "both workers honour the HPA", timeout=10)
        finally:
            assert server.stop() == 0, server.stderr()
        logged = server.stderr()
        assert "Traceback" not in logged
        assert logged.count("inventory: hpa: API error 500 Internal Server Error (failure 1; retrying within") == 1
        assert logged.count("inventory: hpa: the API server answers again (after 1 failed attempts)") == 1
