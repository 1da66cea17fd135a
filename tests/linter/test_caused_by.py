"""Findings a named file causes are reported wherever they land (issue 22, item 8).

pre-commit passes the changed files. A kustomize patch that sets `type: Recreate` over the
base's `rollingUpdate`, or a chart's `ci/` values file doing the same to its defaults, makes
FW202 on the base or values line: that finding belongs to the unit the named file is part of,
so it is reported though the base was not named. The shapes are the ones in
tests/fixtures/repos (kustomize-app: deploy/overlays/prod/api-rollout.yaml over
deploy/base/api.yaml; helm-chart: charts/ledger/ci/recreate-values.yaml over values.yaml).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from fieldwarden.linter.units import tools
from tests.helpers import CHART_DEPLOYMENT, CHART_HELPERS, FIXTURES, git_repo, hpa_for, lint, scaled_deployment, write

needs_kustomize = pytest.mark.skipif(tools.find_kustomize() is None, reason="no kustomize: pip install 'fieldwarden[render]'")
needs_helm = pytest.mark.skipif(importlib.util.find_spec("helm_python") is None,
                                reason="no Helm engine: pip install 'fieldwarden[render]'")


def checkout(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / "repos" / name, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def places(args: list[str], root: Path, code: str) -> tuple[int, list[tuple[str, int, int, str]]]:
    run = lint(["--select", code, *args], cwd=root)
    assert "Traceback" not in run.stderr, run.stderr
    return run.code, sorted((f["file"], f["line"], f["column"], f["unit"]) for f in run.findings if not f["suppressed"])


BASE_LINE = ("deploy/base/api.yaml", 14, 5, "deploy/overlays/prod (kustomize)")


@needs_kustomize
@pytest.mark.parametrize("named", ["deploy/overlays/prod/api-rollout.yaml", "deploy/overlays/prod"])
def test_a_patch_alone_reports_what_it_does_to_the_base(tmp_path: Path, named: str) -> None:
    root = checkout("kustomize-app", tmp_path)
    assert places([named], root, "FW202") == (1, [BASE_LINE])


@needs_kustomize
def test_a_comment_in_the_base_suppresses_it_and_is_not_judged_there(tmp_path: Path) -> None:
    root = checkout("kustomize-app", tmp_path)
    base = root / "deploy/base/api.yaml"
    text = base.read_text(encoding="utf-8")
    base.write_text(text.replace("    rollingUpdate:  # <- FW202", "    rollingUpdate:  # fieldwarden: ignore[FW202]"),
                    encoding="utf-8")
    run = lint(["--select", "FW202,FW003", "deploy/overlays/prod/api-rollout.yaml"], cwd=root)
    assert run.code == 0, run.findings
    [finding] = run.findings
    assert (finding["file"], finding["line"], finding["suppressed"]) == ("deploy/base/api.yaml", 14, "comment at line 14")
    # the dev overlay keeps RollingUpdate: the same comment is unused there, but only a run that
    # lints the base itself judges it
    assert [f["code"] for f in lint(["--select", "FW202,FW003", "deploy/overlays/dev"], cwd=root).findings] == []


@needs_helm
def test_a_ci_values_file_alone_reports_what_it_does_to_the_defaults(tmp_path: Path) -> None:
    root = checkout("helm-chart", tmp_path)
    unit = "charts/ledger (helm, ci/recreate-values.yaml)"
    assert places(["charts/ledger/ci/recreate-values.yaml"], root, "FW202") == (1, [
        ("charts/ledger/values.yaml", 35, 3, unit), ("charts/ledger/values.yaml", 71, 5, unit)])


CHART = {
    "charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    "charts/web/values.yaml": "strategy:\n  rollingUpdate:\n    maxSurge: 1\n",
    "charts/web/templates/_helpers.tpl": CHART_HELPERS,
    "charts/web/templates/deployment.yaml": CHART_DEPLOYMENT,
    "tools/greeting.tpl": "Hello {{ .Name }}\nnot: yaml: at all\n",  # some other tool's template
}


@needs_helm
def test_a_changed_helper_relints_its_chart_and_a_stray_tpl_is_left_out(tmp_path: Path) -> None:
    root = git_repo(tmp_path, dict(CHART))
    helper = "charts/web/templates/_helpers.tpl"
    assert places([helper], root, "FW202") == (0, [])
    write(root, helper, CHART[helper].replace("RollingUpdate", "Recreate"))
    assert places([helper], root, "FW202") == (1, [("charts/web/templates/deployment.yaml", 9, 5, "charts/web (helm)")])
    run = lint(["tools/greeting.tpl"], cwd=root)
    assert (run.code, run.findings) == (0, [])
    assert "left out 1 .tpl file that no Helm chart holds" in run.stderr


STALE_HPA = hpa_for("gone").replace("name: gone\n", "name: stale\n", 1)


def test_a_plain_file_reports_what_it_causes_in_its_folder_and_nothing_older(tmp_path: Path) -> None:
    """An HPA added in a named file makes its unchanged Deployment's `replicas` a finding (FW301 there);
    an HPA in a third file that already pointed at nothing (FW303) is not this change's."""
    root = git_repo(tmp_path, {
        "app/deploy.yaml": scaled_deployment("web", replicas=3),
        "app/hpa.yaml": hpa_for("web"),
        "app/stale.yaml": STALE_HPA,
    })
    replicas = 6  # scaled_deployment's `replicas:` line
    run = lint(["--select", "FW3", "app/hpa.yaml"], cwd=root)
    assert (run.code, [(f["file"], f["line"], f["code"]) for f in run.findings]) == (
        1, [("app/deploy.yaml", replicas, "FW301")])
    assert [(f["file"], f["code"]) for f in lint(["--select", "FW3", "app/deploy.yaml"], cwd=root).findings] == [
        ("app/deploy.yaml", "FW301")]
    # the whole folder: the old finding too
    assert sorted(f["code"] for f in lint(["--select", "FW3", "app"], cwd=root).findings) == ["FW301", "FW303"]


# -- a changed GitOps object re-lints the unit it declares (issue 22, item 3 of the remaining work) ----------
# argocd-apps mirrors an Argo CD app of apps (apps/monitoring.yaml: `directory.recurse: true` joins the HPA of
# workloads/monitoring/autoscaling/ to its Deployment); flux-fleet the fluxcd/flux2-kustomize-helm-example fleet
# (clusters/production/apps.yaml: `targetNamespace: storefront` folds the production ConfigMap onto the base's).


def test_a_changed_argo_cd_application_alone_reports_its_units_findings(tmp_path: Path) -> None:
    root = checkout("argocd-apps", tmp_path)
    code, found = places(["apps/monitoring.yaml"], root, "FW301")
    assert (code, [f[:3] for f in found]) == (1, [("workloads/monitoring/exporters/kube-state-metrics.yaml", 16, 3)])
    assert "monitoring" in found[0][3]


@needs_helm
def test_a_changed_application_of_a_chart_renders_it(tmp_path: Path) -> None:
    root = checkout("argocd-apps", tmp_path)
    code, found = places(["apps/status-page.yaml"], root, "FW304")
    assert code == 1 and [f[:3] for f in found if not f[0].endswith("deployment.yaml")] == [
        ("charts/status-page/values-production.yaml", 5, 5), ("charts/status-page/values-production.yaml", 6, 5)]


@needs_kustomize
def test_a_changed_flux_kustomization_alone_reports_what_its_target_namespace_causes(tmp_path: Path) -> None:
    root = checkout("flux-fleet", tmp_path)
    code, found = places(["clusters/production/apps.yaml"], root, "FW305")
    assert (code, [f[:3] for f in found]) == (1, [("apps/base/storefront/configmap.yaml", 4, 3),
                                                  ("apps/production/storefront-config.yaml", 5, 3)])


def test_only_the_rules_with_findings_on_other_files_run_again() -> None:
    """engine._caused asks the set rules again only for the codes found on files that were not named."""
    from fieldwarden.linter.analyse import Finding
    from fieldwarden.linter.engine import _caused
    from fieldwarden.linter.sets import Member

    def finding(file: str, code: str) -> Finding:
        return Finding(file, 6, 3, code, "error", "Deployment web", "spec.replicas", "message", "", 0, ("spec",))

    members = [Member(None, "hpa.yaml", True), Member(None, "deploy.yaml", True, named=False),  # type: ignore[arg-type]
               Member(None, "stale.yaml", True, named=False)]  # type: ignore[arg-type]
    caused, old, own = finding("deploy.yaml", "FW301"), finding("stale.yaml", "FW303"), finding("hpa.yaml", "FW105")
    asked: list[tuple[list[str], set[str]]] = []

    def rerun(kept: list[Member], codes: set[str]) -> list[Finding]:
        asked.append(([m.file for m in kept], codes))
        return [old]  # without the named file's objects, only the stale HPA's finding is there

    assert _caused([caused, old, own], members, rerun) == [caused, own]
    assert asked == [(["deploy.yaml", "stale.yaml"], {"FW301", "FW303"})]  # not FW105, found on the named file
    asked.clear()
    assert _caused([own], members, rerun) == [own] and asked == []  # nothing elsewhere: no second run
