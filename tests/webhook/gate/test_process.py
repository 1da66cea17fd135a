"""`fieldwarden controller` as a process, against the Kubernetes API test fake: probes, metrics, SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from fieldwarden.policies.config import Settings
from fieldwarden.webhook.gate.process import gate_settings
from fieldwarden.webhook.kube.api import user_agent
from tests.webhook.exposition import value
from tests.webhook.fake_apiserver import LEASE, FakeApiServer
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.pods import gated_pod
from tests.webhook.gate.test_controller import serving
from tests.webhook.waiting import eventually


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_gate_settings_follow_fw402_configuration() -> None:
    assert gate_settings(Settings()) == ("InPlaceUpdateReady", "fieldwarden.io/readiness-gate=injected")
    custom = Settings({"rules": {"FW402": {"condition-type": "example.com/drained",
                                           "injected-label": {"key": "example.com/gated", "value": "yes"}}}})
    assert gate_settings(custom) == ("example.com/drained", "example.com/gated=yes")


def test_the_controller_process_marks_pods_serves_probes_and_releases_its_lease(tmp_path: Path) -> None:
    with FakeApiServer() as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, namespace="fieldwarden")
        api.add_pod(gated_pod("web-0"))
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        process = subprocess.Popen(
            [sys.executable, "-m", "fieldwarden", "controller", "--bind", "127.0.0.1:0", "--identity", "replica-a",
             "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        try:
            assert process.stdout is not None
            banner = process.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:(\d+)", banner)
            assert found, banner
            base = f"http://127.0.0.1:{found.group(1)}"
            assert "lease fieldwarden/fieldwarden-controller" in banner
            api.wait_for_pod("shop", "web-0", serving, timeout=10)
            eventually(lambda: get(base + "/readyz")[0] == 200, "ready")
            assert get(base + "/healthz")[0] == 200
            assert get(base + "/nothing")[0] == 404
            status, metrics = get(base + "/metrics")
            assert status == 200
            assert value(metrics, "fieldwarden_controller_pods_marked_total") == 1
            assert value(metrics, "fieldwarden_controller_leader") == 1
            assert value(metrics, "fieldwarden_controller_pods_watched") == 1
            assert api.get(LEASE, "fieldwarden", "fieldwarden-controller")["spec"]["holderIdentity"] == "replica-a"
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0
            assert api.get(LEASE, "fieldwarden", "fieldwarden-controller")["spec"]["holderIdentity"] == ""
            # Every request says which program sent it; every write (status, Lease) names its field manager.
            assert {call.user_agent for call in api.calls} == {user_agent("controller")}
            writes = [w for w in api.writes() if w.status < 300]
            assert {(w.method, w.collection, w.subresource) for w in writes} >= {
                ("PATCH", "pods", "status"), ("POST", LEASE, None), ("PUT", LEASE, None)}
            assert {w.field_manager for w in api.writes()} == {"fieldwarden-controller"}
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(5)
            stderr = process.stderr.read() if process.stderr else ""
        assert "Traceback" not in stderr


def test_the_controller_refuses_to_start_without_a_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "absent"), "HOME": str(tmp_path)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    done = subprocess.run([sys.executable, "-m", "fieldwarden", "controller"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 2
    assert "the controller needs a cluster" in done.stderr and "Traceback" not in done.stderr


def start_controller(kubeconfig: Path, identity: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "fieldwarden", "controller", "--bind", "127.0.0.1:0", "--identity", identity,
         "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    assert process.stdout is not None
    found = re.search(r"http://127\.0\.0\.1:(\d+)", process.stdout.readline())
    assert found
    return process, f"http://127.0.0.1:{found.group(1)}"


def test_when_the_leading_process_dies_the_standby_takes_over_within_the_lease_duration(tmp_path: Path) -> None:
    with FakeApiServer() as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, namespace="fieldwarden")
        processes = dict(start_controller(kubeconfig, identity) for identity in ("replica-a", "replica-b"))
        try:
            def holder() -> str:
                try:
                    return str(api.get(LEASE, "fieldwarden", "fieldwarden-controller")["spec"]["holderIdentity"])
                except KeyError:
                    return ""

            eventually(lambda: holder() in ("replica-a", "replica-b"), "a leader", timeout=15)
            leader = holder()
            by_identity = {identity: process for process, identity in
                           zip(processes, ("replica-a", "replica-b"))}
            standby = "replica-b" if leader == "replica-a" else "replica-a"
            by_identity[leader].kill()  # no release: the lease must expire
            by_identity[leader].wait(10)
            killed_at = time.monotonic()
            eventually(lambda: holder() == standby, "the standby takes the lease", timeout=15)
            assert time.monotonic() - killed_at < 3 + 2  # the lease duration, plus retry slack
            api.add_pod(gated_pod("after-failover"))
            api.wait_for_pod("shop", "after-failover", serving, timeout=10)
            status, metrics = get(processes[by_identity[standby]] + "/metrics")
            assert status == 200 and value(metrics, "fieldwarden_controller_leader") == 1
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                process.wait(10)
