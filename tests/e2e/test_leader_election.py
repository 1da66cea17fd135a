"""Controller failover behind a real kube-apiserver: two `fieldwarden controller` processes, one Lease.

fieldwarden is installed into a cluster of this module's own with the chart's lease timings set
short (`controller.leaseDuration` 4 s, `renewDeadline` 3 s, `retryPeriod` 1 s; the defaults are
15 / 10 / 2, the same as the CLI's, so a standby there takes over within about 15-20 s after a
crash and within about 2.4 s after a clean stop). The leader is killed:

- with SIGKILL: it cannot release the Lease, so the standby takes over only once the Lease has
  gone unrenewed for the lease duration (never sooner: that would be two leaders), and at most a
  retry period or two (with jitter) later; a pod created meanwhile is marked by nobody until then,
  and by the new leader at once after;
- with SIGTERM: it releases the Lease on its way out, so the standby takes over at its next
  retry, well before the lease duration.

Either way the new leader marks the new gated pods, which its own metrics count.

The API-fake counterparts now shown for real: tests/webhook/gate/test_process.py (a standby
takes over from a dead leader; a clean stop releases the Lease), tests/webhook/gate/test_leader.py
(the same two, in-process) and tests/webhook/gate/test_controller.py's new leader marking the
pods created while nobody led. They stay, as fast checks that need no binaries; a partitioned
leader stepping down before its Lease expires (test_leader.py) stays the fake's alone: a real
server cannot cut one client off on demand.
"""

from __future__ import annotations

import signal
import time
from typing import Any, Callable, Iterator

import pytest

from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.install import Controller, Installation
from tests.e2e.own_cluster import (controller_option, gated_pod, lease, marked, micro_time, new_namespace,
                                    own_installation)
from tests.e2e.processes import wait_for
from tests.webhook.exposition import value

TIMINGS = {"leaseDuration": 4, "renewDeadline": 3, "retryPeriod": 1}
JITTER = 1.2  # a standby waits retryPeriod * (1 + up to 0.2) between looks (webhook/gate/leader.py)
SLACK = 1.0  # process scheduling and API round trips on a busy machine
MARK_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def installation(start_cluster: Callable[[ClusterOptions], Cluster], failure_logs: list[Any],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    with own_installation(start_cluster, failure_logs, "leader-election", tmp_path_factory.mktemp("leader"),
                          {"controller": TIMINGS}) as installed:
        yield installed


def leading(installation: Installation) -> Controller:
    holder = installation.lease_holder()
    return next(c for c in installation.controllers if c.identity == holder and c.process.running())


def pods_marked(controller: Controller) -> float:
    status, text = controller.get("/metrics")
    assert status == 200, text
    return value(text, "fieldwarden_controller_pods_marked_total")


def marked_by(controller: Controller, count: float) -> None:
    """The controller's count of pods marked reaches `count` (it counts just after the API server
    stored the condition, so a moment after the pod shows it), and stays there."""
    wait_for(lambda: pods_marked(controller) >= count, f"{controller.identity} to count {count:g} pods marked", 5,
             interval=0.05)
    assert pods_marked(controller) == count


def create_pod(installation: Installation, namespace: str, name: str) -> None:
    installation.cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", gated_pod(name))


def wait_marked(installation: Installation, namespace: str, *names: str) -> None:
    wait_for(lambda: all(marked(installation, namespace, name) for name in names),
             f"{', '.join(names)} to be marked", MARK_TIMEOUT)


def test_the_configured_timings_reach_the_controllers(installation: Installation) -> None:
    assert (controller_option(installation, "--lease-duration"), controller_option(installation, "--renew-deadline"),
            controller_option(installation, "--retry-period")) == (4, 3, 1)
    assert lease(installation)["spec"]["leaseDurationSeconds"] == 4


def test_after_a_crash_the_standby_takes_over_once_the_lease_expires_and_marks_the_pods(
        installation: Installation) -> None:
    duration = controller_option(installation, "--lease-duration")
    retry = controller_option(installation, "--retry-period")
    namespace = new_namespace(installation.cluster, "failover-crash")
    leader = leading(installation)
    standby = installation.start_controller(f"standby-{len(installation.controllers)}")
    create_pod(installation, namespace, "before")
    wait_marked(installation, namespace, "before")
    assert pods_marked(standby) == 0  # a standby watches (it is warm) but does not write

    leader.process.signal(signal.SIGKILL)
    assert leader.process.stop() == -signal.SIGKILL
    killed = time.time()
    last = lease(installation)["spec"]  # nobody renews it any more
    assert last["holderIdentity"] == leader.identity
    create_pod(installation, namespace, "while-nobody-leads")

    def taken_over() -> dict[str, Any] | None:
        # Read the pod before the Lease: a mark seen must come with the new holder (never two leaders).
        gap_pod_marked = marked(installation, namespace, "while-nobody-leads")
        spec: dict[str, Any] = lease(installation)["spec"]
        assert not gap_pod_marked or spec["holderIdentity"] == standby.identity, "a pod was marked while nobody led"
        return spec if spec["holderIdentity"] == standby.identity else None

    spec = wait_for(taken_over, "the standby to take the Lease over", duration + 2 * retry * JITTER + SLACK + 5,
                    interval=0.05)
    took = time.time() - killed
    acquired = micro_time(spec["acquireTime"])
    print(f"SIGKILL: the standby took over {took:.2f}s after the kill, "
          f"{acquired - micro_time(last['renewTime']):.2f}s after the last renewal")
    assert acquired - micro_time(last["renewTime"]) >= duration - 0.05  # not before the lease expired
    assert took <= duration + 2 * retry * JITTER + SLACK
    assert spec["leaseTransitions"] == last["leaseTransitions"] + 1

    create_pod(installation, namespace, "after")
    wait_marked(installation, namespace, "while-nobody-leads", "after")
    marked_by(standby, 2)


def test_a_clean_stop_releases_the_lease_and_the_standby_takes_over_at_its_next_retry(
        installation: Installation) -> None:
    duration = controller_option(installation, "--lease-duration")
    retry = controller_option(installation, "--retry-period")
    namespace = new_namespace(installation.cluster, "failover-term")
    leader = leading(installation)
    standby = installation.start_controller(f"standby-{len(installation.controllers)}")
    wait_for(lambda: standby.get("/readyz")[0] == 200, "the standby to be ready", 10)
    before = pods_marked(standby)

    stopping = time.time()
    assert leader.stop() == 0  # SIGTERM: it releases the Lease, then exits
    stopped = time.time()
    assert f"leader election: {leader.identity} released" in leader.process.output()
    spec = wait_for(lambda: (s := lease(installation)["spec"])["holderIdentity"] == standby.identity and s,
                    "the standby to take the released Lease", duration + SLACK, interval=0.05)
    took = time.time() - stopped
    print(f"SIGTERM: the leader stopped in {stopped - stopping:.2f}s; the standby took over {took:.2f}s later")
    assert took <= retry * JITTER + SLACK < duration
    assert spec["leaseDurationSeconds"] == duration

    create_pod(installation, namespace, "after")
    wait_marked(installation, namespace, "after")
    marked_by(standby, before + 1)
