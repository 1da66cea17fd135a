"""The readiness-gate condition helpers (webhook/gate/condition.py), on the webhook-gated captured pod."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

from fieldwarden.webhook.gate import condition as gate
from tests.webhook.pods import GATE, gated_pod, running


def test_a_new_gated_pod_needs_marking_and_an_ungated_one_does_not() -> None:
    pod = gated_pod()
    assert gate.has_gate(pod, GATE)
    assert gate.needs_marking(pod, GATE)
    assert gate.needs_marking(running(pod), GATE)
    assert not gate.has_gate(pod, "example.com/other")
    assert not gate.needs_marking(pod, "example.com/other")


def test_any_existing_condition_is_left_to_its_writer() -> None:
    pod = gated_pod()
    for state in ("True", "False", "Unknown"):
        assert not gate.needs_marking(running(pod, gate=state), GATE)
    assert gate.held(running(pod, gate="False"), GATE)
    assert not gate.held(running(pod, gate="True"), GATE)
    assert not gate.held(running(pod), GATE)


def test_deleted_and_finished_pods_are_not_marked() -> None:
    deleting = running(gated_pod())
    deleting["metadata"]["deletionTimestamp"] = "2026-11-22T06:05:00Z"
    finished = running(gated_pod())
    finished["status"]["phase"] = "Succeeded"
    assert not gate.needs_marking(deleting, GATE)
    assert not gate.needs_marking(finished, GATE)


def test_the_condition_patch_names_only_its_condition_and_carries_the_precondition() -> None:
    moment = datetime(2026, 11, 22, 6, 30, tzinfo=timezone.utc)
    patch = gate.condition_patch(GATE, "True", "PodInitialized", "hello", "123", moment=moment)
    assert patch == {
        "metadata": {"resourceVersion": "123"},
        "status": {"conditions": [{"type": GATE, "status": "True", "reason": "PodInitialized", "message": "hello",
                                   "lastProbeTime": None, "lastTransitionTime": "2026-11-22T06:30:00Z"}]},
    }
    assert "metadata" not in gate.condition_patch(GATE, "True", "r", "m")


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    previous = running(gated_pod(), gate="False")["status"]["conditions"][-1]
    moment = datetime(2026, 11, 22, 7, 0, tzinfo=timezone.utc)
    same = gate.condition_patch(GATE, "False", gate.REASON_FAILED, "timed out", previous=previous, moment=moment)
    flipped = gate.condition_patch(GATE, "True", gate.REASON_UPDATED, "done", previous=previous, moment=moment)
    assert same["status"]["conditions"][0]["lastTransitionTime"] == previous["lastTransitionTime"]
    assert flipped["status"]["conditions"][0]["lastTransitionTime"] == "2026-11-22T07:00:00Z"


def test_the_image_patch_merges_by_container_name() -> None:
    assert gate.image_patch({"app": "a:2", "side": "s:3"}) == {
        "spec": {"containers": [{"name": "app", "image": "a:2"}, {"name": "side", "image": "s:3"}]}}


def test_condition_reads_tolerate_odd_status() -> None:
    pod = copy.deepcopy(gated_pod())
    pod["status"] = {"conditions": None}
    assert gate.condition(pod, GATE) is None
    pod["status"] = "weird"
    assert gate.condition(pod, GATE) is None
