"""ClusterInventory against the list/watch test fake (tests/webhook/fake_apiserver.py).

The inventory talks to the fake over HTTP on 127.0.0.1 through the unchanged
`kubernetes` client. Every wait polls with a deadline; nothing asserts on timing.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import kubernetes.config.kube_config
import pytest
import yaml
from kubernetes import client

from fieldwarden.policies.config import Settings
from fieldwarden.policies.model import ObjectKey
from fieldwarden.webhook.server.handlers import MUTATE, admit
from fieldwarden.webhook.inventory.cluster import Backoff, ClusterInventory, from_environment
from fieldwarden.webhook.inventory.sources import Inventory
from tests.webhook.fake_apiserver import HPA, VPA, FakeApiServer
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.samples import FIXTURES, JSON, edit, encode, patched, review
from tests.webhook.waiting import eventually

FAST = Backoff(initial=0.05, cap=0.2)
WEB = ObjectKey("apps", "Deployment", "shop", "web")
API = ObjectKey("apps", "Deployment", "shop", "api")


def hpa(name: str, target: str, max_replicas: int = 5) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
        },
    }


def vpa(name: str, target: str, mode: str = "Recreate") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}, "updatePolicy": {"updateMode": mode}},
    }



def names(found: list[Any]) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in found)


def make(api: FakeApiServer, **options: Any) -> ClusterInventory:
    settings: dict[str, Any] = {"stale_after": 30.0, "backoff": FAST, "watch_timeout": 20, "crd_retry": 0.2, "request_timeout": 5.0}
    return ClusterInventory(client.ApiClient(client.Configuration(host=api.url)), **{**settings, **options})


@contextmanager
def running(api: FakeApiServer, **options: Any) -> Iterator[ClusterInventory]:
    inventory = make(api, **options)
    inventory.start()
    try:
        yield inventory
    finally:
        inventory.stop()


def inventory_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fieldwarden-inventory-")]


def test_initial_list_fills_the_index_and_turns_ready() -> None:
    with FakeApiServer() as api:
        api.apply(hpa("web", "web"))
        api.apply(vpa("api", "api"))
        inventory = make(api)
        checked: Inventory = inventory
        assert not checked.ready() and checked.stale()
        assert inventory.describe()["age_seconds"] is None
        inventory.start()
        try:
            eventually(inventory.ready, "first sync")
            index = inventory.index()
            # HPA list items come without apiVersion/kind, as from a real API server.
            assert names(index.horizontal(WEB)) == ["web"]
            assert names(index.vertical(API)) == ["api"]
            assert index.horizontal(API) == [] and index.vertical(WEB) == []
            described = inventory.describe()
            assert described["source"] == "cluster" and described["size"] == 2
            assert isinstance(described["age_seconds"], float) and described["vpa_crd"] == "present"
            assert not inventory.stale()
            assert api.list_calls(HPA) == 1 and api.list_calls(VPA) == 1
        finally:
            inventory.stop()


def test_added_modified_deleted_events_are_reflected() -> None:
    with FakeApiServer() as api, running(api) as inventory:
        eventually(inventory.ready, "first sync")
        assert len(inventory.index()) == 0

        api.apply(hpa("web", "web"))
        api.apply(vpa("web", "web"))
        eventually(lambda: bool(inventory.index().horizontal(WEB) and inventory.index().vertical(WEB)), "ADDED")

        api.apply(hpa("web", "api"))  # retargeted
        api.apply(vpa("web", "web", mode="Off"))
        eventually(lambda: bool(inventory.index().horizontal(API)) and not inventory.index().horizontal(WEB), "HPA MODIFIED")
        eventually(lambda: inventory.index().vertical(WEB)[0]["spec"]["updatePolicy"]["updateMode"] == "Off", "VPA MODIFIED")

        api.delete("HorizontalPodAutoscaler", "shop", "web")
        api.delete("VerticalPodAutoscaler", "shop", "web")
        eventually(lambda: len(inventory.index()) == 0, "DELETED")
        assert inventory.index().horizontal(API) == [] and inventory.index().vertical(WEB) == []
        assert api.list_calls(HPA) == 1 and api.list_calls(VPA) == 1


def test_readers_never_see_an_autoscaler_missing_while_it_is_modified() -> None:
    with FakeApiServer() as api, running(api) as inventory:
        api.apply(hpa("web", "web"))
        eventually(lambda: bool(inventory.index().horizontal(WEB)), "HPA listed or ADDED")
        done = threading.Event()
        gaps: list[int] = []

        def read() -> None:
            while not done.is_set():
                if not inventory.index().horizontal(WEB):
                    gaps.append(1)

        reader = threading.Thread(target=read)
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads as often as possible: let a gap show if there is one
        reader.start()
        try:
            for replicas in range(2, 402):
                api.apply(hpa("web", "web", max_replicas=replicas))
            eventually(lambda: inventory.index().horizontal(WEB)[0]["spec"]["maxReplicas"] == 401, "last MODIFIED")
        finally:
            done.set()
            reader.join(5)
            sys.setswitchinterval(switch)
        assert gaps == []


def test_a_dropped_watch_resumes_from_the_last_resource_version_without_relisting() -> None:
    with FakeApiServer() as api, running(api) as inventory:
        eventually(inventory.ready, "first sync")
        seen = api.apply(hpa("web", "web"))["metadata"]["resourceVersion"]
        eventually(lambda: bool(inventory.index().horizontal(WEB)), "ADDED")

        api.drop_watches()
        api.apply(hpa("api", "api"))  # not sent on the cut stream: must come from the resumed one
        eventually(lambda: bool(inventory.index().horizontal(API)), "ADDED after the drop")

        assert seen in api.watch_versions(HPA)[1:]
        assert api.list_calls(HPA) == 1 and api.list_calls(VPA) == 1


def test_a_bookmark_moves_the_resume_point_past_a_compaction() -> None:
    with FakeApiServer() as api, running(api) as inventory:
        eventually(inventory.ready, "first sync")
        for number in range(3):  # VPA changes advance the shared resourceVersion; HPA watchers see none
            api.apply(vpa(f"v{number}", "web"))
        eventually(lambda: len(inventory.index().vertical(WEB)) == 3, "VPAs ADDED")
        api.bookmark()
        eventually(lambda: inventory.describe()["resource_versions"]["hpa"] == api.resource_version, "BOOKMARK")

        api.drop_watches()
        api.compact()
        eventually(lambda: len(api.watch_versions(HPA)) >= 2 and len(api.watch_versions(VPA)) >= 2, "both watches resumed")
        assert api.watch_versions(HPA)[1] == api.resource_version
        assert api.list_calls(HPA) == 1 and api.list_calls(VPA) == 1


@pytest.mark.parametrize("gone_as_http", [False, True], ids=["error-event", "http-410"])
def test_410_gone_relists(gone_as_http: bool) -> None:
    with FakeApiServer(gone_as_http=gone_as_http) as api:
        api.apply(hpa("old", "web"))
        with running(api) as inventory:
            eventually(inventory.ready, "first sync")
            listed_at = inventory.describe()["resource_versions"]["hpa"]
            api.set_unavailable(True)  # cut the watches; changes happen while the inventory is away
            api.delete("HorizontalPodAutoscaler", "shop", "old")
            api.apply(hpa("new", "api"))
            api.compact()
            api.set_unavailable(False)

            eventually(lambda: api.list_calls(HPA) == 2, "relist")
            eventually(lambda: bool(inventory.index().horizontal(API)), "new HPA after relist")
            assert inventory.index().horizontal(WEB) == []
            assert listed_at in api.watch_versions(HPA)[1:] and api.gone_answers  # it tried to resume first
            api.apply(hpa("newer", "web"))
            eventually(lambda: bool(inventory.index().horizontal(WEB)), "watching again after the relist")


def test_vpa_crd_absent_then_installed_then_removed() -> None:
    with FakeApiServer(vpa_crd=False) as api, running(api) as inventory:
        eventually(inventory.ready, "HPAs listed and VPAs found absent")
        assert inventory.describe()["vpa_crd"] == "absent"
        api.apply(hpa("web", "web"))
        eventually(lambda: bool(inventory.index().horizontal(WEB)), "HPA ADDED")

        api.install_crd()
        api.apply(vpa("web", "web"))
        eventually(lambda: bool(inventory.index().vertical(WEB)), "VPA found after the CRD appeared")
        assert inventory.describe()["vpa_crd"] == "present"

        api.remove_crd()
        eventually(lambda: inventory.describe()["vpa_crd"] == "absent", "CRD removal noticed")
        assert inventory.index().vertical(WEB) == [] and inventory.index().horizontal(WEB)
        assert inventory.ready()


def test_ready_and_stale_transitions() -> None:
    with FakeApiServer() as api, running(api, stale_after=1.5, watch_timeout=1) as inventory:
        eventually(inventory.ready, "first sync")
        assert not inventory.stale()
        # Quiet watches that time out and reconnect are activity: after more than
        # stale_after seconds of them the inventory is still fresh.
        eventually(lambda: len(api.watch_versions(HPA)) >= 3, "two watch timeouts")
        assert not inventory.stale()

        api.set_unavailable(True)
        eventually(inventory.stale, "stale while the API is unavailable")
        assert inventory.ready() and inventory.describe()["stale"]
        api.set_unavailable(False)
        eventually(lambda: not inventory.stale(), "fresh again")


def test_stop_ends_the_threads_promptly() -> None:
    with FakeApiServer() as api:
        inventory = make(api, watch_timeout=60, stale_after=120.0)
        inventory.start()
        inventory.start()  # idempotent
        eventually(inventory.ready, "first sync")
        eventually(lambda: len(api.watch_versions(HPA)) == 1 and len(api.watch_versions(VPA)) == 1, "watches open")
        assert len(inventory_threads()) == 3  # HPAs, VPAs, the VPA CRD
        inventory.stop(timeout=10)
        assert inventory_threads() == []
        inventory.stop()

        # Also from a long backoff: the wait is interrupted.
        api.set_unavailable(True)
        waiting = make(api, backoff=Backoff(initial=60.0, cap=60.0))
        waiting.start()
        eventually(lambda: api.calls[-1].status == 503, "a failed list")
        waiting.stop(timeout=10)
        assert inventory_threads() == []


def test_settings_that_would_flap_are_refused() -> None:
    with FakeApiServer() as api, pytest.raises(ValueError):
        make(api, stale_after=10.0, watch_timeout=20)


def test_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    kubeconfig = tmp_path / "kubeconfig"
    # The kubeconfig location the library read from KUBECONFIG when it was imported.
    monkeypatch.setattr(kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    assert from_environment() is None

    with FakeApiServer() as api:
        write_kubeconfig(kubeconfig, api.url)
        api.apply(hpa("web", "web"))
        for found in (from_environment(crd_retry=0.2), from_environment(kubeconfig=str(kubeconfig), context="fake")):
            assert isinstance(found, ClusterInventory)
            found.start()
            try:
                eventually(found.ready, "first sync through the kubeconfig")
                assert found.index().horizontal(WEB)
            finally:
                found.stop()


# -- an API server restart (tests/webhook/kube/test_reflector.py has the reflector's side) ---------

HPA_WEB = yaml.safe_load((FIXTURES / "hpa-web.yaml").read_text())  # scales default/web, the Deployment of:
UPDATE = review("deployment-update-apply")  # replicas 3 -> 1: FW403 puts 3 back when an HPA owns them
DENY_WHEN_STALE = Settings({"webhook": {"on-stale-inventory": "deny"}})


def fw403(inventory: ClusterInventory, settings: Settings = DENY_WHEN_STALE,
          data: dict[str, Any] = UPDATE) -> dict[str, Any]:
    """The webhook's answer to the Deployment update (`data`), decided with this inventory."""
    status, answer = admit(encode(data), JSON, MUTATE, settings, inventory)
    assert status == 200, answer
    return answer  # type: ignore[no-any-return]


def keeps_replicas(answer: dict[str, Any]) -> bool:
    return bool(answer["response"]["allowed"]) and patched(UPDATE, answer)["spec"]["replicas"] == 3


def test_an_hpa_created_right_after_an_api_server_restart_is_honoured_within_2s() -> None:
    with FakeApiServer() as api, running(api, backoff=Backoff()) as inventory:  # the default backoff
        eventually(lambda: inventory.ready() and len(api.watch_versions(HPA)) == 1, "listed and watching")
        assert not keeps_replicas(fw403(inventory))  # no HPA yet
        api.crash()
        time.sleep(3.0)  # refused meanwhile: the backoff grows to 1.5-2 s between attempts
        api.restart()
        back = time.monotonic()
        api.apply(HPA_WEB)
        eventually(lambda: api.list_calls(HPA) == 2, "the relist", timeout=1.0)
        eventually(lambda: keeps_replicas(fw403(inventory)), "FW403 keeps the replicas",
                   timeout=2.0 - (time.monotonic() - back))
        assert not inventory.stale()


def test_while_the_relist_after_a_restart_is_pending_the_inventory_is_stale() -> None:
    with FakeApiServer() as api, running(api, backoff=Backoff()) as inventory:
        api.apply(HPA_WEB)
        eventually(lambda: inventory.ready() and keeps_replicas(fw403(inventory)), "synced")
        api.hold_lists()  # the restarted server lists slowly
        api.crash()
        api.restart()
        eventually(inventory.stale, "stale once a watch expired", timeout=2.0)
        eventually(lambda: inventory.describe()["relisting"] == ["hpa", "vpa"], "both wait for their relist")
        assert inventory.describe()["stale"]
        assert inventory.ready()  # (the first sync happened: /readyz stays 200)
        denied = fw403(inventory)["response"]
        assert not denied["allowed"] and denied["status"]["code"] == 503  # on-stale-inventory: deny
        warned = fw403(inventory, Settings())  # allow: decided with the last known state, and said so
        assert keeps_replicas(warned) and any("not in sync" in w for w in warned["response"]["warnings"])
        api.hold_lists(False)
        eventually(lambda: not inventory.stale(), "fresh after the relist", timeout=2.0)
        assert inventory.describe()["relisting"] == [] and keeps_replicas(fw403(inventory))


# -- a restarted API server's 503 + Retry-After on a CRD's path (the VPAs) ----------------------

def _resources(live: str, sent: str) -> Callable[[dict[str, Any]], None]:
    def change(request: dict[str, Any]) -> None:
        for side, cpu in (("oldObject", live), ("object", sent)):
            request[side]["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return change


RESIZE = edit(UPDATE, _resources(live="250m", sent="500m"))  # FW403 keeps the live 250m when a VPA owns it
VPA_WEB = {**vpa("late", "web"), "metadata": {"name": "late", "namespace": "default"}}  # controls default/web


def keeps_cpu(answer: dict[str, Any]) -> bool:
    container = patched(RESIZE, answer)["spec"]["template"]["spec"]["containers"][0]
    return bool(answer["response"]["allowed"]) and container["resources"]["requests"]["cpu"] == "250m"


def test_a_vpa_created_right_after_a_restart_whose_crd_path_answers_503_retry_after_5_is_honoured_within_2s() -> None:
    # kube-apiserver answers a CRD's path 503 with `Retry-After: 5` until its handler is installed. The
    # client's own retries (urllib3's default) slept those 5 s inside the call: the VPAs came 5 s after the
    # HPAs, and nothing said the inventory was behind meanwhile.
    with FakeApiServer() as api, running(api, backoff=Backoff()) as inventory:  # the default backoff
        eventually(lambda: inventory.ready() and len(api.watch_versions(VPA)) == 1, "listed and watching")
        assert not keeps_cpu(fw403(inventory, data=RESIZE))  # no VPA yet
        api.crash()
        time.sleep(3.0)  # refused meanwhile: the backoff grows to 1.5-2 s between attempts
        api.restart(crd_unready=1)
        back = time.monotonic()
        api.apply(VPA_WEB)
        eventually(lambda: api.list_calls(VPA) == 2, "the VPAs relisted", timeout=1.0)
        eventually(lambda: keeps_cpu(fw403(inventory, data=RESIZE)), "FW403 keeps the VPA's cpu request",
                   timeout=2.0 - (time.monotonic() - back))
        assert [c.status for c in api.calls if c.collection == VPA and c.status == 503] == [503]  # it was told
        assert not inventory.stale()


def test_while_a_crd_path_answers_503_the_inventory_is_stale() -> None:
    # The server is up (it answers), so VPAs can change, and this worker watches none: behind, so stale
    # (on-stale-inventory decides); a refused connection is not (nothing can change with no API server).
    with FakeApiServer() as api, running(api) as inventory:
        eventually(lambda: inventory.ready() and len(api.watch_versions(VPA)) == 1, "listed and watching")
        api.crash()
        time.sleep(0.5)  # refused meanwhile, a few times
        assert not inventory.stale() and inventory.describe()["behind"] == []
        api.restart(crd_unready=20)  # FAST: 0.2 s apart at most, so some 2-4 s of 503s
        eventually(lambda: inventory.describe()["behind"] == ["vpa"], "the VPAs behind, the HPAs not", timeout=2.0)
        assert inventory.stale() and inventory.ready()
        denied = fw403(inventory, data=RESIZE)["response"]
        assert not denied["allowed"] and denied["status"]["code"] == 503  # on-stale-inventory: deny
        eventually(lambda: not inventory.stale(), "fresh once the VPAs are relisted", timeout=10.0)
        # fresh through a relist, or a watch resumed from the last resourceVersion (under load the
        # reflector may get there either way): what counts is that every 503 was seen, none waited out
        assert api.list_calls(VPA) in (1, 2) and inventory.describe()["behind"] == []
        assert sum(1 for c in api.calls if c.collection == VPA and c.status == 503) == 20
