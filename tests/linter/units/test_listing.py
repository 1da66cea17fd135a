"""`fieldwarden units`: the units of the repositories of tests/fixtures/repos, their kinds, defining
files and renders, and what the planner does not read and why (units/listing.py)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.cli import main
from fieldwarden.linter.units.listing import gitops_skipped, kind_of
from fieldwarden.linter.units.plan import HELM, KUSTOMIZE, RenderJob, Unit
from tests.helpers import FIXTURES

REPOS = FIXTURES / "repos"


def units(name: str, tmp_path: Path, *args: str, text: bool = False) -> tuple[int, Any, str]:
    """`fieldwarden units --format json ARGS` (or as text) from the root of a fresh git copy of the repository."""
    import os

    repo = tmp_path / name
    shutil.copytree(REPOS / name, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(repo)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["units", *([] if text else ["--format", "json"]), *args])
    finally:
        os.chdir(old)
    if text:
        return code, out.getvalue(), err.getvalue()
    return code, json.loads(out.getvalue()) if code == 0 else None, err.getvalue()


def test_argo_cd_apps_name_their_folders_and_charts_and_a_helm_repository_chart_is_not_read(tmp_path: Path) -> None:
    code, listing, _ = units("argocd-apps", tmp_path)
    assert code == 0
    by_name = {unit["name"]: unit for unit in listing["units"]}
    chart = by_name["charts/status-page (Argo CD Application argocd/status-page, namespace status)"]
    assert (chart["kind"], chart["defined_by"], chart["namespace"]) == ("Argo CD Application", "apps/status-page.yaml", "status")
    assert [(r["tool"], r["folder"], r["values"], r["release"]) for r in chart["renders"]] == [
        ("helm", "charts/status-page", ["charts/status-page/values-production.yaml"], "status-page")]
    redis = by_name["workloads/redis (Argo CD Application argocd/redis, namespace redis)"]
    assert redis["files"] == ["workloads/redis/redis-master.yaml", "workloads/redis/redis-replica.yaml"]
    assert redis["renders"] == [] and redis["defined_by"] == "apps/redis.yaml"
    assert by_name["bootstrap"]["kind"] == "plain folder"
    assert [(s["file"], s["what"]) for s in listing["not_read"]] == [
        ("apps/cert-manager.yaml", "Argo CD Application argocd/cert-manager")]
    assert "Helm repository (https://charts.jetstack.io)" in listing["not_read"][0]["why"]


def test_flux_kustomizations_of_another_source_are_not_read(tmp_path: Path) -> None:
    code, listing, _ = units("flux-multi-tenancy", tmp_path)
    assert code == 0
    assert {(u["name"], u["kind"], u["defined_by"]) for u in listing["units"]} >= {
        ("tenants/production (Flux Kustomization flux-system/tenants)", "Flux Kustomization", "clusters/production/tenants.yaml"),
    }
    assert [(s["file"], s["what"], s["why"]) for s in listing["not_read"]] == [
        ("infrastructure/kyverno/sync.yaml", "Flux Kustomization flux-system/kyverno-controller",
         "its source, OCIRepository kyverno-controller, is not this repository"),
        ("tenants/base/dev-team/sync.yaml", "Flux Kustomization apps/dev-team",
         "its source, GitRepository dev-team, is not this repository"),
    ]
    assert listing["notices"] == [] and listing["fixtures_left_out"] == 0  # each reason once: in not_read


def test_text_says_each_reason_not_read_once(tmp_path: Path) -> None:
    code, text, _ = units("flux-multi-tenancy", tmp_path, text=True)
    assert code == 0
    assert text.count("its source, OCIRepository kyverno-controller, is not this repository") == 1
    assert "note: not read as units" not in text


def test_the_fixture_files_left_out_are_counted(tmp_path: Path) -> None:
    code, listing, _ = units("kyverno-tests", tmp_path)
    assert code == 0 and listing["fixtures_left_out"] == 15  # as `lint` leaves out (test_repos.FIXTURE_FILES)
    code, text, _ = units("kyverno-tests", tmp_path / "text", text=True)
    assert "note: left out 15 test fixture files" in text


def test_a_remote_base_is_named_on_its_unit(tmp_path: Path) -> None:
    code, listing, _ = units("autopilot-bootstrap", tmp_path)
    assert code == 0
    [unit] = listing["units"]
    assert (unit["name"], unit["kind"], unit["defined_by"]) == (
        "bootstrap/argo-cd (kustomize)", "kustomization", "bootstrap/argo-cd/kustomization.yaml")
    assert [(s["what"], s["file"]) for s in unit["not_read"]] == [
        ("github.com/argoproj-labs/argocd-autopilot/manifests/base?ref=v0.4.17", "bootstrap/argo-cd/kustomization.yaml")]
    assert "is not fetched" in unit["not_read"][0]["why"]


def test_paths_choose_the_units_and_nothing_is_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fieldwarden.linter.units import renders

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("fieldwarden units rendered something")

    monkeypatch.setattr(renders, "render", refuse)
    code, listing, _ = units("kustomize-app", tmp_path, "deploy/overlays/prod")
    assert code == 0
    assert [(u["name"], u["defined_by"]) for u in listing["units"]] == [
        ("deploy/overlays/prod (kustomize)", "deploy/overlays/prod/kustomization.yaml")]


def test_a_path_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = units("kustomize-app", tmp_path, "deploy/nowhere")
    assert code == 2 and "no such file or folder: deploy/nowhere" in err


def test_kinds() -> None:
    assert kind_of(Unit("a", ("a/x.yaml",), plain=True)) == "plain folder"
    assert kind_of(Unit("k (kustomize)", (), (RenderJob(KUSTOMIZE, "k"),))) == "kustomization"
    assert kind_of(Unit("c (helm)", (), (RenderJob(HELM, "c"),))) == "chart + value set"
    assert kind_of(Unit("e (step 01)", ("e/01-a.yaml",))) == "test step"
    assert kind_of(Unit("w (Flux HelmRelease apps/w)", (), (RenderJob(HELM, "w"),), by="Flux HelmRelease apps/w")) == \
        "Flux HelmRelease"


def test_gitops_skipped_reads_applicationsets_repository_charts_and_values_from() -> None:
    objects = [
        ({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "all", "namespace": "argocd"},
          "spec": {}}, "apps/set.yaml"),
        ({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "web", "namespace": "apps"},
          "spec": {"chart": {"spec": {"chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "charts"}}},
                   "valuesFrom": [{"kind": "ConfigMap", "name": "web-values"}]}}, "apps/web.yaml"),
    ]
    assert [(s.what, s.file) for s in gitops_skipped(objects)] == [
        ("ApplicationSet argocd/all", "apps/set.yaml"),
        ("Flux HelmRelease apps/web", "apps/web.yaml"),
        ("Flux HelmRelease apps/web", "apps/web.yaml"),
    ]
    assert [s.why.split(" ")[0] for s in gitops_skipped(objects)] == ["its", "its", "valuesFrom"]
