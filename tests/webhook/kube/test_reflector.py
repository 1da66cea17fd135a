"""The reflector loop against the Kubernetes API test fake, made to behave like a restarted API server.

A restart, as the fake plays it (`crash()`, then `restart()`): connections are reset and
refused for a while, then the server listens again with a new watch cache, so every watch
resumed from a resourceVersion seen before the restart is answered 410 Gone; with
`restart(forbidden=1)` its first request is 403 Forbidden, as kube-apiserver v1.32 answered
a service account for a moment after restarting (tests/e2e/test_apiserver_restart.py: it
serves before its RBAC authorizer has synced); with `restart(crd_unready=N)` its first N
requests for VPAs are 503 with `Retry-After: 5`, as kube-apiserver v1.32 answers a CRD's path
until it is installed. Waits are bounded; the outages are fixed windows, as long as needed to
run the backoff up.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pytest
from kubernetes import client

from fieldwarden.webhook.kube.api import without_retries
from fieldwarden.webhook.kube.reflector import Backoff, Reflector
from tests.webhook.fake_apiserver import HPA, VPA, FakeApiServer
from tests.webhook.inventory.test_cluster import hpa, vpa
from tests.webhook.waiting import eventually

OUTAGE = 3.0  # seconds refused: the default backoff reaches 1.5-2 s between attempts
RELIST_WITHIN = 1.0  # after the server is back


class Recorder:
    """What the reflector hands over."""

    def __init__(self) -> None:
        self.lists: list[list[str]] = []
        self.events: list[tuple[str, str]] = []

    def replace(self, items: list[dict[str, Any]], version: str | None) -> None:
        self.lists.append(sorted(item["metadata"]["name"] for item in items))

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.append((kind, obj["metadata"]["name"]))


@contextmanager
def reflecting(api: FakeApiServer, list_call: Callable[..., Any] | None = None,
               **options: Any) -> Iterator[tuple[Reflector, Recorder]]:
    api_client = without_retries(client.ApiClient(client.Configuration(host=api.url)))  # as its owners use it
    recorder = Recorder()
    stopping = threading.Event()
    reflector = Reflector(
        "test: hpa", list_call or client.AutoscalingV2Api(api_client).list_horizontal_pod_autoscaler_for_all_namespaces,
        on_replace=recorder.replace, on_event=recorder.event, stopping=stopping,
        **{"watch_timeout": 20, "request_timeout": 5.0, **options},
    )
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    try:
        eventually(lambda: reflector.synced and len(api.watch_versions(HPA) + api.watch_versions(VPA)) >= 1,
                   "listed and watching")
        yield reflector, recorder
    finally:
        stopping.set()
        reflector.cut()
        thread.join(10)
        assert not thread.is_alive()


def restart_after(api: FakeApiServer, outage: float) -> float:
    """Crash the fake, keep it down for `outage` seconds, restart it; the moment it is back."""
    api.crash()
    time.sleep(outage)
    api.restart()
    return time.monotonic()


@pytest.mark.parametrize("gone_as_http", [False, True], ids=["error-event", "http-410"])
def test_after_a_restart_the_relist_starts_within_a_second(gone_as_http: bool) -> None:
    with FakeApiServer(gone_as_http=gone_as_http) as api, reflecting(api, backoff=Backoff()) as (reflector, seen):
        api.apply(hpa("before", "web"))
        eventually(lambda: ("ADDED", "before") in seen.events, "watching")
        restart_after(api, OUTAGE)
        api.apply(hpa("after", "web"))  # created right after the restart: only a relist can bring it
        took = eventually(lambda: api.list_calls(HPA) == 2, "the relist", timeout=RELIST_WITHIN)
        eventually(lambda: seen.lists[-1] == ["after", "before"], "the relist handed over")
        assert api.gone_answers >= 1  # it did try to resume first
        assert reflector.failures == 0 and not reflector.relist_pending
        api.apply(hpa("later", "web"))
        eventually(lambda: ("ADDED", "later") in seen.events, "watching again after the relist")
        print(f"relist {took:.2f}s after the restart")


def test_a_restarted_server_that_first_answers_403_is_asked_again_at_once_not_after_the_grown_backoff() -> None:
    # kube-apiserver serves a moment before its RBAC authorizer has synced: a service account's
    # first request after the restart may be 403 (seen in tests/e2e/test_apiserver_restart.py).
    with FakeApiServer() as api, reflecting(api, backoff=Backoff()) as (reflector, seen):
        api.crash()
        eventually(lambda: reflector.failures >= 3, "the backoff grown to 1.5-2 s", timeout=OUTAGE + 2)
        api.restart(forbidden=1)
        api.apply(hpa("after", "web"))
        took = eventually(lambda: api.list_calls(HPA) == 2, "the relist", timeout=RELIST_WITHIN)
        eventually(lambda: seen.lists[-1] == ["after"], "the relist handed over")
        assert sum(1 for c in api.calls if c.status == 403) == 1  # it was told 403 first
        print(f"relist {took:.2f}s after the restart")
        # A server that keeps refusing is still asked less and less often.
        api.crash()
        eventually(lambda: reflector.failures >= 1, "down again", timeout=2)
        api.restart(forbidden=100)
        time.sleep(2.5)
        forbidden = [c for c in api.calls if c.status == 403]
        assert 2 <= len(forbidden) <= 4, len(forbidden)  # at about 0, 0.5, 1.5 s (less jitter): not dozens


def test_a_503_with_retry_after_5_is_asked_again_within_the_backoff_and_the_reflector_is_behind_meanwhile() -> None:
    # kube-apiserver answers a CRD's path so until it is installed; the VPAs waited out those 5 s.
    with FakeApiServer() as api:
        vpas = without_retries(client.ApiClient(client.Configuration(host=api.url)))
        listing = client.CustomObjectsApi(vpas).list_cluster_custom_object

        def list_vpas(**kwargs: Any) -> Any:
            return listing("autoscaling.k8s.io", "v1", VPA, **kwargs)

        with reflecting(api, list_call=list_vpas, backoff=Backoff()) as (reflector, seen):
            api.crash()
            eventually(lambda: reflector.failures >= 1, "refused", timeout=2)
            assert not reflector.behind  # nothing answers: nothing can change either
            api.restart(crd_unready=2)
            back = time.monotonic()
            eventually(lambda: reflector.behind, "behind once the server answers 503", timeout=1.0)
            took = eventually(lambda: len(seen.lists) == 2, "the relist", timeout=3.0)  # at about 0, 0.5, 1.5 s
            assert not reflector.behind and reflector.failures == 0
            assert [c.status for c in api.calls if c.status == 503] == [503, 503]
            assert time.monotonic() - back < 3.0  # (not 5 s for each 503)
            print(f"relist {took:.2f}s after the restart, after two 503s")


def test_the_relist_is_pending_from_the_410_until_the_list_is_done() -> None:
    with FakeApiServer() as api, reflecting(api, backoff=Backoff()) as (reflector, seen):
        assert not reflector.relist_pending
        api.hold_lists()  # a slow list after the restart
        restart_after(api, 0.2)
        eventually(lambda: reflector.relist_pending, "a relist pending after the 410", timeout=RELIST_WITHIN + 1)
        api.hold_lists(False)
        eventually(lambda: not reflector.relist_pending and len(seen.lists) == 2, "relisted")


def test_an_expiry_straight_after_each_relist_backs_off_instead_of_spinning() -> None:
    with FakeApiServer() as api:
        api_client = client.ApiClient(client.Configuration(host=api.url))
        listing = client.AutoscalingV2Api(api_client).list_horizontal_pod_autoscaler_for_all_namespaces

        def list_then_expire(**kwargs: Any) -> Any:
            response = listing(**kwargs)
            if not kwargs.get("watch"):  # every list is out of date at once: the watch from it is 410
                api.apply(vpa("churn", "web"))
                api.compact()
            return response

        with reflecting(api, list_call=list_then_expire, backoff=Backoff(initial=0.2, cap=5.0)) as (reflector, _):
            time.sleep(2.0)
            lists = api.list_calls(HPA)
            assert 3 <= lists <= 6, lists  # relists at 0, 0, +0.2, +0.4, +0.8 s (less jitter): not hundreds
            assert reflector.expirations >= 3


def test_a_refused_server_is_asked_no_more_often_than_the_backoff_says() -> None:
    with FakeApiServer() as api, reflecting(api, backoff=Backoff()) as (reflector, _):
        api.crash()
        time.sleep(OUTAGE)  # attempts at about 0, 0.5, 1.5 and 3.5 s (less jitter)
        assert 2 <= reflector.failures <= 4, reflector.failures
        api.restart()
        eventually(lambda: reflector.failures == 0, "answered again", timeout=RELIST_WITHIN)


def test_the_fake_refuses_connections_while_down_and_expires_resumed_watches_after() -> None:
    # (and, asked to, refuses a restarted server's first requests as an unsynced authorizer would)
    def first_event(api: FakeApiServer, version: str) -> dict[str, Any]:
        path = f"/apis/autoscaling.k8s.io/v1/{VPA}?watch=true&timeoutSeconds=1&resourceVersion={version}"
        with urllib.request.urlopen(api.url + path, timeout=5) as response:
            return json.loads(response.readline() or b"{}")  # type: ignore[no-any-return]

    with FakeApiServer() as api:
        port = api.url.rsplit(":", 1)[1]
        api.apply(vpa("v", "web"))
        before = api.resource_version
        assert first_event(api, before) == {}  # a quiet watch: nothing until its timeout
        api.crash()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
        api.restart()
        assert api.url.endswith(f":{port}")
        custom = client.CustomObjectsApi(client.ApiClient(client.Configuration(host=api.url)))
        listed = custom.list_cluster_custom_object("autoscaling.k8s.io", "v1", VPA)
        assert [item["metadata"]["name"] for item in listed["items"]] == ["v"]  # the store survived (etcd)
        expired = first_event(api, before)
        assert expired["type"] == "ERROR" and expired["object"]["code"] == 410
        assert first_event(api, listed["metadata"]["resourceVersion"]) == {}  # watching from the new list works
        api.crash()
        api.restart(forbidden=1)  # its authorizer not synced yet: the first request is refused, not the next
        with pytest.raises(urllib.error.HTTPError) as refused:
            first_event(api, before)
        status = json.loads(refused.value.read())
        assert refused.value.code == 403 and (status["reason"], status["code"]) == ("Forbidden", 403)
        assert status["message"].startswith(f'{VPA}.autoscaling.k8s.io is forbidden: User "') and \
            status["message"].endswith(f'cannot watch resource "{VPA}" in API group "autoscaling.k8s.io" at the cluster scope')
        assert first_event(api, before)["object"]["code"] == 410
