"""The harness itself: a cluster with options restarts on its port with its data, compacts, stops cleanly;
children die with the test process; without binaries the suite is skipped, or fails where it must run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.assets import REPO, Assets
from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.processes import wait_for

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MUTATED = "e2e.fieldwarden.io/mutated"
POLICY = {  # the alpha MutatingAdmissionPolicy of Kubernetes 1.32: label every new ConfigMap
    "apiVersion": "admissionregistration.k8s.io/v1alpha1", "kind": "MutatingAdmissionPolicy",
    "metadata": {"name": "label-configmaps"},
    "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                "resources": ["configmaps"]}]},
        "failurePolicy": "Fail", "reinvocationPolicy": "Never",
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": f'Object{{metadata: Object.metadata{{labels: {{"{MUTATED}": "yes"}}}}}}'}}],
    },
}
BINDING = {"apiVersion": "admissionregistration.k8s.io/v1alpha1", "kind": "MutatingAdmissionPolicyBinding",
           "metadata": {"name": "label-configmaps"}, "spec": {"policyName": "label-configmaps"}}


def config_map(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"value": value}}


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting for a parent that is not us."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_cluster_with_the_policy_alpha_restarts_on_its_port_with_its_data_compacts_and_stops(
        kube_assets: Assets, tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, kube_assets, ClusterOptions(mutating_admission_policy=True)).start()
    try:
        api = cluster.api
        api.create("/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies", POLICY)
        api.create("/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicybindings", BINDING)

        def labelled() -> bool:  # the API server loads policies a moment after they are stored
            probe = api.request("POST", CONFIGMAPS, config_map("probe", "x"), query={"dryRun": "All"})
            assert probe.ok, probe.body
            return bool(probe.body["metadata"].get("labels", {}).get(MUTATED) == "yes")

        wait_for(labelled, "the MutatingAdmissionPolicy to label a ConfigMap", 20, interval=0.2)

        first = api.create(CONFIGMAPS, config_map("kept", "1"))["metadata"]["resourceVersion"]
        for value in ("2", "3"):
            current = api.get(f"{CONFIGMAPS}/kept")
            current["data"]["value"] = value
            assert api.request("PUT", f"{CONFIGMAPS}/kept", current).ok
        old_list = {"resourceVersion": first, "resourceVersionMatch": "Exact"}
        assert api.request("GET", CONFIGMAPS, query=old_list).status == 200  # etcd still has that revision
        assert cluster.compact_etcd() > int(first)
        expired = api.request("GET", CONFIGMAPS, query=old_list)
        assert expired.status == 410 and expired.body["reason"] == "Expired", expired.body

        assert cluster.etcd is not None and cluster.apiserver is not None
        port, etcd_pid, old_pid = cluster.port, cluster.etcd.pid, cluster.apiserver.pid
        assert cluster.restart_apiserver() < 30
        assert cluster.port == port and cluster.apiserver.pid != old_pid and gone(old_pid)
        assert cluster.etcd.pid == etcd_pid
        kept = api.get(f"{CONFIGMAPS}/kept")
        assert kept["data"] == {"value": "3"} and kept["metadata"]["labels"] == {MUTATED: "yes"}
    finally:
        pids = [p.pid for p in cluster.processes()]
        cluster.stop()
    assert pids and all(gone(pid) for pid in pids)
    starts = [line for line in (tmp_path / "kube-apiserver.log").read_text().splitlines() if line.startswith("--- ")]
    assert len(starts) == 2  # both runs, in one log


def test_children_are_stopped_when_the_test_process_is_killed(tmp_path: Path) -> None:
    script = ("import sys, time; from pathlib import Path; from tests.e2e.processes import Process; "
              "p = Process('sleeper', ['sleep', '60'], Path(sys.argv[1])).start(); "
              "print(p.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "sleeper.log")], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert not gone(child)
        parent.send_signal(signal.SIGKILL)  # no atexit hook runs: only the parent-death signal is left
        parent.wait(10)
        wait_for(lambda: gone(child), "the child to get SIGTERM from the kernel", 10)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)


def run_suite_without_binaries(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "empty").mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k not in ("FIELDWARDEN_REQUIRE_E2E", "FIELDWARDEN_KUBE_ASSETS")}
    environment.update(KUBEBUILDER_ASSETS=str(tmp_path / "empty"), **env)
    test = "tests/e2e/test_readiness_gate.py::test_a_server_dry_run_shows_the_gate_and_stores_nothing"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           f"--basetemp={tmp_path / uuid.uuid4().hex[:6]}", test],
                          cwd=REPO, env=environment, capture_output=True, text=True, timeout=120)


def test_without_binaries_the_suite_is_skipped_saying_how_to_provide_them(tmp_path: Path) -> None:
    done = run_suite_without_binaries(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "has no executable kube-apiserver or etcd; set KUBEBUILDER_ASSETS" in done.stdout
    assert "apt-get install etcd-server" in done.stdout


def test_where_the_suite_must_run_missing_binaries_fail_it(tmp_path: Path) -> None:
    done = run_suite_without_binaries(tmp_path, FIELDWARDEN_REQUIRE_E2E="1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout and "skipped" not in done.stdout
    assert "FIELDWARDEN_REQUIRE_E2E=1: the end-to-end tests must run" in done.stdout


@pytest.mark.parametrize("marker, selected", [("e2e", True), ("not e2e", False)])
def test_the_marker_selects_this_folder(marker: str, selected: bool, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", marker, "tests/e2e/test_assets.py", "tests/test_explain.py"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected and all(("tests/e2e/" in line) == selected for line in collected)
