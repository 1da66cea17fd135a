"""`fieldwarden set-image` as a process, against the Kubernetes API test fake: exit codes and messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fieldwarden.webhook.gate import condition as gate
from fieldwarden.webhook.gate.controller import FIELD_MANAGER as CONTROLLER
from fieldwarden.webhook.gate.set_image import FIELD_MANAGER, split_targets
from fieldwarden.webhook.kube.api import user_agent
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.pods import GATE
from tests.webhook.gate.test_inplace import NEW, cluster


def set_image(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.run([sys.executable, "-m", "fieldwarden", "set-image", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_split_targets() -> None:
    assert split_targets(["web-0", "app=a:2", "side=s:2"], False) == ("web-0", {"app": "a:2", "side": "s:2"})
    assert split_targets(["app=a:2"], True) == (None, {"app": "a:2"})
    for words, selector, error in [
        (["app=a:2"], False, "name the pod first"),
        (["web-0"], False, "at least one CONTAINER=IMAGE"),
        (["web-0", "app"], False, "is not CONTAINER=IMAGE"),
        (["web-0", "app=a", "app=b"], False, "named twice"),
    ]:
        with pytest.raises(ValueError, match=error):
            split_targets(words, selector)


def test_one_pod_then_a_timeout_then_a_batch(tmp_path: Path) -> None:
    with cluster("web-0", "web-1", labels={"tier": "web"}) as (api, _):
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)  # its context's namespace: shop
        done = set_image(kubeconfig, "web-0", f"app={NEW}", "--grace-period", "0.1", "--timeout", "5")
        assert done.returncode == 0, done.stderr
        assert "shop/web-0: updated in" in done.stdout
        assert api.pod("shop", "web-0")["spec"]["containers"][0]["image"] == NEW

        api.kubelet.set_mode("stall", "shop", "web-1")
        done = set_image(kubeconfig, "-n", "shop", "web-1", f"app={NEW}", "--grace-period", "0", "--timeout", "1")
        assert done.returncode == 1
        assert "FAILED shop/web-1: timed out after 1s" in done.stderr and "Traceback" not in done.stderr
        assert gate.condition(api.pod("shop", "web-1"), GATE)["status"] == "False"

        api.kubelet.set_mode("normal", "shop", "web-1")
        done = set_image(kubeconfig, "-l", "tier=web", "--max-unavailable", "50%", f"app={NEW}",
                         "side=registry.example/side:2.0", "--grace-period", "0.1", "--timeout", "5")
        assert done.returncode == 0, done.stderr
        assert "2 updated, 0 failed, 0 not started" in done.stdout
        assert "the gate is already False (InPlaceUpdateFailed); taking over" in done.stdout


def test_its_requests_say_who_sent_them(tmp_path: Path) -> None:
    with cluster("web-0") as (api, _):  # (the controller runs in the test's process)
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
        done = set_image(kubeconfig, "web-0", f"app={NEW}", "--grace-period", "0", "--timeout", "5")
        assert done.returncode == 0, done.stderr
        agent = user_agent("set-image")
        ours = [call for call in api.calls if call.user_agent == agent]
        assert {(c.method, c.subresource) for c in ours if c.field_manager} == {("PATCH", "status"), ("PATCH", None)}
        assert {c.field_manager for c in ours if c.method != "GET"} == {FIELD_MANAGER} == {"fieldwarden-set-image"}
        # Everything else is the controller's: the list + watch of all pods, and its marks.
        others = [call for call in api.calls if call.user_agent != agent]
        assert all(c.field_manager == CONTROLLER or (c.method == "GET" and c.namespace is None) for c in others)
        assert all(c.field_manager == FIELD_MANAGER for c in api.writes() if c.name == "web-0" and c.subresource is None)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["web-0"], "give at least one CONTAINER=IMAGE"),
        (["-l", "tier=web", "--max-unavailable", "0", "app=x:1"], "--max-unavailable must be"),
        (["web-0", "app=x:1", "--timeout", "0"], "--timeout"),
    ],
)
def test_usage_errors_exit_2_before_touching_the_cluster(tmp_path: Path, args: list[str], words: str) -> None:
    done = set_image(write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9"), *args)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


def test_no_cluster_or_a_broken_kubeconfig_is_a_clear_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("not: [a kubeconfig\n")
    for kubeconfig, words in ((tmp_path / "absent", "set-image needs a cluster"),
                              (broken, "the kubeconfig does not load")):
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        done = subprocess.run([sys.executable, "-m", "fieldwarden", "set-image", "web-0", "app=a:2"],
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2, done.stderr
        assert words in done.stderr and "Traceback" not in done.stderr
