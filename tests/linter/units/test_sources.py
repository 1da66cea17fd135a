"""Which folders name units: only this repository's Flux sources; a kustomization's folder only through it.

Shapes: fluxcd/flux2-multi-tenancy (tests/fixtures/repos/flux-multi-tenancy: a tenant's
GitRepository and an OCIRepository with `path: ./`) and kubebuilder v3's `config/default`
(tests/fixtures/repos/kubebuilder-v3: patch fragments its kustomization leaves commented out).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter.units import gitops, tools
from fieldwarden.linter.units.plan import kustomization_folder_files
from tests.helpers import FIXTURES, git_repo, lint

REPOS = FIXTURES / "repos"
needs_kustomize = pytest.mark.skipif(tools.find_kustomize() is None, reason="no kustomize: pip install 'fieldwarden[render]'")


def flux(name: str, namespace: str, source: dict[str, str] | None, path: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"interval": "10m"}
    if source is not None:
        spec["sourceRef"] = source
    if path is not None:
        spec["path"] = path
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


BOOTSTRAP = flux("flux-system", "flux-system", {"kind": "GitRepository", "name": "flux-system"}, "./clusters/staging")
TENANT = flux("dev-team", "apps", {"kind": "GitRepository", "name": "dev-team"})  # path: ./ (the default)
OCI = flux("kyverno-controller", "flux-system", {"kind": "OCIRepository", "name": "kyverno-controller"}, "./")
APPS = flux("apps", "flux-system", {"kind": "GitRepository", "name": "flux-system"}, "./apps/staging")


def test_only_this_repositorys_sources_name_its_folders() -> None:
    objects = [BOOTSTRAP, TENANT, OCI, APPS]
    where = [("clusters/staging/flux-system/gotk-sync.yaml", 1, ()), ("tenants/base/dev-team/sync.yaml", 1, ()),
             ("infrastructure/kyverno/sync.yaml", 0, ()), ("clusters/staging/apps.yaml", 0, ())]
    assert [d.folder for d in gitops.declarations(objects, "", where)] == ["clusters/staging", "apps/staging"]
    assert gitops.not_read(objects, [w[0] for w in where]) == [
        ("Flux Kustomization apps/dev-team", "its source, GitRepository dev-team, is not this repository"),
        ("Flux Kustomization flux-system/kyverno-controller",
         "its source, OCIRepository kyverno-controller, is not this repository"),
    ]


def test_a_bootstrap_under_another_name_is_known_by_syncing_its_own_folder() -> None:
    own = flux("fleet", "flux-system", {"kind": "GitRepository", "name": "fleet"}, "./clusters/prod")
    app = flux("web", "flux-system", {"kind": "GitRepository", "name": "fleet"}, "./apps/web")
    other = flux("web", "flux-system", {"kind": "GitRepository", "name": "elsewhere"}, "./apps/web")
    files = ["clusters/prod/sync.yaml", "clusters/prod/web.yaml", "clusters/prod/other.yaml"]
    assert gitops.own_sources([own, app, other], files) == {("flux-system", "fleet")}
    assert [d.by for d in gitops.declarations([own, app, other], "", [(f, 0, ()) for f in files])] == [
        "Flux Kustomization flux-system/fleet", "Flux Kustomization flux-system/web"]
    # a tenant with `path: ./` holds its own file too, as every path of a tree it does not name: no proof
    assert gitops.own_sources([TENANT], ["tenants/base/dev-team/sync.yaml"]) == set()


def test_without_a_bootstrap_in_the_project_a_git_repository_is_taken_for_this_one() -> None:
    # only part of a repository linted, or one synced from elsewhere: as before, paths that exist name units
    assert [d.folder for d in gitops.declarations([APPS])] == ["apps/staging"]
    assert [d.folder for d in gitops.declarations([OCI])] == []  # never another kind of source


@needs_kustomize
def test_a_multi_tenant_fleet_is_no_whole_repository_unit(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(REPOS / "flux-multi-tenancy", root)
    git_repo(root)
    run = lint([], cwd=root)
    unvalidated = {f["code"] for f in run.findings if f["code"] == "FW603"}  # (Flux's kinds: no CRDs in the repository)
    assert (run.code, [f for f in run.findings if f["code"] != "FW603"], unvalidated) == (0, [], {"FW603"})  # was 13 FW305: both clusters' objects in one unit `. (dev-team)`
    assert ("not read as units: 2 Flux Kustomizations of another repository (Flux Kustomization "
            "flux-system/kyverno-controller: its source, OCIRepository kyverno-controller, is not this repository; "
            "Flux Kustomization apps/dev-team: its source, GitRepository dev-team, is not this repository)") in run.stderr


def test_every_file_of_a_kustomizations_folder_is_read_through_it() -> None:
    files = ["config/default/kustomization.yaml", "config/default/manager_webhook_patch.yaml",
             "config/default/sub/x.yaml", "config/samples/memcached.yaml", "kustomization.yml.bak"]
    assert kustomization_folder_files(files) == {"config/default/kustomization.yaml",
                                                 "config/default/manager_webhook_patch.yaml"}
    beside = ["config/crd/kustomization.yaml", "config/crd/patches/webhook_in_x.yaml", "config/crd/patches/deep/y.yaml",
              "config/crd/bases/x.yaml", "config/patches/z.yaml", "patches/top.yaml"]
    assert kustomization_folder_files(beside) == {"config/crd/kustomization.yaml", "config/crd/patches/webhook_in_x.yaml",
                                                  "config/crd/patches/deep/y.yaml"}
    assert kustomization_folder_files(["kustomization.yaml", "patches/top.yaml", "other/patches/a.yaml"]) == {
        "kustomization.yaml", "patches/top.yaml"}


@needs_kustomize
def test_kubebuilders_commented_out_crd_patches_are_no_objects_of_their_own(tmp_path: Path) -> None:
    """kubeflow's notebook-controller crd/: FW602 said `spec.group: Required value` (and 5 more) on the
    webhook and CA-injection fragments its kustomization leaves commented out."""
    root = tmp_path / "notebooks"
    shutil.copytree(FIXTURES / "crds" / "notebook-controller", root)
    git_repo(root)
    run = lint([], cwd=root)
    assert (run.code, sorted({(f["file"], f["code"]) for f in run.findings})) == (
        0, [("crd/bases/kubeflow.org_notebooks.yaml", "FW306")])
    assert lint(["crd/patches/webhook_in_notebooks.yaml"], cwd=root).findings == []  # pre-commit on the fragment alone


@needs_kustomize
def test_kubebuilders_commented_out_patches_are_no_objects_of_their_own(tmp_path: Path) -> None:
    root = tmp_path / "operator"
    shutil.copytree(REPOS / "kubebuilder-v3", root)
    git_repo(root)
    run = lint([], cwd=root)
    unsuppressed = [f for f in run.findings if not f["suppressed"]]
    assert (run.code, unsuppressed) == (0, [])  # was FW101 on manager_webhook_patch.yaml's Deployment fragment
    # pre-commit on the fragment alone: nothing; its own syntax is still checked
    assert lint(["config/default/manager_webhook_patch.yaml"], cwd=root).findings == []
    fragment = root / "config/default/manager_webhook_patch.yaml"
    fragment.write_text(fragment.read_text().replace("spec:\n  template:", "spec:\n  replicas: 1\n  replicas: 2\n  template:"))
    assert [(f["line"], f["code"]) for f in lint(["config/default/manager_webhook_patch.yaml"], cwd=root).findings] == [
        (8, "FW002")]
