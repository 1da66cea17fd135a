"""FW603 kind-not-validated: a custom resource without its CRD at hand, once per kind in a run, as info."""

from __future__ import annotations

from pathlib import Path

from fieldwarden.policies.rules import kind_not_validated
from fieldwarden.policies.schemas.crd import Catalog
from tests.helpers import FIXTURES, git_repo, lint

CRD = (FIXTURES / "schema_agreement" / "widget-crd.yaml").read_text()
MONITORS = """\
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: api}
"""


def codes(obj: dict[str, object], crds: Catalog | None = None) -> list[tuple[tuple[str | int, ...], str]]:
    conf = {"kubernetes-version": "1.32", **({"crds": crds} if crds is not None else {})}
    return [(v.path, v.message) for v in kind_not_validated.check(obj, conf)]


def test_a_custom_resource_without_its_crd_is_not_validated() -> None:
    assert codes({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor"}) == [
        (("kind",), "ServiceMonitor monitoring.coreos.com/v1 is not validated: no CRD for it among the linted files")]


def test_built_in_kinds_and_kinds_with_a_crd_are_not_reported() -> None:
    import yaml

    crds = Catalog([yaml.safe_load(CRD)])
    for api_version, kind in [("apps/v1", "Deployment"), ("v1", "ConfigMap"), ("apps/v1", "Deploymnet"),
                              ("extensions/v1beta1", "Ingress"), ("gateway.networking.k8s.io/v1", "HTTPRoute")]:
        expected = [] if kind != "HTTPRoute" else [(("kind",), f"HTTPRoute {api_version} is not validated: "
                                                                "no CRD for it among the linted files")]
        assert codes({"apiVersion": api_version, "kind": kind}, crds) == expected, (api_version, kind)
    assert codes({"apiVersion": "agreement.fieldwarden.io/v1", "kind": "Widget"}, crds) == []
    assert codes({"apiVersion": "agreement.fieldwarden.io/v2", "kind": "Widget"}, crds) == []  # FW601's


def test_tools_files_that_no_api_server_serves_are_left_alone() -> None:
    for api_version, kind in [("skaffold/v4beta6", "Config"), ("kind.x-k8s.io/v1alpha4", "Cluster"),
                              ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"),
                              ("kubeadm.k8s.io/v1beta4", "ClusterConfiguration"), ("config.kubernetes.io/v1", "ResourceList"),
                              ("audit.k8s.io/v1", "Policy")]:
        assert codes({"apiVersion": api_version, "kind": kind}) == [], api_version
    assert codes({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster"}) != []  # Cluster API: CRDs


def test_once_per_kind_in_a_run_info_and_exit_zero(tmp_path: Path) -> None:
    git_repo(tmp_path, {"web.yaml": MONITORS, "api.yaml": MONITORS})
    run = lint(["--k8s-version", "1.32", "."], cwd=tmp_path)
    assert run.code == 0
    assert run.hits("FW603") == [("api.yaml", 2, 1, "FW603")]
    assert [f["severity"] for f in run.findings if f["code"] == "FW603"] == ["info"]


def test_fail_on_info_fails_and_an_ignore_comment_silences_it(tmp_path: Path) -> None:
    git_repo(tmp_path, {"web.yaml": MONITORS})
    assert lint(["--k8s-version", "1.32", "--fail-on", "info", "web.yaml"], cwd=tmp_path).code == 1
    git_repo(tmp_path, {"web.yaml": "# fieldwarden: ignore[FW603]\n" + MONITORS.replace("---\n", "---\n# fieldwarden: ignore[FW603]\n")})
    run = lint(["--k8s-version", "1.32", "--fail-on", "info", "web.yaml"], cwd=tmp_path)
    assert run.code == 0 and run.hits("FW603") == []
