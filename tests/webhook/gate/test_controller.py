"""The readiness-gate controller against the Kubernetes API test fake, whose fake kubelet computes Ready.

Pods are the captured pod gated by the real webhook (tests/webhook/pods.py). The controller
talks to the fake over HTTP through the unchanged `kubernetes` client. Waits are bounded and
wake on every change of the fake's store.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from kubernetes import client

from fieldwarden.webhook.gate import condition as gate
from fieldwarden.webhook.gate.controller import FIELD_MANAGER, GateController
from fieldwarden.webhook.kube.api import Leases
from fieldwarden.webhook.gate.leader import LeaderElection
from fieldwarden.webhook.kube.reflector import Backoff
from tests.webhook.fake_apiserver import FakeApiServer
from tests.webhook.pods import GATE, LABEL_SELECTOR, gated_pod
from tests.webhook.waiting import eventually

FAST = Backoff(initial=0.05, cap=0.2)


def make(api: FakeApiServer, is_leader: Callable[[], bool] = lambda: True, backoff: Backoff = FAST) -> GateController:
    return GateController(
        client.ApiClient(client.Configuration(host=api.url)), condition_type=GATE, label_selector=LABEL_SELECTOR,
        is_leader=is_leader, backoff=backoff, retry_backoff=FAST, watch_timeout=20, request_timeout=5.0,
    )


@contextmanager
def running(api: FakeApiServer, **options: Any) -> Iterator[GateController]:
    controller = make(api, **options)
    controller.start()
    try:
        eventually(controller.synced, "the pod list is read")
        yield controller
    finally:
        controller.stop()
        assert not controller.alive()


def serving(pod: dict[str, Any]) -> bool:
    """The gate condition True and the kubelet's Ready True."""
    ready = gate.condition(pod, "Ready")
    mine = gate.condition(pod, GATE)
    return bool(mine and mine["status"] == "True" and ready and ready["status"] == "True")


def test_pods_present_before_the_start_and_created_after_it_are_marked() -> None:
    with FakeApiServer() as api:
        api.add_pod(gated_pod("early"))
        with running(api) as controller:
            api.add_pod(gated_pod("late"))
            for name in ("early", "late"):
                pod = api.wait_for_pod("shop", name, serving)
                mine = gate.condition(pod, GATE)
                assert mine is not None and mine["reason"] == gate.REASON_NEW_POD
            eventually(lambda: controller.metrics.marked == 2, "both counted")
        writes = [w for w in api.writes() if w.status == 200]  # (a 409 retry would be harmless)
        assert sorted((w.method, w.path) for w in writes) == [
            ("PATCH", "/api/v1/namespaces/shop/pods/early/status"),
            ("PATCH", "/api/v1/namespaces/shop/pods/late/status"),
        ]
        for write in writes:
            assert write.field_manager == FIELD_MANAGER == "fieldwarden-controller"
            assert write.content_type == gate.STRATEGIC_MERGE
            assert [c["type"] for c in write.body["status"]["conditions"]] == [GATE]  # never Ready
            assert write.body["metadata"]["resourceVersion"]  # the precondition


def test_unlabelled_and_held_pods_are_left_alone() -> None:
    with FakeApiServer() as api:
        foreign = gated_pod("kruise")  # gated by someone else: no fieldwarden label
        del foreign["metadata"]["labels"]["fieldwarden.io/readiness-gate"]
        api.add_pod(foreign)
        api.add_pod(gated_pod("held"))
        api.wait_for_pod("shop", "held", lambda pod: pod["status"].get("phase") == "Running")
        asked: list[bool] = []  # each look at a pod asks first whether this replica leads
        with running(api, is_leader=lambda: asked.append(False) or False) as standby:
            eventually(lambda: standby.snapshot() == (1, 0) and len(asked) >= 1 and len(standby.queue) == 0,
                       "the standby cached the labelled pod (not kruise's) and looked at it")
        assert api.writes() == []  # (a standby: watches, writes nothing)
        held = api.pod("shop", "held")
        hold = gate.condition_patch(GATE, "False", gate.REASON_UPDATING, "an update runs", held["metadata"]["resourceVersion"])
        client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url))).patch_namespaced_pod_status(
            "held", "shop", hold, _content_type=gate.STRATEGIC_MERGE)
        with running(api) as controller:
            api.add_pod(gated_pod("fresh"))
            api.wait_for_pod("shop", "fresh", serving)
            assert controller.snapshot() == (2, 1)  # watched: held and fresh; one held
        marked = [w.name for w in api.writes(path_contains="/status") if w.status == 200]
        assert marked == ["held", "fresh"]  # the test's hold, then the controller's one write: fresh
        assert gate.condition(api.pod("shop", "held"), GATE)["status"] == "False"
        assert gate.condition(api.pod("shop", "kruise"), GATE) is None


def test_a_dropped_watch_resumes_and_an_expired_one_relists() -> None:
    def restarts(controller: GateController) -> int:
        return sum(controller.metrics.watch_restarts(reason) for reason in ("timeout", "error", "expired"))

    with FakeApiServer() as api, running(api) as controller:
        eventually(lambda: len(api.watch_versions("pods")) == 1, "the watch is open")
        api.drop_watches()
        api.add_pod(gated_pod("after-drop"))
        api.wait_for_pod("shop", "after-drop", serving)
        eventually(lambda: restarts(controller) >= 1, "the restart is counted")
        lists_before = api.list_calls("pods")
        unwatched = gated_pod("unlabelled")  # a change the controller's watch does not see...
        del unwatched["metadata"]["labels"]["fieldwarden.io/readiness-gate"]
        api.add_pod(unwatched)
        api.compact()  # ...so that its resourceVersion is now older than the server's history
        api.drop_watches()
        api.add_pod(gated_pod("after-compaction"))
        api.wait_for_pod("shop", "after-compaction", serving)
        eventually(lambda: api.list_calls("pods") > lists_before, "a relist")
        eventually(lambda: controller.metrics.watch_restarts("expired") >= 1, "the expiry is counted")


def test_a_new_leader_marks_the_pods_created_while_nobody_led() -> None:
    leading = threading.Event()
    with FakeApiServer() as api, running(api, is_leader=leading.is_set) as controller:
        api.add_pod(gated_pod("orphan"))
        api.wait_for_pod("shop", "orphan", lambda pod: pod["status"].get("phase") == "Running")
        eventually(lambda: controller.snapshot()[0] == 1, "cached")
        assert api.writes() == []
        leading.set()
        controller.started_leading()
        api.wait_for_pod("shop", "orphan", serving)


def test_two_replicas_with_leader_election_only_the_leader_writes_and_the_standby_takes_over() -> None:
    times = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.1}
    with FakeApiServer() as api:
        replicas = []
        for identity in ("a", "b"):
            api_client = client.ApiClient(client.Configuration(host=api.url))
            holder: dict[str, GateController] = {}
            election = LeaderElection(Leases(api_client), "fieldwarden", "fieldwarden-controller", identity, **times,
                                      on_started_leading=lambda holder=holder: holder["c"].started_leading())
            controller = holder["c"] = make(api, is_leader=election.is_leader)
            stopping = threading.Event()
            thread = threading.Thread(target=election.run, args=(stopping,), daemon=True)
            controller.start()
            thread.start()
            replicas.append((election, controller, stopping, thread))
        try:
            eventually(lambda: sum(r[0].is_leader() for r in replicas) == 1, "one leader")
            leader, standby = sorted(replicas, key=lambda r: not r[0].is_leader())
            for n in range(3):
                api.add_pod(gated_pod(f"web-{n}"))
            for n in range(3):
                api.wait_for_pod("shop", f"web-{n}", serving)
            eventually(lambda: leader[1].metrics.marked == 3, "the leader marked all three")
            assert standby[1].metrics.marked == 0
            leader[2].set()  # the leader stops (and releases the lease)
            leader[3].join(5)
            leader[1].stop()
            eventually(standby[0].is_leader, "the standby leads")
            api.add_pod(gated_pod("web-3"))
            api.wait_for_pod("shop", "web-3", serving)
            assert standby[1].metrics.marked == 1 and leader[1].metrics.marked == 3
        finally:
            for election, controller, stopping, thread in replicas:
                stopping.set()
                thread.join(5)
                controller.stop()


def test_an_unavailable_api_server_is_waited_out_and_the_backlog_marked() -> None:
    with FakeApiServer() as api, running(api) as controller:
        eventually(lambda: len(api.watch_versions("pods")) == 1, "the watch is open")
        api.set_unavailable(True)  # 503 for everything, open watches cut
        eventually(lambda: controller.metrics.watch_restarts("error") >= 1, "the failures are noticed")
        api.add_pod(gated_pod("during-outage"))  # (created in the store directly: the kubelet runs it)
        api.set_unavailable(False)
        api.wait_for_pod("shop", "during-outage", serving, timeout=10)
        assert controller.alive()


def test_after_an_api_server_restart_a_new_pod_is_marked_within_2s() -> None:
    with FakeApiServer() as api, running(api, backoff=Backoff()) as controller:  # the default backoff
        eventually(lambda: len(api.watch_versions("pods")) == 1, "the watch is open")
        api.crash()  # connections refused...
        time.sleep(3.0)  # ...long enough for the backoff to reach 1.5-2 s between attempts
        api.restart()  # ...then every resumed watch is 410 Gone
        api.add_pod(gated_pod("after-restart"))  # only a relist shows it
        api.wait_for_pod("shop", "after-restart", serving, timeout=2.0)
        assert controller.metrics.watch_restarts("expired") == 1 and controller.alive()
