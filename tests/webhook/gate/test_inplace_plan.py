"""The pure parts of the in-place update protocol: what to change, and when it is done."""

from __future__ import annotations

import copy

import pytest

from fieldwarden.webhook.gate.inplace import UpdateFailed, assess, parse_max_unavailable, plan, record
from tests.webhook.pods import GATE, digest, gated_pod, running

TWO = {"app": "registry.example/app:1.0", "side": "registry.example/side:1.0"}


def restarted(pod: dict, name: str, image: str, image_id: str | None = None, ready: bool = True) -> dict:
    out = copy.deepcopy(pod)
    for status in out["status"]["containerStatuses"]:
        if status["name"] == name:
            status.update(image=image, imageID=image_id or f"docker.io/x@{digest(image)}",
                          containerID=status["containerID"] + "-new", restartCount=status["restartCount"] + 1,
                          ready=ready, state={"running": {"startedAt": "2026-11-22T06:10:00Z"}})
    return out


def test_plan_keeps_only_the_containers_whose_image_changes() -> None:
    pod = running(gated_pod(containers=TWO))
    assert plan(pod, {"app": "registry.example/app:2.0", "side": TWO["side"]}, GATE) == {"app": "registry.example/app:2.0"}
    assert plan(pod, {"app": TWO["app"]}, GATE) == {}


@pytest.mark.parametrize(
    ("images", "words"),
    [
        ({"nope": "x:1"}, "has no container 'nope' (it has: app, side)"),
        ({"app": ""}, "must be non-empty"),
        ({"app": " x:1"}, "without surrounding spaces"),
    ],
)
def test_plan_refuses_what_cannot_be_updated(images: dict[str, str], words: str) -> None:
    with pytest.raises(UpdateFailed, match=words.replace("(", r"\(").replace(")", r"\)")):
        plan(running(gated_pod(containers=TWO)), images, GATE)


def test_plan_refuses_a_pod_without_the_gate_and_says_what_to_do() -> None:
    pod = running(gated_pod())
    pod["spec"]["readinessGates"] = []
    with pytest.raises(UpdateFailed, match="no readiness gate 'InPlaceUpdateReady'.*recreate it"):
        plan(pod, {"app": "a:2"}, GATE)


def test_plan_refuses_init_containers_and_pods_that_have_not_started() -> None:
    pod = running(gated_pod())
    pod["spec"]["initContainers"] = [{"name": "migrate", "image": "m:1"}]
    with pytest.raises(UpdateFailed, match="init container"):
        plan(pod, {"migrate": "m:2"}, GATE)
    with pytest.raises(UpdateFailed, match="has not started yet"):
        plan(gated_pod(), {"app": "a:2"}, GATE)


def test_assess_waits_for_a_restart_then_for_readiness() -> None:
    pod = running(gated_pod(containers=TWO))
    before = record(pod, ["app", "side"])
    first = assess(pod, before)
    assert not first.done and len(first.waiting) == 2 and "not restarted yet" in first.waiting[0]
    half = restarted(pod, "app", "registry.example/app:2.0")
    assert assess(half, before).waiting == ("side: not restarted yet",)
    not_ready = restarted(half, "side", "registry.example/side:2.0", ready=False)
    assert assess(not_ready, before).waiting == ("side: restarted, not ready yet",)
    done = restarted(half, "side", "registry.example/side:2.0")
    assert assess(done, before) == (True, (), (), "")


def test_assess_reports_a_restart_onto_the_same_image_id() -> None:
    pod = running(gated_pod())
    before = record(pod, ["app"])
    same = restarted(pod, "app", "registry.example/app:1.0-alias", image_id=before["app"].image_id)
    progress = assess(same, before)
    assert progress.done and progress.same_image == ("app",)


def test_assess_fails_at_once_on_a_state_waiting_will_not_fix() -> None:
    pod = running(gated_pod())
    before = record(pod, ["app"])
    broken = copy.deepcopy(pod)
    broken["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "InvalidImageName", "message": "bad"}}
    assert assess(broken, before).failure == "container app: InvalidImageName: bad"
    backoff = copy.deepcopy(pod)
    backoff["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ImagePullBackOff"}}
    progress = assess(backoff, before)
    assert not progress.failure and progress.waiting == ("app: not restarted yet (ImagePullBackOff)",)
    gone = copy.deepcopy(pod)
    gone["metadata"]["deletionTimestamp"] = "2026-11-22T06:20:00Z"
    assert assess(gone, before).failure == "the pod is being deleted"


@pytest.mark.parametrize(("text", "total", "expected"), [("1", 10, 1), ("3", 2, 3), ("25%", 10, 2), ("10%", 3, 1), ("100%", 4, 4)])
def test_max_unavailable(text: str, total: int, expected: int) -> None:
    assert parse_max_unavailable(text, total) == expected


@pytest.mark.parametrize("text", ["0", "-1", "x", "0%", "120%", "1.5"])
def test_max_unavailable_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="--max-unavailable"):
        parse_max_unavailable(text, 10)
