"""FW601 unknown-kind: the target version's built-in API, offline (kubernetes-validate's schemas)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fieldwarden.policies.rules import unknown_kind
from fieldwarden.policies.schemas import builtin
from tests.helpers import FIXTURES, git_repo, lint, write

SCHEMAS = FIXTURES / "rules" / "schemas"


def copy(tmp_path: Path, name: str) -> Path:
    shutil.copytree(SCHEMAS / name, tmp_path / name)
    git_repo(tmp_path)
    return tmp_path / name


def messages(tmp_path: Path, *args: str) -> list[tuple[str, int, int, str, str]]:
    run = lint(["--select", "FW601", *args], cwd=tmp_path)
    assert run.code in (0, 1), run.stderr
    return sorted((Path(f["file"]).name, f["line"], f["column"], f["severity"], f["message"]) for f in run.findings)


def test_a_typo_and_a_removed_version_on_their_lines(tmp_path: Path) -> None:
    copy(tmp_path, "plain")
    assert messages(tmp_path, "--k8s-version", "1.32", "plain") == [
        ("issue.yaml", 3, 1, "error", 'apps/v1 has no kind "Deploymnet" in Kubernetes 1.32; did you mean Deployment?'),
        ("issue.yaml", 7, 1, "error", "Deployment extensions/v1beta1 was removed in Kubernetes 1.16; use apps/v1"),
    ]


def test_common_kinds_pass_in_every_version_the_schemas_carry(tmp_path: Path) -> None:
    copy(tmp_path, "plain")
    for version in builtin.versions():
        assert messages(tmp_path, "--k8s-version", version, "plain/clean.yaml") == [], version


@pytest.mark.parametrize(("api_version", "kind", "target", "line", "severity", "message"), [
    ("batch/v1beta1", "CronJob", "1.32", 1, "error", "CronJob batch/v1beta1 was removed in Kubernetes 1.25; use batch/v1"),
    ("policy/v1beta1", "PodDisruptionBudget", "1.25", 1, "error",
     "PodDisruptionBudget policy/v1beta1 was removed in Kubernetes 1.25; use policy/v1"),
    ("policy/v1beta1", "PodSecurityPolicy", "1.30", 1, "error",
     "PodSecurityPolicy policy/v1beta1 was removed in Kubernetes 1.25; PodSecurityPolicy has no replacement"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.26", 1, "error",
     "HorizontalPodAutoscaler autoscaling/v2beta2 was removed in Kubernetes 1.26; use autoscaling/v2"),
    # still served by 1.25: deprecated, a warning
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.25", 1, "warning",
     "HorizontalPodAutoscaler autoscaling/v2beta2 is deprecated since Kubernetes 1.23 and removed in 1.26; use autoscaling/v2"),
    ("networking.k8s.io/v1beta1", "Ingress", "1.32", 1, "error",
     "Ingress networking.k8s.io/v1beta1 was removed in Kubernetes 1.22; use networking.k8s.io/v1"),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.32", 1, "error",
     "FlowSchema flowcontrol.apiserver.k8s.io/v1beta3 was removed in Kubernetes 1.32; use flowcontrol.apiserver.k8s.io/v1"),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.31", 1, "warning",
     "FlowSchema flowcontrol.apiserver.k8s.io/v1beta3 is deprecated since Kubernetes 1.29 and removed in 1.32; "
     "use flowcontrol.apiserver.k8s.io/v1"),
    ("v1", "Deployment", "1.32", 1, "error", 'v1 has no kind "Deployment" in Kubernetes 1.32; Deployment is in apps/v1'),
    ("apps/v2", "Deployment", "1.32", 1, "error", 'Kubernetes 1.32 has no API version "apps/v2"; Deployment is in apps/v1'),
    ("apps/v1", "Gizmo", "1.32", 2, "error",
     'apps/v1 has no kind "Gizmo" in Kubernetes 1.32; it has ControllerRevision, ControllerRevisionList, DaemonSet, '
     "DaemonSetList, Deployment, DeploymentList, ReplicaSet, ReplicaSetList, StatefulSet, StatefulSetList"),
    ("v1", "configmap", "1.32", 2, "error", 'v1 has no kind "configmap" in Kubernetes 1.32; did you mean ConfigMap?'),
])
def test_removed_deprecated_and_unknown(tmp_path: Path, api_version: str, kind: str, target: str, line: int,
                                        severity: str, message: str) -> None:
    write(tmp_path, "object.yaml", f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: x\n")
    assert messages(tmp_path, "--k8s-version", target, "object.yaml") == [("object.yaml", line, 1, severity, message)]


def test_a_kubeconfig_is_no_api_object(tmp_path: Path) -> None:
    write(tmp_path, "kubeconfig.yaml", "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    assert messages(tmp_path, "kubeconfig.yaml") == []


def test_custom_resources_are_not_this_rules_business(tmp_path: Path) -> None:
    write(tmp_path, "cr.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\n"
                               "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: m\n")
    assert messages(tmp_path, "cr.yaml") == []


def test_through_helm_and_kustomize_renders(tmp_path: Path) -> None:
    copy(tmp_path, "chart")
    assert messages(tmp_path, "--k8s-version", "1.32", "chart") == [
        ("cronjob.yaml", 1, 1, "error", "CronJob batch/v1beta1 was removed in Kubernetes 1.25; use batch/v1")]


def test_every_removal_names_a_replacement_the_newest_schemas_carry() -> None:
    newest = builtin.index(builtin.versions()[-1])
    for (api_version, kind), (removed, replacement, deprecated) in unknown_kind.REMOVED.items():
        assert tuple(map(int, deprecated.split("."))) < tuple(map(int, removed.split(".")))
        assert replacement == "" or kind in newest[replacement], (api_version, kind)
