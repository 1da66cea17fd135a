"""`fieldwarden set-image` when one of its writes fails: the API test fake fails that one request.

A conflict on a gate write is retried after reading the pod again; the image patch refused
(409) puts the pod back in service unchanged; the image patch failing inside the server (500)
leaves the gate False. Each test checks the exit code, what the user reads, and what was written.
"""

from __future__ import annotations

from pathlib import Path

from fieldwarden.webhook.gate import condition as gate
from fieldwarden.webhook.kube.api import user_agent
from tests.webhook.fake_apiserver import FakeApiServer, OPTIMISTIC_LOCK
from tests.webhook.gate.test_inplace import NEW, OLD, cluster, gate_history
from tests.webhook.gate.test_set_image import set_image
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.pods import GATE

POD = "/api/v1/namespaces/shop/pods/web-0"
QUICK = ("--grace-period", "0", "--timeout", "5")


def calls_of_set_image(api: FakeApiServer) -> list[tuple[str, str | None, int]]:
    """(method, subresource, status) of set-image's own requests to web-0, in order."""
    agent = user_agent("set-image")
    return [(c.method, c.subresource, c.status) for c in api.calls if c.user_agent == agent and c.name == "web-0"]


def app_image(api: FakeApiServer) -> str:
    image: str = api.pod("shop", "web-0")["spec"]["containers"][0]["image"]
    return image


def test_a_conflict_on_the_drain_write_is_retried_after_reading_the_pod_again(tmp_path: Path) -> None:
    with cluster("web-0") as (api, _):
        api.fail_once("PATCH", POD + "/status", 409)
        done = set_image(write_kubeconfig(tmp_path / "kubeconfig", api.url), "web-0", f"app={NEW}", *QUICK)
        assert done.returncode == 0, done.stderr
        assert "shop/web-0: updated in" in done.stdout and done.stderr == ""
        calls = calls_of_set_image(api)
        writes = [c for c in calls if c[0] == "PATCH"]
        assert writes[:3] == [("PATCH", "status", 409), ("PATCH", "status", 200), ("PATCH", None, 200)]
        assert writes[-1] == ("PATCH", "status", 200) and len(writes) == 4
        assert calls[calls.index(("PATCH", "status", 409)) + 1] == ("GET", None, 200)  # read again, then retried
        assert gate_history(api, "web-0")[-2:] == [(gate.FALSE, gate.REASON_UPDATING), (gate.TRUE, gate.REASON_UPDATED)]
        assert app_image(api) == NEW


def test_an_image_patch_refused_with_a_conflict_changes_nothing_and_restores_the_gate(tmp_path: Path) -> None:
    with cluster("web-0") as (api, _):
        api.fail_once("PATCH", POD, 409)
        done = set_image(write_kubeconfig(tmp_path / "kubeconfig", api.url), "web-0", f"app={NEW}", *QUICK)
        assert done.returncode == 1
        assert (f"fieldwarden: FAILED shop/web-0: the image patch was refused (409 Operation cannot be fulfilled on "
                f'pods "web-0": {OPTIMISTIC_LOCK}); nothing changed and the gate is True again') in done.stderr
        assert "Traceback" not in done.stderr
        assert app_image(api) == OLD
        assert gate_history(api, "web-0")[-2:] == [(gate.FALSE, gate.REASON_UPDATING), (gate.TRUE, gate.REASON_REFUSED)]
        assert [c for c in calls_of_set_image(api) if c[1] is None and c[0] == "PATCH"] == [("PATCH", None, 409)]


def test_an_image_patch_failing_in_the_server_leaves_the_pod_out_of_traffic(tmp_path: Path) -> None:
    with cluster("web-0") as (api, _):
        api.fail_once("PATCH", POD, 500)
        done = set_image(write_kubeconfig(tmp_path / "kubeconfig", api.url), "web-0", f"app={NEW}", *QUICK)
        assert done.returncode == 1
        assert ("fieldwarden: FAILED shop/web-0: image patch failed: 500 etcdserver: request timed out; "
                f"the gate {GATE} stays False (the pod gets no traffic)") in done.stderr
        assert "Traceback" not in done.stderr
        assert app_image(api) == OLD
        held = gate.condition(api.pod("shop", "web-0"), GATE)
        assert (held["status"], held["reason"]) == (gate.FALSE, gate.REASON_FAILED)
        assert held["message"] == "image patch failed: 500 etcdserver: request timed out"
