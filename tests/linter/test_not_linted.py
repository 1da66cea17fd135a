"""A unit that was not linted is an FW007 finding (unit-not-linted), never "All checks passed!".

Helm's engine is detected with `importlib.util.find_spec("helm_python")`; a `None` in
`sys.modules` is Python's own way of making a module unimportable, and find_spec honours it,
so the tests below run the linter as it runs where the `[render]` extra is not installed.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fieldwarden.cli import main
from fieldwarden.linter.units import renders, tools
from tests.helpers import FIXTURES, lint

CHART_REPO = FIXTURES / "repos" / "helm-chart"
ARGO_REPO = FIXTURES / "repos" / "argocd-apps"


@pytest.fixture
def no_helm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Helm's engine not installed (the tool cache forgets what it found)."""
    monkeypatch.setitem(sys.modules, "helm_python", None)
    monkeypatch.setattr(renders, "_TOOLS", {})


@pytest.fixture
def chart_repo(tmp_path: Path) -> Path:
    """The ledger chart of tests/fixtures/repos/helm-chart (a chart-testing repository) alone."""
    repo = tmp_path / "repo"
    shutil.copytree(CHART_REPO / "charts" / "ledger", repo / "charts" / "ledger")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _text(args: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(args)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def test_a_chart_without_helms_engine_is_one_fw007_on_its_chart_yaml(no_helm: None, chart_repo: Path) -> None:
    run = lint([], cwd=chart_repo)
    assert run.code == 1
    hits = [f for f in run.findings if f["code"] == "FW007"]
    assert [(f["file"], f["line"], f["severity"]) for f in hits] == [("charts/ledger/Chart.yaml", 1, "error")]
    assert hits[0]["message"] == ("not linted: Helm's engine is not installed; "
                                  "pip install 'fieldwarden[render]' (helm-python-sdk)")
    # one finding for the chart, naming each of its value sets (units) that was not linted
    assert "charts/ledger (helm, ci/ha-values.yaml)" in hits[0]["units"]
    assert all(unit.startswith("charts/ledger (helm") for unit in hits[0]["units"])


def test_quiet_text_and_sarif_say_it_too(no_helm: None, chart_repo: Path) -> None:
    code, out, _ = _text(["lint", "-q"], chart_repo)
    assert code == 1
    assert "charts/ledger/Chart.yaml:1:1: FW007" in out
    assert "All checks passed" not in out
    code, out, _ = _text(["lint", "--format", "sarif"], chart_repo)
    assert code == 1
    results = json.loads(out)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["FW007"]


def test_a_changed_values_file_of_an_unrendered_chart_reports_it(no_helm: None, chart_repo: Path) -> None:
    """pre-commit passes the changed file alone: the chart it belongs to was not linted."""
    run = lint(["charts/ledger/ci/ha-values.yaml"], cwd=chart_repo)
    assert run.code == 1
    assert [(f["file"], f["code"]) for f in run.findings] == [("charts/ledger/Chart.yaml", "FW007")]


def test_its_severity_is_configurable(no_helm: None, chart_repo: Path) -> None:
    (chart_repo / ".fieldwarden.yaml").write_text("rules:\n  FW007: {severity: info}\n")
    run = lint([], cwd=chart_repo)
    assert run.code == 0
    assert [(f["code"], f["severity"]) for f in run.findings] == [("FW007", "info")]
    run = lint(["--ignore", "FW007"], cwd=chart_repo)
    assert run.code == 0 and run.findings == []


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  strategy: {type: RollingUpdate}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
"""


@pytest.mark.skipif(tools.find_kustomize() is None, reason="needs kustomize (kubectl) on PATH")
def test_an_overlay_whose_generator_names_a_link_out_of_the_project(tmp_path: Path) -> None:
    """configMapGenerator `envs: [app.env]`, app.env a link to a file outside the repository."""
    (tmp_path / "shared.env").write_text("LOG_LEVEL=debug\n")
    repo = tmp_path / "repo"
    overlay = repo / "overlay"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(
        "resources:\n- deployment.yaml\nconfigMapGenerator:\n- name: settings\n  envs:\n  - app.env\n")
    (overlay / "deployment.yaml").write_text(DEPLOYMENT)
    (overlay / "app.env").symlink_to(tmp_path / "shared.env")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    run = lint([], cwd=repo)
    assert run.code == 1
    assert [(f["file"], f["line"], f["code"]) for f in run.findings] == [("overlay/kustomization.yaml", 1, "FW007")]
    assert run.findings[0]["message"] == (
        "not linted: `overlay/app.env` is a link to a file outside the project, which fieldwarden does not read; "
        "make it a file of the project (or lint from a folder that holds its target)")
    assert run.findings[0]["units"] == ["overlay (kustomize)"]
    code, out, err = _text(["lint", "-q"], repo)
    assert code == 1 and "overlay/kustomization.yaml:1:1: FW007 error:" in out and err == ""


@pytest.mark.skipif(tools.find_kustomize() is None, reason="needs kustomize (kubectl) on PATH")
def test_a_link_re_pointed_out_of_the_project_is_not_read_from_the_render_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The overlay above, its link first to a file of the project: rendered and cached. Re-pointed to
    an identical file outside, the warm run must say what a cold run says (the cache key holds where
    each input resolves to, not only its content)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    repo = tmp_path / "repo"
    overlay = repo / "overlay"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(
        "resources:\n- deployment.yaml\nconfigMapGenerator:\n- name: settings\n  envs:\n  - app.env\n")
    (overlay / "deployment.yaml").write_text(DEPLOYMENT)
    (repo / "shared").mkdir()
    (repo / "shared" / "app.env").write_text("LOG_LEVEL=debug\n")
    (tmp_path / "app.env").write_text("LOG_LEVEL=debug\n")
    (overlay / "app.env").symlink_to(repo / "shared" / "app.env")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert lint([], cwd=repo).findings == []
    assert list((repo / ".fieldwarden_cache").glob("render-*.cache"))  # the render was cached
    (overlay / "app.env").unlink()
    (overlay / "app.env").symlink_to(tmp_path / "app.env")
    warm = lint([], cwd=repo)
    assert warm.code == 1
    assert [(f["file"], f["line"], f["code"]) for f in warm.findings] == [("overlay/kustomization.yaml", 1, "FW007")]
    assert "`overlay/app.env` is a link to a file outside the project" in warm.findings[0]["message"]
    shutil.rmtree(repo / ".fieldwarden_cache")
    assert lint([], cwd=repo).findings == warm.findings  # as a cold run


@pytest.mark.skipif(importlib.util.find_spec("helm_python") is None, reason="needs Helm's engine")
def test_a_chart_link_re_pointed_out_of_the_chart_is_not_read_from_the_render_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A template of the ledger chart that is a link, first to a file of the chart, then to the same
    text outside it: the warm run must leave it out of the render as a cold run does."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    repo = tmp_path / "repo"
    chart = repo / "charts" / "ledger"
    shutil.copytree(CHART_REPO / "charts" / "ledger", chart)
    template = sorted((chart / "templates").glob("*.yaml"))[0]
    (chart / "files").mkdir(exist_ok=True)
    kept = chart / "files" / template.name
    template.rename(kept)
    (tmp_path / template.name).write_text(kept.read_text())
    template.symlink_to(kept)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cold_inside = lint([], cwd=repo)
    assert list((repo / ".fieldwarden_cache").glob("render-*.cache"))  # the renders were cached
    template.unlink()
    template.symlink_to(tmp_path / template.name)
    warm = lint([], cwd=repo)
    shutil.rmtree(repo / ".fieldwarden_cache")
    cold = lint([], cwd=repo)
    assert warm.findings == cold.findings
    assert warm.findings != cold_inside.findings  # the template is left out (and said so) now


@pytest.mark.skipif(importlib.util.find_spec("helm_python") is None, reason="needs Helm's engine")
def test_a_chart_folder_link_re_pointed_out_of_the_chart_is_not_read_from_the_render_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """templates/extra a link to a folder of the chart holding one template, then to a copy outside."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    repo = tmp_path / "repo"
    chart = repo / "charts" / "ledger"
    shutil.copytree(CHART_REPO / "charts" / "ledger", chart)
    template = sorted((chart / "templates").glob("*.yaml"))[0]
    for folder in (chart / "more", tmp_path / "more"):
        folder.mkdir()
        (folder / template.name).write_text(template.read_text())
    template.unlink()
    (chart / "templates" / "extra").symlink_to(chart / "more", target_is_directory=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cold_inside = lint([], cwd=repo)
    (chart / "templates" / "extra").unlink()
    (chart / "templates" / "extra").symlink_to(tmp_path / "more", target_is_directory=True)
    warm = lint([], cwd=repo)
    shutil.rmtree(repo / ".fieldwarden_cache")
    cold = lint([], cwd=repo)
    assert warm.findings == cold.findings
    assert warm.findings != cold_inside.findings


@pytest.mark.skipif(importlib.util.find_spec("helm_python") is None, reason="needs Helm's engine")
def test_a_new_folder_link_out_of_a_cached_chart_is_said_as_in_a_cold_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart rendered and cached; then templates/extra appears, a link to a folder outside."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    repo = tmp_path / "repo"
    chart = repo / "charts" / "ledger"
    shutil.copytree(CHART_REPO / "charts" / "ledger", chart)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    before = lint([], cwd=repo)
    (chart / "templates" / "extra").symlink_to(tmp_path / "more", target_is_directory=True)
    warm = lint([], cwd=repo)
    shutil.rmtree(repo / ".fieldwarden_cache")
    cold = lint([], cwd=repo)
    assert (warm.findings, warm.stderr) == (cold.findings, cold.stderr)
    assert "charts/ledger/templates/extra:1:1: helm: symlink to a file outside the chart" in warm.stderr
    assert "symlink" not in before.stderr


@pytest.mark.skipif(importlib.util.find_spec("helm_python") is None, reason="needs Helm's engine")
def test_an_argo_cd_application_whose_values_file_cannot_be_read(tmp_path: Path) -> None:
    """tests/fixtures/repos/argocd-apps' status-page Application, with a values file that is not there."""
    repo = tmp_path / "repo"
    shutil.copytree(ARGO_REPO / "charts" / "status-page", repo / "charts" / "status-page")
    application = (ARGO_REPO / "apps" / "status-page.yaml").read_text()
    assert "- values-production.yaml\n" in application
    (repo / "apps").mkdir()
    (repo / "apps" / "status-page.yaml").write_text(
        application.replace("- values-production.yaml\n", "- values-production.yaml\n        - values-eu.yaml\n"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    run = lint([], cwd=repo)
    assert run.code == 1
    hits = [f for f in run.findings if f["code"] == "FW007"]
    assert [(f["file"], f["line"]) for f in hits] == [("apps/status-page.yaml", 16)]  # its valueFiles entry
    assert hits[0]["message"] == (
        "not linted: it does not render (charts/status-page/values-eu.yaml:1:1: helm: cannot read values file: "
        "No such file or directory); fix what it names; the unit is linted once it renders")
    assert hits[0]["units"] == ["charts/status-page (Argo CD Application argocd/status-page, namespace status)"]
    assert "not linted" not in run.stderr


NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: status\n---\n"


def _second_document_app(tmp_path: Path) -> Path:
    """The status-page Application second in its file (after its Namespace), with a values file
    that is not there written on line 21: `        - values-eu.yaml`."""
    repo = tmp_path / "repo"
    shutil.copytree(ARGO_REPO / "charts" / "status-page", repo / "charts" / "status-page")
    application = (ARGO_REPO / "apps" / "status-page.yaml").read_text()
    (repo / "apps").mkdir()
    (repo / "apps" / "status-page.yaml").write_text(NAMESPACE + application.replace(
        "- values-production.yaml\n", "- values-production.yaml\n        - values-eu.yaml\n"))
    assert (repo / "apps" / "status-page.yaml").read_text().splitlines()[20] == "        - values-eu.yaml"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.mark.skipif(importlib.util.find_spec("helm_python") is None, reason="needs Helm's engine")
def test_fw007_for_a_missing_values_file_is_on_its_valuefiles_entry(tmp_path: Path) -> None:
    repo = _second_document_app(tmp_path)
    run = lint([], cwd=repo)
    assert run.code == 1
    hits = [f for f in run.findings if f["code"] == "FW007"]
    assert [(f["file"], f["line"], f["column"]) for f in hits] == [("apps/status-page.yaml", 21, 11)]
    assert "charts/status-page/values-eu.yaml:1:1: helm: cannot read values file" in hits[0]["message"]


def test_fw007_of_an_application_without_helms_engine_is_on_its_first_line(no_helm: None, tmp_path: Path) -> None:
    repo = _second_document_app(tmp_path)
    run = lint([], cwd=repo)
    assert run.code == 1
    hits = [f for f in run.findings if f["code"] == "FW007" and "Argo CD Application" in f["units"][0]]
    assert [(f["file"], f["line"], f["column"]) for f in hits] == [("apps/status-page.yaml", 6, 1)]
    assert hits[0]["message"].startswith("not linted: Helm's engine is not installed")
