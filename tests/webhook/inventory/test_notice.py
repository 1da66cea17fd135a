"""What `fieldwarden serve` says about its autoscaler inventory: a cluster's count only once it was listed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fieldwarden.webhook.inventory.notice import FirstSyncNotice, summary
from fieldwarden.webhook.inventory.sources import StaticInventory
from tests.webhook.fake_apiserver import HPA, VPA, FakeApiServer
from tests.webhook.inventory.test_cluster import hpa, make, running, vpa
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.live import Server
from tests.webhook.waiting import eventually

INVENTORY_LINE = "fieldwarden: autoscaler inventory: "


def test_summary() -> None:
    assert summary(StaticInventory((), source="empty")) == "empty (0 autoscalers)"
    with FakeApiServer(vpa_crd=False) as api:
        api.apply(hpa("web", "web"))
        inventory = make(api)
        assert summary(inventory) == "cluster (listing...)"
        inventory.start()
        try:
            eventually(inventory.ready, "first sync")
            assert summary(inventory) == "cluster (1 autoscalers; no VPA CRD)"
        finally:
            inventory.stop()


def notice_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "fieldwarden-inventory-notice")


def test_the_count_is_said_once_when_the_first_list_is_done() -> None:
    said: list[str] = []
    notice = FirstSyncNotice(said.append, poll_seconds=0.02)
    with FakeApiServer() as api:
        api.apply(hpa("web", "web"))
        api.apply(vpa("web", "web"))
        api.hold_lists()  # a slow API server
        with running(api) as first, running(api) as second:  # two workers, one notice
            notice.watch(first)
            notice.watch(second)
            eventually(lambda: api.lists_waiting == 4, "both inventories' lists wait")
            time.sleep(0.2)  # some ten polls each
            assert said == [] and notice_threads() == 2  # both still waiting, neither has spoken
            api.hold_lists(False)
            eventually(lambda: first.ready() and second.ready(), "both listed")
            eventually(lambda: notice_threads() == 0, "both notice threads done")  # nothing can be said after
            assert said == ["cluster (2 autoscalers)"]
        notice.close()


def test_serve_starts_before_the_first_list_and_says_the_count_after_it(tmp_path: Path) -> None:
    with FakeApiServer() as api:
        api.apply(hpa("web", "web"))
        api.apply(vpa("api", "api"))
        api.hold_lists()  # the cluster is slow: serve must not wait for it
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
        server = Server(["--kubeconfig", str(kubeconfig), "--cert-dir", str(tmp_path / "tls")], tmp_path)
        try:
            eventually(lambda: api.lists_waiting == 4, "both workers' lists wait", timeout=10)
            client = server.client()
            try:
                assert client.request("GET", "/healthz").status == 200  # serving
                assert client.request("GET", "/readyz").status == 503  # not listed yet
            finally:
                client.close()
            lines = [line for line in server.stdout().splitlines() if line.startswith(INVENTORY_LINE)]
            assert lines == [INVENTORY_LINE + "cluster (listing...)"]
            api.hold_lists(False)
            eventually(lambda: api.list_calls(HPA) == 2 and api.list_calls(VPA) == 2, "both workers listed", timeout=10)
            eventually(lambda: INVENTORY_LINE + "cluster (2 autoscalers)" in server.stdout(), "the count said")
            time.sleep(0.5)  # (the other worker's notice would come by now)
            lines = [line for line in server.stdout().splitlines() if line.startswith(INVENTORY_LINE)]
            assert lines == [INVENTORY_LINE + "cluster (listing...)", INVENTORY_LINE + "cluster (2 autoscalers)"]
        finally:
            api.hold_lists(False)
            assert server.stop() == 0, server.stderr()
