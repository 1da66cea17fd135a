"""The in-place image update protocol against the Kubernetes API test fake and its fake kubelet.

The pods are the captured pod gated by the real webhook; the fake kubelet restarts a container
after its image changes (or stalls, or fails to pull) and computes Ready from the gate.
"""

from __future__ import annotations

import copy
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import pytest
from kubernetes import client

from fieldwarden.webhook.gate import condition as gate
from fieldwarden.webhook.gate.inplace import Options, UpdateFailed, update_pod, update_pods
from fieldwarden.webhook.kube.api import Pods
from tests.webhook.fake_apiserver import FakeApiServer
from tests.webhook.pods import GATE, gated_pod
from tests.webhook.gate.test_controller import running as controller_running
from tests.webhook.gate.test_controller import serving

OLD = "registry.example/app:1.0"
NEW = "registry.example/app:2.0"
QUICK = Options(GATE, grace_seconds=0.1, timeout_seconds=5.0)


@contextmanager
def cluster(*names: str, labels: dict[str, str] | None = None) -> Iterator[tuple[FakeApiServer, Pods]]:
    """A fake cluster with the controller running and these gated pods serving."""
    with FakeApiServer() as api, controller_running(api):
        for name in names:
            pod = gated_pod(name, containers={"app": OLD, "side": "registry.example/side:1.0"})
            pod["metadata"]["labels"].update(labels or {})
            api.add_pod(pod)
        for name in names:
            api.wait_for_pod("shop", name, serving)
        yield api, Pods(client.ApiClient(client.Configuration(host=api.url)))


def gate_history(api: FakeApiServer, name: str) -> list[tuple[str, str]]:
    """(status, reason) of every successful write of the gate condition to this pod, in order."""
    return [(c["status"], c["reason"]) for w in api.writes(path_contains=f"/pods/{name}/status") if w.status == 200
            for c in w.body["status"]["conditions"]]


def test_the_whole_protocol_drains_updates_and_restores_the_pod() -> None:
    lines: list[str] = []
    with cluster("web-0") as (api, pods):
        before = api.pod("shop", "web-0")
        result = update_pod(pods, "shop", "web-0", {"app": NEW}, QUICK, lines.append)
        pod = api.wait_for_pod("shop", "web-0", serving)  # (the kubelet recomputes Ready after the gate)
        assert result.changed == ("app",) and result.same_image == ()
        assert [c["image"] for c in pod["spec"]["containers"]] == [NEW, "registry.example/side:1.0"]
        app = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "app")
        assert app["imageID"] == api.kubelet.resolve(NEW) and app["ready"]
        assert gate.condition(pod, GATE)["reason"] == gate.REASON_UPDATED
        # The order of the client's writes: drain, image, restore; the controller's mark came first.
        writes = [(w.method, w.subresource) for w in api.writes() if w.name == "web-0"]
        assert writes == [("PATCH", "status"), ("PATCH", "status"), ("PATCH", None), ("PATCH", "status")]
        assert gate_history(api, "web-0") == [("True", gate.REASON_NEW_POD), ("False", gate.REASON_UPDATING),
                                              ("True", gate.REASON_UPDATED)]
        image_patch = next(w for w in api.writes() if w.name == "web-0" and w.subresource is None)
        assert image_patch.body == {"spec": {"containers": [{"name": "app", "image": NEW}]}}
        # The kubelet took the pod out of Ready (gate False) before the container was restarted.
        kubelet = [w for w in api.kubelet.writes_for("shop", "web-0")]
        assert kubelet, "the fake kubelet wrote the pod"
        side = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "side")
        side_before = next(s for s in before["status"]["containerStatuses"] if s["name"] == "side")
        assert side["containerID"] == side_before["containerID"]  # untouched
    assert any("waiting 0.1s for endpoints" in line for line in lines)


def test_the_pod_is_not_ready_while_its_image_changes() -> None:
    with cluster("web-0") as (api, pods):
        seen: list[bool] = []
        api.kubelet.set_mode("stall")  # hold the restart to look at the pod mid-update
        with pytest.raises(UpdateFailed):
            update_pod(pods, "shop", "web-0", {"app": NEW}, Options(GATE, 0.1, 1.0))
        pod = api.pod("shop", "web-0")
        seen.append(gate.condition(pod, "Ready")["status"] == "True")
        assert seen == [False]
        assert gate.condition(pod, "Ready")["reason"] == "ReadinessGatesNotReady"


def test_a_timeout_leaves_the_gate_false_and_says_so() -> None:
    with cluster("web-0") as (api, pods):
        api.kubelet.set_mode("stall", "shop", "web-0")
        with pytest.raises(UpdateFailed, match=r"timed out after 1s: app: not restarted yet; the gate InPlaceUpdateReady stays False"):
            update_pod(pods, "shop", "web-0", {"app": NEW}, Options(GATE, 0.1, 1.0))
        condition = gate.condition(api.pod("shop", "web-0"), GATE)
        assert condition["status"] == "False" and condition["reason"] == gate.REASON_FAILED
        assert "timed out" in condition["message"]
        assert not serving(api.pod("shop", "web-0"))


def test_a_pull_error_is_reported_with_the_kubelet_reason() -> None:
    with cluster("web-0") as (api, pods):
        api.kubelet.set_mode("pull-error")
        with pytest.raises(UpdateFailed, match="ImagePullBackOff|ErrImagePull"):
            update_pod(pods, "shop", "web-0", {"app": "registry.example/app:typo"}, Options(GATE, 0.1, 1.5))
        assert gate.condition(api.pod("shop", "web-0"), GATE)["status"] == "False"


def test_a_tag_of_the_same_image_does_not_wait_for_ever() -> None:
    lines: list[str] = []
    with cluster("web-0") as (api, pods):
        api.kubelet.alias("registry.example/app:stable", same_as=OLD)
        result = update_pod(pods, "shop", "web-0", {"app": "registry.example/app:stable"}, QUICK, lines.append)
        assert result.same_image == ("app",)
        api.wait_for_pod("shop", "web-0", serving)
    assert any("which is the same image as before" in line for line in lines)


def test_nothing_is_written_for_a_pod_that_cannot_or_need_not_be_updated() -> None:
    with cluster("web-0") as (api, pods):
        marks = len(api.writes())
        with pytest.raises(UpdateFailed, match="has no container 'nope'"):
            update_pod(pods, "shop", "web-0", {"nope": NEW}, QUICK)
        assert update_pod(pods, "shop", "web-0", {"app": OLD}, QUICK).changed == ()
        with pytest.raises(UpdateFailed, match="cannot read the pod: 404"):
            update_pod(pods, "shop", "missing", {"app": NEW}, QUICK)
        assert len(api.writes()) == marks


def test_the_controller_never_flips_a_pod_the_update_holds() -> None:
    with cluster("web-0") as (api, pods):
        api.kubelet.set_mode("stall")
        with pytest.raises(UpdateFailed):
            update_pod(pods, "shop", "web-0", {"app": NEW}, Options(GATE, 0.3, 1.0))
        history = gate_history(api, "web-0")
        assert history == [("True", gate.REASON_NEW_POD), ("False", gate.REASON_UPDATING), ("False", gate.REASON_FAILED)]


def test_a_batch_respects_max_unavailable() -> None:
    names = [f"web-{n}" for n in range(4)]
    with cluster(*names, labels={"tier": "web"}) as (api, pods):
        result = update_pods(pods, "shop", "tier=web", {"app": NEW}, "2", QUICK)
        assert sorted(r.pod for r in result.updated) == [f"shop/{n}" for n in names]
        assert result.failed == () and result.not_started == ()
        out_of_service, most = set(), 0
        for write in (w for w in api.writes(path_contains="/status") if w.status == 200):
            for condition in write.body["status"]["conditions"]:
                (out_of_service.add if condition["status"] == "False" else out_of_service.discard)(write.name)
            most = max(most, len(out_of_service))
        assert most == 2
        for name in names:
            api.wait_for_pod("shop", name, serving)


def test_a_batch_starts_no_pod_after_a_failure() -> None:
    names = [f"web-{n}" for n in range(3)]
    with cluster(*names, labels={"tier": "web"}) as (api, pods):
        api.kubelet.set_mode("stall", "shop", "web-0")
        result = update_pods(pods, "shop", "tier=web", {"app": NEW}, "1", Options(GATE, 0.1, 1.0))
        assert result.updated == () and len(result.failed) == 1 and "shop/web-0" in result.failed[0]
        assert result.not_started == ("shop/web-1", "shop/web-2")
        assert api.pod("shop", "web-1")["spec"]["containers"][0]["image"] == OLD


def test_a_batch_with_an_ungated_pod_is_refused_before_anything_changes() -> None:
    with cluster("web-0", labels={"tier": "web"}) as (api, pods):
        plain = gated_pod("legacy")
        plain["spec"]["readinessGates"] = []
        plain["metadata"]["labels"]["tier"] = "web"
        api.add_pod(plain)
        api.wait_for_pod("shop", "legacy", lambda pod: pod["status"].get("phase") == "Running")
        writes = len(api.writes())
        with pytest.raises(UpdateFailed, match="shop/legacy has no readiness gate"):
            update_pods(pods, "shop", "tier=web", {"app": NEW}, "1", QUICK)
        assert len(api.writes()) == writes
        with pytest.raises(UpdateFailed, match="no pod in namespace shop matches"):
            update_pods(pods, "shop", "tier=nothing", {"app": NEW}, "1", QUICK)


class Refusing(Pods):
    """The real Pods client, but the image patch is refused as a validating webhook refuses it."""

    def patch(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        denial = ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
                  '"admission webhook \\"image-only-pod-updates.fieldwarden.io\\" denied the request: no",'
                  '"reason":"Forbidden","code":403}')
        raise _api_error(403, denial)


def _api_error(status: int, body: str) -> client.ApiException:
    error = client.ApiException(status=status, reason="Forbidden")
    error.body = body
    return error


def test_a_refused_image_patch_changes_nothing_and_puts_the_pod_back_in_service() -> None:
    with cluster("web-0") as (api, _):
        refusing = Refusing(client.ApiClient(client.Configuration(host=api.url)))
        with pytest.raises(UpdateFailed, match=r'image patch was refused \(403 admission webhook .* denied the request: no\); '
                                               r"nothing changed and the gate is True again"):
            update_pod(refusing, "shop", "web-0", {"app": NEW}, QUICK)
        pod = api.wait_for_pod("shop", "web-0", serving)
        assert pod["spec"]["containers"][0]["image"] == OLD
        assert gate.condition(pod, GATE)["reason"] == gate.REASON_REFUSED
        assert gate_history(api, "web-0")[-2:] == [("False", gate.REASON_UPDATING), ("True", gate.REASON_REFUSED)]


class Recording(Pods):
    """The real Pods client, noting the pod just before and just after the image patch."""

    seen: list[tuple[dict[str, Any], dict[str, Any]]]

    def patch(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        before = self.get(namespace, name)
        after = super().patch(namespace, name, body)
        self.seen.append((before, after))
        return after


def test_the_image_patch_is_what_fw401_allows_in_its_strict_mode() -> None:
    """The protocol and the validating webhook fit: the real FW401 decides on the real update."""
    from fieldwarden.policies.config import Settings
    from fieldwarden.webhook.server.handlers import admit
    from fieldwarden.webhook.inventory.sources import StaticInventory
    from tests.webhook.samples import JSON, encode, review

    strict = Settings({"rules": {"FW401": {"require-gate-false": True}}})
    with cluster("web-0") as (api, _):
        recording = Recording(client.ApiClient(client.Configuration(host=api.url)))
        recording.seen = []
        update_pod(recording, "shop", "web-0", {"app": NEW}, QUICK)
        (before, after), = recording.seen

        def decide(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
            data = review("pod-update-set-image")
            data["request"].update(name="web-0", namespace="shop", object=new, oldObject=old)
            status, answer = admit(encode(data), JSON, "validate", strict, StaticInventory(()))
            assert status == 200
            return answer["response"]  # type: ignore[no-any-return]

        assert gate.condition(before, GATE)["status"] == "False"
        assert decide(before, after)["allowed"] is True
        # The same image change on a pod still in service is refused in this mode.
        serving_pod = api.pod("shop", "web-0")
        changed = copy.deepcopy(serving_pod)
        changed["spec"]["containers"][0]["image"] = "registry.example/app:3.0"
        refused = decide(serving_pod, changed)
        assert refused["allowed"] is False and 'condition InPlaceUpdateReady is "False"' in refused["status"]["message"]


def test_an_update_that_stopped_half_way_is_finished_by_running_it_again() -> None:
    lines: list[str] = []
    with cluster("web-0", "web-1", labels={"tier": "web"}) as (api, pods):
        core = client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url)))
        for name in ("web-0", "web-1"):  # what a killed set-image leaves: gate False, image patched
            pod = api.pod("shop", name)
            core.patch_namespaced_pod_status(name, "shop", gate.condition_patch(
                GATE, "False", gate.REASON_UPDATING, "in-place update", pod["metadata"]["resourceVersion"]),
                _content_type=gate.STRATEGIC_MERGE)
            core.patch_namespaced_pod(name, "shop", gate.image_patch({"app": NEW}), _content_type=gate.STRATEGIC_MERGE)
        result = update_pod(pods, "shop", "web-0", {"app": NEW}, QUICK, lines.append)
        assert result.changed == ()
        pod = api.wait_for_pod("shop", "web-0", serving)
        assert gate.condition(pod, GATE)["reason"] == gate.REASON_UPDATED
        assert any("already runs app=registry.example/app:2.0 but the gate is False" in line for line in lines)
        batch = update_pods(pods, "shop", "tier=web", {"app": NEW}, "1", QUICK)  # web-1 too, web-0 no more
        assert [r.pod for r in batch.updated] == ["shop/web-1"] and batch.failed == ()
        api.wait_for_pod("shop", "web-1", serving)
        assert update_pod(pods, "shop", "web-0", {"app": NEW}, QUICK, lines.append).changed == ()
        assert lines[-1] == "shop/web-0: already runs these images; nothing to do"


def test_a_watch_that_breaks_while_waiting_does_not_break_the_update() -> None:
    with cluster("web-0") as (api, pods):
        api.kubelet.restart_delay = 0.5  # a slow restart: the wait is watching when the watch is cut
        cut = threading.Timer(0.4, api.drop_watches)
        cut.start()
        try:
            result = update_pod(pods, "shop", "web-0", {"app": NEW}, Options(GATE, 0.1, 10.0))
        finally:
            cut.cancel()
        assert result.changed == ("app",)
        api.wait_for_pod("shop", "web-0", serving)
