"""The quick start (docs/quickstart.md) run as written against a real kube-apiserver.

The page shows the steps of docs/quickstart/quickstart.sh (pymdownx.snippets sections); this test
runs the same sections, in order, with bash, from the repository's root, and checks what each
prints (every line of the `console` block the page shows after a step, `...` matching anything) and
what the API server then holds. Only what needs kind and docker is not run: making the
cluster, building and loading the image, deleting the cluster. In their place:

- the cluster: tests/e2e/helm_release.py's (etcd, kube-apiserver giving Services ClusterIPs on
  loopback, kube-controller-manager: Deployments, ReplicaSets, the endpoints, the HPA controller,
  ServiceAccounts and namespace deletion are the real ones);
- `helm`: a stand-in on PATH running Helm's own engine (helm-python-sdk) for the chart;
- the node: tests/e2e/kubelet.py's stand-in, one per namespace, running pods (made-up IPs: the
  Service's endpoints) and deleting them once they terminate;
- the image: what the chart's pods would run (`fieldwarden serve` with the serving Secret the chart
  made, listening on the webhook Service's ClusterIP and port, where kube-proxy would forward to a
  pod; `fieldwarden controller`), started after `install`, as the pods would. The API server calls
  the webhook through the chart's Service and checks its certificate against the chart's caBundle.
  Serving on the Service's port, 443, needs root or CAP_NET_BIND_SERVICE (else the test is skipped).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from fieldwarden.policies.config import Settings
from fieldwarden.webhook.gate.process import gate_settings
from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.conftest import unavailable
from tests.e2e.helm_release import RELEASES_CLUSTER, Helm
from tests.e2e.host_pods import Node, check_can_serve, register_node, serve_webhook, service_address
from tests.e2e.install import Installation, container_args
from tests.e2e.kubectl import Kubectl, Result, find_kubectl
from tests.e2e.processes import Process, wait_for
from tests.helm.chart import REPO

SCRIPT = REPO / "docs" / "quickstart" / "quickstart.sh"
PAGE = REPO / "docs" / "quickstart.md"
NOT_RUN = ("cluster", "image", "delete-cluster")  # kind and docker
RUN = ("install", "wait", "certificate", "namespace", "gate", "image-update", "other-update", "autoscaler",
       "deploy", "uninstall")
MARK = re.compile(r"^# --8<-- \[(start|end):([a-z-]+)\]$")
STEP_TIMEOUT = 240.0
WEBHOOKS = ("readiness-gate.fieldwarden.io", "autoscaler-ownership.fieldwarden.io",
            "image-only-pod-updates.fieldwarden.io")
Obj = dict[str, Any]


def sections(text: str) -> dict[str, str]:
    """The script's steps by name, in order: the lines between `# --8<-- [start:NAME]` and `[end:NAME]`."""
    found: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        mark = MARK.match(line)
        if mark and mark.group(1) == "start":
            assert current is None, f"step {mark.group(2)} starts inside step {current}"
            current, lines = mark.group(2), []
        elif mark:
            assert current == mark.group(2), f"step {mark.group(2)} ends, but {current} was open"
            found[mark.group(2)] = "\n".join(lines) + "\n"
            current = None
        elif current is not None:
            lines.append(line)
    assert current is None, f"step {current} never ends"
    return found


def shown(page: str) -> dict[str, list[str]]:
    """The lines of the `console` blocks the page shows after each step (up to the next step), stripped."""
    found: dict[str, list[str]] = {}
    step = None
    for block in re.finditer(r'--8<-- "docs/quickstart/quickstart\.sh:([a-z-]+)"|```console\n(.*?)```', page, re.S):
        if block.group(1):
            step = block.group(1)
        elif step is not None:
            found.setdefault(step, []).extend(line.strip() for line in block.group(2).splitlines() if line.strip())
    return found


def printed(expected: str, output: str) -> bool:
    """Whether a line of the page (`...`: anything) is a line of the output."""
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return any(re.fullmatch(pattern, line.strip()) for line in output.splitlines())


def test_every_step_of_the_script_is_on_the_page_and_run_here_unless_it_needs_kind() -> None:
    steps = sections(SCRIPT.read_text())
    assert set(steps) == set(RUN) | set(NOT_RUN)
    assert [s for s in steps if s in RUN] == list(RUN)  # the order the test runs them in
    included = re.findall(r'--8<-- "docs/quickstart/quickstart\.sh:([a-z-]+)"', PAGE.read_text())
    assert included == list(steps)  # each step once, in the script's order
    assert set(shown(PAGE.read_text())) <= set(RUN)  # the output shown is output checked
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


# --- the stand-ins -------------------------------------------------------------------------------


class Shell:
    """bash in the repository's root, with `helm` (the stand-in) and kubectl first on PATH."""

    def __init__(self, cluster: Cluster, kubectl: Path, folder: Path) -> None:
        tools = folder / "bin"
        tools.mkdir(parents=True)
        helm = tools / "helm"
        helm.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tests.e2e.helm_release "$@"\n')
        helm.chmod(0o755)
        (tools / "kubectl").symlink_to(kubectl)
        self.env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
        self.env.update(PATH=f"{tools}{os.pathsep}{os.environ.get('PATH', '')}", KUBECONFIG=str(cluster.kubeconfig),
                        HOME=str(folder), PYTHONPATH=str(REPO), NO_PROXY="127.0.0.1,localhost")

    def __call__(self, step: str, text: str) -> Result:
        argv = ["bash", "-euo", "pipefail", "-c", text]
        try:
            done = subprocess.run(argv, cwd=REPO, env=self.env, capture_output=True, text=True, timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired as expired:
            raise AssertionError(f"step {step} did not finish within {STEP_TIMEOUT:g} s: "
                                 f"{expired.stdout!r} {expired.stderr!r}") from None
        return Result([f"step {step}:\n{text}"], done.returncode, done.stdout, done.stderr)


class Pods:
    """What the chart's pods would run, here: the webhook on its Service's ClusterIP and port
    (tests/e2e/host_pods.py) and one controller (tests/e2e/install.py's, with the Deployment's arguments)."""

    def __init__(self, cluster: Cluster, kubectl: Kubectl, folder: Path) -> None:
        self.cluster, self.kubectl, self.folder = cluster, kubectl, folder
        self.webhook: Process | None = None
        self.installation: Installation | None = None

    def start(self) -> None:
        address = service_address(self.kubectl, "fieldwarden", "fieldwarden")
        self.webhook = serve_webhook(self.cluster, self.kubectl, "fieldwarden", "fieldwarden", address,
                                     self.folder / "webhook")
        listed = self.kubectl.json("get", "deployments,configmaps", "-n", "fieldwarden",
                                   "-l", "app.kubernetes.io/instance=fieldwarden")
        objects: list[Obj] = listed["items"]
        config = yaml.safe_load(next(o for o in objects if o["kind"] == "ConfigMap")["data"]["config.yaml"]) or {}
        condition_type, selector = gate_settings(Settings(config))
        key, value = selector.split("=", 1)
        self.installation = Installation(self.cluster, self.kubectl, self.folder, objects, condition_type, (key, value))
        self.installation.start_controller("quickstart")

    def logs(self, lines: int = 25) -> str:
        parts = [f"----- fieldwarden-serve:\n{self.webhook.tail(lines)}"] if self.webhook else []
        return "\n".join(parts + ([self.installation.logs(lines)] if self.installation else []))

    def stop(self) -> None:
        if self.installation is not None:
            self.installation.stop()
        if self.webhook is not None:
            self.webhook.stop(grace=30)


@pytest.fixture
def quickstart(start_cluster: Callable[[ClusterOptions], Cluster], failure_logs: list[Any],
               tmp_path: Path) -> Iterator[tuple[Cluster, Kubectl, Shell, Pods]]:
    check_can_serve()
    cluster = start_cluster(RELEASES_CLUSTER)
    binary = find_kubectl(cluster.assets.kubectl)
    if binary is None or cluster.controller_manager is None:
        unavailable("the quick start test needs kubectl and kube-controller-manager")
    kubectl = Kubectl(binary, cluster.kubeconfig, tmp_path / "kubectl-cache")
    register_node(cluster)
    nodes = [Node(cluster, namespace).start() for namespace in ("fieldwarden", "demo")]
    pods = Pods(cluster, kubectl, tmp_path / "pods")
    pods.folder.mkdir()
    failure_logs.append(pods)
    try:
        yield cluster, kubectl, Shell(cluster, binary, tmp_path), pods
    finally:
        Helm(cluster.kubeconfig, "fieldwarden").uninstall("fieldwarden")  # (gone already when the test passed)
        pods.stop()
        failure_logs.remove(pods)
        for node in nodes:
            node.stop()
        assert all(node.error is None for node in nodes), [node.error for node in nodes]


def leads_to_the_webhook_pods(kubectl: Kubectl) -> bool:
    """Whether the webhook Service's endpoints, where kube-proxy would forward its ClusterIP, are the webhook
    Deployment's pods at the port the webhook binds (the API server here dials the ClusterIP itself)."""
    deployment = kubectl.get("deployment", "fieldwarden-webhook", "fieldwarden")
    labels = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())
    pods = kubectl.json("get", "pods", "-n", "fieldwarden", "-l", labels)["items"]
    bind = next(arg for arg in container_args(deployment) if arg.startswith("--bind="))
    subsets = kubectl.get("endpoints", "fieldwarden-webhook", "fieldwarden").get("subsets") or []
    addresses = sorted(address["ip"] for subset in subsets for address in subset.get("addresses") or [])
    ports = {port["port"] for subset in subsets for port in subset["ports"]}
    return (len(pods) == deployment["spec"]["replicas"] and ports == {int(bind.rsplit(":", 1)[1])}
            and addresses == sorted(pod["status"].get("podIP", "") for pod in pods))


def test_the_quick_start_runs_as_written(quickstart: tuple[Cluster, Kubectl, Shell, Pods]) -> None:
    cluster, kubectl, shell, pods = quickstart
    steps = sections(SCRIPT.read_text())

    page = shown(PAGE.read_text())

    def run(step: str, code: int = 0) -> Result:
        done = shell(step, steps[step])
        assert (done.code == 0) == (code == 0), str(done)
        missing = [line for line in page.get(step, []) if not printed(line, done.stdout + done.stderr)]
        assert missing == [], f"the page shows lines that step {step} did not print: {missing}\n{done}"
        return done

    assert "STATUS: deployed" in run("install").stdout
    pods.start()  # the image, running
    done = run("wait")
    for name in ("fieldwarden-webhook", "fieldwarden-controller"):
        assert f'deployment "{name}" successfully rolled out' in done.stdout, str(done)
    wait_for(lambda: leads_to_the_webhook_pods(kubectl), "the webhook Service's endpoints: its pods", 30)

    done = run("certificate")
    assert sorted(line for line in done.stdout.splitlines() if "CA" in line) == sorted(
        f"{name} trusts the release's CA" for name in WEBHOOKS), str(done)
    assert "DNS:fieldwarden-webhook.fieldwarden.svc," in done.stdout and "notAfter=" in done.stdout, str(done)

    run("namespace")  # (the ServiceAccount controller makes `default` a moment later, as in any cluster)
    wait_for(lambda: kubectl("get", "serviceaccount", "default", "-n", "demo", check=False).code == 0,
             "ServiceAccount demo/default", 30)

    # FW402: the webhook (called by the API server through the Service, its certificate checked against
    # the caBundle) adds the gate; the controller sets its condition, so the pod gets ready.
    done = run("gate")
    assert '[{"conditionType":"InPlaceUpdateReady"}]' in done.stdout and "pod/web condition met" in done.stdout, \
        str(done)

    # FW401: an image change passes, anything else is refused, naming the field.
    assert "pod/web image updated" in run("image-update").stdout
    assert kubectl.get("pod", "web", "demo")["spec"]["containers"][0]["image"] == "nginx:1.28"
    done = run("other-update", code=1)
    assert "FW401" in done.stderr and "spec.activeDeadlineSeconds" in done.stderr, str(done)
    assert "activeDeadlineSeconds" not in kubectl.get("pod", "web", "demo")["spec"]

    # FW403: the HPA scales to its minimum (3); a deploy of the manifest (2) keeps 3.
    done = run("autoscaler")
    assert "deployment.apps/api created" in done.stdout and "deployment.apps/api condition met" in done.stdout, \
        str(done)
    done = run("deploy")
    assert done.stdout.splitlines()[-1] == "3" and "deployment.apps/api configured" in done.stdout, str(done)
    assert "[FW403 autoscaler-owned-field-reset] kept spec.replicas=3" in done.stderr, str(done)
    assert kubectl.get("deployment", "api", "demo")["spec"]["replicas"] == 3

    # Removal: the release and both namespaces gone; the API server calls no webhook any more.
    done = run("uninstall")
    assert 'release "fieldwarden" uninstalled' in done.stdout and 'namespace "demo" deleted' in done.stdout, str(done)
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        gone = kubectl("get", kind, "fieldwarden", check=False)
        assert gone.code == 1 and "NotFound" in gone.stderr, str(gone)
    for namespace in ("demo", "fieldwarden"):
        gone = kubectl("get", "namespace", namespace, check=False)
        assert gone.code == 1 and "NotFound" in gone.stderr, str(gone)
