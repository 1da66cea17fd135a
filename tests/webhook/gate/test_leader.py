"""Leader election on a Lease, against the Kubernetes API test fake (tests/webhook/fake_apiserver.py).

Candidates talk to the fake over HTTP through the unchanged `kubernetes` client
(`kube_api.Leases`). Timings are short (a lease of 1.5 s) and every wait is bounded.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest
from kubernetes import client

from fieldwarden.webhook.kube.api import Leases
from fieldwarden.webhook.gate.leader import LeaderElection
from tests.webhook.fake_apiserver import LEASE, FakeApiServer
from tests.webhook.waiting import eventually

TIMES = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.1}



class Partitioned(Leases):
    """The real Leases client, cut off from the API server while `cut` is set (a network partition)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        super().__init__(api_client)
        self.cut = threading.Event()

    def _check(self) -> None:
        if self.cut.is_set():
            raise ConnectionRefusedError("partitioned from the API server")

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._check()
        return super().get(namespace, name)

    def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        return super().replace(namespace, name, lease)


@contextmanager
def candidate(api: FakeApiServer, identity: str, **events: Any) -> Iterator[tuple[LeaderElection, Partitioned]]:
    leases = Partitioned(client.ApiClient(client.Configuration(host=api.url)))
    election = LeaderElection(leases, "fieldwarden", "fieldwarden-controller", identity, **TIMES, **events)
    stopping = threading.Event()
    thread = threading.Thread(target=election.run, args=(stopping,), daemon=True)
    thread.start()
    try:
        yield election, leases
    finally:
        stopping.set()
        thread.join(5)
        assert not thread.is_alive()


def lease(api: FakeApiServer) -> dict[str, Any]:
    return api.get(LEASE, "fieldwarden", "fieldwarden-controller")


def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    started = threading.Event()
    with FakeApiServer(kubelet=False) as api, candidate(api, "a", on_started_leading=started.set) as (a, _):
        eventually(a.is_leader, "a leads")
        assert started.is_set()
        spec = lease(api)["spec"]
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 1
        assert spec["leaseTransitions"] == 0
        for field in ("acquireTime", "renewTime"):  # MicroTime: microseconds, UTC, about now
            moment = datetime.fromisoformat(spec[field].replace("Z", "+00:00"))
            assert moment.utcoffset() == timedelta(0)
            assert abs(datetime.now(timezone.utc) - moment) < timedelta(seconds=30)
        first_renew = spec["renewTime"]
        eventually(lambda: lease(api)["spec"]["renewTime"] != first_renew, "a renews")
        assert lease(api)["spec"]["acquireTime"] == spec["acquireTime"]


def test_a_second_candidate_waits_while_the_leader_renews() -> None:
    with FakeApiServer(kubelet=False) as api, candidate(api, "a") as (a, _):
        eventually(a.is_leader, "a leads")
        with candidate(api, "b") as (b, _):
            time.sleep(TIMES["lease_duration"] * 2)  # longer than the lease: a keeps renewing it
            assert a.is_leader() and not b.is_leader()
            assert b.holder() == "a"
            assert lease(api)["spec"]["holderIdentity"] == "a"


def test_a_clean_stop_releases_the_lease_and_the_standby_takes_over_at_once() -> None:
    stopped = threading.Event()
    with FakeApiServer(kubelet=False) as api, ExitStack() as stack:
        a, _ = stack.enter_context(candidate(api, "a", on_stopped_leading=stopped.set))
        eventually(a.is_leader, "a leads")
        with candidate(api, "b") as (b, _):
            eventually(lambda: b.holder() == "a", "b has seen a's lease")
            stack.close()  # a stops cleanly
            assert stopped.is_set() and not a.is_leader()
            took = eventually(b.is_leader, "b takes over")
            assert took < TIMES["lease_duration"]  # released, not expired
            spec = lease(api)["spec"]
            assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_a_partitioned_leader_steps_down_before_the_standby_takes_over() -> None:
    with FakeApiServer(kubelet=False) as api, candidate(api, "a") as (a, a_leases):
        eventually(a.is_leader, "a leads")
        with candidate(api, "b") as (b, _):
            eventually(lambda: b.holder() == "a", "b has seen a's lease")
            a_leases.cut.set()
            cut_at = time.monotonic()
            eventually(lambda: not a.is_leader(), "a steps down")
            stepped_down = time.monotonic() - cut_at
            eventually(b.is_leader, "b takes over")
            taken_over = time.monotonic() - cut_at
            assert stepped_down <= TIMES["renew_deadline"] + 0.5
            assert stepped_down < taken_over  # never two leaders
            assert taken_over <= TIMES["lease_duration"] + 1.0  # within the lease duration (+ retry slack)
            assert lease(api)["spec"]["holderIdentity"] == "b"
            assert lease(api)["spec"]["leaseTransitions"] == 1
            a_leases.cut.clear()
            time.sleep(TIMES["lease_duration"])
            assert b.is_leader() and not a.is_leader()


def test_only_one_of_many_candidates_leads() -> None:
    with FakeApiServer(kubelet=False) as api:
        with candidate(api, "a") as (a, _), candidate(api, "b") as (b, _), candidate(api, "c") as (c, _):
            eventually(lambda: any(e.is_leader() for e in (a, b, c)), "someone leads")
            for _ in range(20):
                assert sum(e.is_leader() for e in (a, b, c)) == 1
                time.sleep(0.05)


def test_bad_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaderElection(Leases(client.ApiClient()), "ns", "name", "me", lease_duration=5, renew_deadline=5)
