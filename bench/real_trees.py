"""Trees built from the pinned checkouts (real_inputs.py) for lint_speed.py's rows f and g.

`mixed_tree` copies chosen chart folders, kustomize roots (with what they build on) and plain
folders of eight repositories into one new git repository, each under `<repository>/<its path>`,
so the units keep their relative paths. What is copied (MIXED) is written down here; the counts
it makes (charts, kustomize roots, plain folders, objects) are printed by the bench.

`kubeflow_tree` copies kubeflow/manifests whole; `plain_files` names its files that no unit reads
(the "plain lint" row g compares a warm run with).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from real_inputs import checkout

_GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]

# (repository folder, paths inside it). A kustomize root comes with the folders it includes, so
# the copied path is the smallest folder holding a root and its bases.
_HELM_CHARTS = (
    "alertmanager", "alertmanager-snmp-notifier", "jiralert", "kube-state-metrics", "prom-label-proxy", "prometheus",
    "prometheus-adapter", "prometheus-blackbox-exporter", "prometheus-cloudwatch-exporter",
    "prometheus-conntrack-stats-exporter", "prometheus-consul-exporter", "prometheus-couchdb-exporter",
    "prometheus-druid-exporter", "prometheus-elasticsearch-exporter", "prometheus-fastly-exporter",
    "prometheus-ipmi-exporter", "prometheus-json-exporter", "prometheus-kafka-exporter", "prometheus-memcached-exporter",
    "prometheus-modbus-exporter", "prometheus-mongodb-exporter", "prometheus-mysql-exporter", "prometheus-nats-exporter",
    "prometheus-nginx-exporter", "prometheus-node-exporter", "prometheus-operator-admission-webhook",
    "prometheus-pgbouncer-exporter", "prometheus-pingdom-exporter", "prometheus-pingmesh-exporter",
    "prometheus-postgres-exporter", "prometheus-pushgateway", "prometheus-rabbitmq-exporter", "prometheus-redis-exporter",
    "prometheus-smartctl-exporter", "prometheus-snmp-exporter", "prometheus-sql-exporter",
    "prometheus-stackdriver-exporter", "prometheus-statsd-exporter", "prometheus-systemd-exporter",
)
MIXED: tuple[tuple[str, tuple[str, ...]], ...] = (
    # charts: 39 of prometheus-community's + podinfo, metrics-server, gatekeeper, ingress-nginx, microservices-demo
    ("helm-charts", tuple(f"charts/{name}" for name in _HELM_CHARTS)),
    ("podinfo", ("charts/podinfo", "deploy/bases", "deploy/overlays", "kustomize")),  # 4 kustomize roots
    ("metrics-server", ("charts/metrics-server", "manifests")),  # 5 roots
    ("gatekeeper", ("charts/gatekeeper", "config", "deploy")),  # roots of config/, deploy/ plain
    ("ingress-nginx", ("charts/ingress-nginx", "deploy")),  # deploy/static/provider/*, prometheus, grafana
    ("microservices-demo", ("helm-chart", "kustomize", "release", "istio-manifests")),  # release/, istio-manifests/ plain
    ("argo-cd", ("manifests/cluster-install", "manifests/namespace-install", "manifests/core-install", "manifests/base",
                 "manifests/crds", "manifests/cluster-rbac", "examples/k8s-rbac")),
    ("kustomize", ("examples/helloWorld", "examples/ldap", "examples/multibases", "examples/springboot",
                   "examples/wordpress", "examples/transformerconfigs", "examples/mySql")),
    ("microservices-demo", ("kubernetes-manifests",)),
)


def git_repo(folder: Path) -> None:
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
        subprocess.run([*_GIT, *command], cwd=folder, check=True, stdout=subprocess.DEVNULL)


def mixed_tree(repos: Path | None, destination: Path) -> str:
    """Build the mixed tree in `destination` (a new git repository); "" or why it cannot be built."""
    for folder in dict.fromkeys(name for name, _ in MIXED):
        path, why = checkout(repos, folder)
        if path is None:
            return why
    assert repos is not None
    shutil.rmtree(destination, ignore_errors=True)
    destination.mkdir(parents=True)
    for folder, paths in MIXED:
        for path in paths:
            source = repos / folder / path
            if source.exists():
                shutil.copytree(source, destination / folder / path, symlinks=True, dirs_exist_ok=True)
    git_repo(destination)
    return ""


def kubeflow_tree(repos: Path | None, destination: Path) -> str:
    """kubeflow/manifests copied whole (without its .git) into `destination`; "" or why not."""
    path, why = checkout(repos, "manifests")
    if path is None:
        return why
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(path, destination, symlinks=True, ignore=shutil.ignore_patterns(".git", ".fieldwarden_cache"))
    git_repo(destination)
    return ""


def without_units(tree: Path) -> None:
    """Turn a tree's units off (row g's baseline): its kustomization files and Chart.yaml removed, committed."""
    names = ("kustomization.yaml", "kustomization.yml", "Kustomization", "Chart.yaml")
    for path in sorted(tree.rglob("*")):
        if path.name in names and ".git" not in path.relative_to(tree).parts and path.is_file():
            path.unlink()
    for command in (["add", "-A"], ["commit", "-q", "-m", "units off"]):
        subprocess.run([*_GIT, *command], cwd=tree, check=True, stdout=subprocess.DEVNULL)
