"""`fieldwarden set-image` behind a real kube-apiserver, with a kubelet stand-in (tests/e2e/kubelet.py).

A gated pod is created with kubectl (the webhook injects the gate, the controller marks it, the
stand-in runs its containers and reports it Ready); `set-image` then drains it (gate "False", so
Ready goes False), changes the image, waits for the container to restart with the new imageID and
be ready, and puts the gate back to "True". The tests read the outcome from the API server: the
spec, the container statuses, the order of the pod's versions as a watch delivered them, and
managedFields (who wrote what). With `-l`, pods are updated `--max-unavailable` at a time.

set-image runs as a user whose only rights in the namespace are the chart's set-image ClusterRole
(bound with a RoleBinding, as the chart's notes suggest): RBAC says that role is enough.

The API-fake counterparts (tests/webhook/gate/test_set_image.py, test_inplace.py) stay: they
also run what a real server will not do on demand (a kubelet that stalls, fails to pull,
crash-loops).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from fieldwarden.webhook.gate import condition as gate
from fieldwarden.webhook.gate.controller import FIELD_MANAGER as CONTROLLER
from fieldwarden.webhook.gate.set_image import FIELD_MANAGER as SET_IMAGE
from tests.e2e.cluster import Cluster
from tests.e2e.install import Installation
from tests.e2e.kubectl import Kubectl
from tests.e2e.kubelet import FIELD_MANAGER as KUBELET
from tests.e2e.kubelet import Kubelet
from tests.e2e.processes import wait_for

OLD, NEW = "registry.example/web:1.0", "registry.example/web:2.0"
SIDE = "registry.example/side:1.0"
GRACE = "0.3"  # seconds set-image waits between the drain and the image change
SERVING_TIMEOUT = 20.0
Obj = dict[str, Any]


def pod_manifest(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": OLD}, {"name": "side", "image": SIDE}]}}


def condition(pod: Obj, kind: str) -> Obj | None:
    found: Obj | None = gate.condition(pod, kind)
    return found


def status_of(pod: Obj, kind: str) -> str | None:
    found = condition(pod, kind)
    return found["status"] if found else None


def container(pod: Obj, name: str) -> Obj:
    return next(s for s in pod["status"]["containerStatuses"] if s["name"] == name)


def image(pod: Obj, name: str) -> str:
    return str(next(c["image"] for c in pod["spec"]["containers"] if c["name"] == name))


@pytest.fixture
def kubelet(cluster: Cluster, namespace: str) -> Iterator[Kubelet]:
    node = Kubelet(cluster, namespace).start()
    try:
        yield node
    finally:
        node.stop()
    assert node.error is None, f"the kubelet stand-in failed: {node.error!r}"


def serving(cluster: Cluster, fieldwarden: Installation, namespace: str, *names: str) -> list[Obj]:
    """The pods once marked by the controller, running and Ready (bounded)."""
    def ready() -> list[Obj] | None:
        pods = [cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}") for name in names]
        return pods if all(status_of(p, fieldwarden.condition_type) == "True" and status_of(p, "Ready") == "True"
                           for p in pods) else None
    return wait_for(ready, f"{', '.join(names)} marked and Ready", SERVING_TIMEOUT)


@pytest.fixture
def release_engineer(fieldwarden: Installation, cluster: Cluster, namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig of a user who may do in `namespace` what the chart's set-image ClusterRole allows, no more."""
    role = fieldwarden.rendered("ClusterRole", "set-image")["metadata"]["name"]
    assert cluster.pki is not None
    user = "release-engineer"  # (bound in this namespace only)
    credentials = cluster.pki.client(f"{user}-{namespace}", user)
    cluster.api.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "set-image"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    return cluster.write_kubeconfig(tmp_path / "kubeconfig", client=credentials, namespace=namespace)


def set_image(fieldwarden: Installation, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`fieldwarden set-image ARGS` as a user runs it (with the chart's configuration)."""
    return subprocess.run(
        [sys.executable, "-m", "fieldwarden", "set-image", f"--kubeconfig={kubeconfig}",
         f"--config={fieldwarden.config_file()}", "--grace-period", GRACE, "--timeout", "30", *args],
        capture_output=True, text=True, env=fieldwarden.environment(), cwd=fieldwarden.folder, timeout=60)


def gate_changes(history: list[Obj], condition_type: str) -> list[tuple[str, str]]:
    """(status, reason) of the gate condition each time it changed, in watch order."""
    changes: list[tuple[str, str]] = []
    for pod in history:
        found = condition(pod, condition_type)
        if found is not None and (not changes or changes[-1] != (found["status"], found["reason"])):
            changes.append((found["status"], found["reason"]))
    return changes


def managers(pod: Obj) -> dict[tuple[str, str], Obj]:
    """managedFields by (manager, subresource): their fieldsV1."""
    return {(m["manager"], m.get("subresource", "")): m["fieldsV1"] for m in pod["metadata"]["managedFields"]}


def test_set_image_drains_changes_the_image_waits_for_the_new_container_and_puts_the_pod_back(
        fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str, kubelet: Kubelet,
        release_engineer: Path) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=pod_manifest("web"))
    before = serving(cluster, fieldwarden, namespace, "web")[0]
    side_id = container(before, "side")["containerID"]

    done = set_image(fieldwarden, release_engineer, "web", f"app={NEW}")  # (the context's namespace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{namespace}/web: updated in" in done.stdout and "same image" not in done.stdout

    pod = kubectl.json("get", "pod", "web", "-n", namespace, "--show-managed-fields")
    assert [c["image"] for c in pod["spec"]["containers"]] == [NEW, SIDE]
    app = container(pod, "app")
    assert app["imageID"] == kubelet.resolve(NEW) and app["restartCount"] == 1 and app["ready"] is True
    assert container(pod, "side")["containerID"] == side_id  # the other container was not restarted
    assert status_of(pod, "Ready") == "True"

    # The protocol, in the order the API server stored it.
    history = kubelet.history("web")
    assert gate_changes(history, fieldwarden.condition_type) == [
        ("True", gate.REASON_NEW_POD), ("False", gate.REASON_UPDATING), ("True", gate.REASON_UPDATED)]
    first_new = next(i for i, p in enumerate(history) if image(p, "app") == NEW)
    drained = history[first_new]
    assert status_of(drained, fieldwarden.condition_type) == "False"  # out of its Services before the change
    assert status_of(drained, "Ready") == "False"
    assert container(drained, "app")["imageID"] == kubelet.resolve(OLD)
    restored = next(i for i, p in enumerate(history) if i > first_new
                    and status_of(p, fieldwarden.condition_type) == "True")
    restarted = history[restored - 1]  # what set-image saw last: the new container, running and ready
    assert container(restarted, "app")["imageID"] == kubelet.resolve(NEW) and container(restarted, "app")["ready"]
    killed = [p for p in history[first_new:restored] if not container(p, "app")["ready"]]
    assert killed, "the old container was seen stopped before the new one ran"

    # Who wrote what: the image is set-image's, the gate condition its and the controller's, the
    # container statuses the node's; nothing is written as the client library's default manager.
    owners = managers(pod)
    assert owners[(SET_IMAGE, "")] == {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}}}}}
    gate_key = f'k:{{"type":"{fieldwarden.condition_type}"}}'
    assert set(owners[(SET_IMAGE, "status")]["f:status"]["f:conditions"]) == {gate_key}
    assert gate_key in owners[(CONTROLLER, "status")]["f:status"]["f:conditions"]
    assert "f:containerStatuses" in owners[(KUBELET, "status")]["f:status"]
    assert not any(m["manager"].startswith("OpenAPI-Generator") for m in pod["metadata"]["managedFields"])


def test_a_selector_updates_the_pods_one_at_a_time(
        fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str, kubelet: Kubelet,
        release_engineer: Path) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=[pod_manifest("web-0"), pod_manifest("web-1")])
    serving(cluster, fieldwarden, namespace, "web-0", "web-1")

    done = set_image(fieldwarden, release_engineer, "-n", namespace, "-l", "app=web", "--max-unavailable", "1",
                     f"app={NEW}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 updated, 0 failed, 0 not started" in done.stdout

    for pod in serving(cluster, fieldwarden, namespace, "web-0", "web-1"):
        assert image(pod, "app") == NEW and container(pod, "app")["imageID"] == kubelet.resolve(NEW)
    # Replaying the watch: never both pods out of service at once, and each drained once.
    drained: dict[str, bool] = {}
    most = 0
    for _, pod in list(kubelet.events):
        drained[pod["metadata"]["name"]] = status_of(pod, fieldwarden.condition_type) == "False"
        most = max(most, sum(drained.values()))
    assert most == 1
    for name in ("web-0", "web-1"):
        assert gate_changes(kubelet.history(name), fieldwarden.condition_type)[1:] == [
            ("False", gate.REASON_UPDATING), ("True", gate.REASON_UPDATED)]


def test_another_tag_of_the_same_image_restarts_the_container_and_is_reported(
        fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str, kubelet: Kubelet,
        release_engineer: Path) -> None:
    stable = "registry.example/web:stable"
    kubelet.digests[stable] = kubelet.resolve(OLD).split("@", 1)[1]  # one digest, two tags
    kubectl("apply", "-n", namespace, "-f", "-", stdin=pod_manifest("web"))
    serving(cluster, fieldwarden, namespace, "web")

    done = set_image(fieldwarden, release_engineer, "-n", namespace, "web", f"app={stable}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"app restarted with {stable}, which is the same image as before" in done.stdout
    pod = serving(cluster, fieldwarden, namespace, "web")[0]
    assert image(pod, "app") == stable and container(pod, "app")["restartCount"] == 1
    assert condition(pod, fieldwarden.condition_type)["reason"] == gate.REASON_UPDATED  # type: ignore[index]
