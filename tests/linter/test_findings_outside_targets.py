"""Findings a named file causes outside the named files: which objects `--cluster` checks, and where (issue 24).

The decision, per finding: a unit linted in this run (it holds or renders a named file, or a named
GitOps object declares it) owns what its objects meet, wherever that is written; so

- a rendered unit (an overlay) checks its rendered objects, each field placed in whichever file
  writes it (the base, outside the named files), and one object whatever of base and overlay is named;
- a named Argo CD Application or Flux Kustomization checks the plain files of the folder it deploys,
  in its namespace (the destination is its doing), though those files are not named;
- a named plain file does not bring its folder's other objects: their live state is not its doing.

The static lint follows the same rule (engine.py): a patch that changes the pod labels makes FW102
on the base's selector, a field the patch does not touch; reported there once, its ignore comment
used. What the API server answers is tested against a real one (tests/e2e/test_live_overlays.py);
here the objects a run checks, their places and namespaces, with no cluster, on the tree of
tests/fixtures/overlay_outside.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from fieldwarden.linter.analyse import Finding
from fieldwarden.linter.discover import walk
from fieldwarden.linter.engine import Scope, Source, lint as lint_run
from fieldwarden.linter.formats import sarif
from fieldwarden.linter.live.checks import LiveObject
from fieldwarden.linter.live.run import checked_objects
from fieldwarden.policies.config import Settings
from tests.helpers import FIXTURES, WEB_DEPLOYMENT, lint, write
from tests.linter.units.test_units import needs_kustomize


@pytest.fixture
def inside(tmp_path: Path) -> Iterator[Path]:
    """A git checkout of tests/fixtures/overlay_outside (see its README) as the current folder."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "overlay_outside", root)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    old = os.getcwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(old)


def checked(root: Path, *named: str) -> list[tuple[str, tuple[str, ...]]]:
    """What `lint --cluster NAMED` checks (the rest of the repository as context): each object's label and units."""
    return [(live.label, live.units) for live in checked_objects_of(root, *named)]


def checked_objects_of(root: Path, *named: str) -> list[LiveObject]:
    settings = Settings()
    settings.live = True
    targets = [Source(str(p), str(p)) for name in named
               for p in (walk(Path(name)) if Path(name).is_dir() else [Path(name)])]
    shown = {source.display for source in targets}
    context = [str(p) for p in walk(Path(".")) if str(p) not in shown]
    report = lint_run(targets, context, settings, str(root), scope=Scope(keep_units=True))  # as --cluster does
    objects, _texts = checked_objects(report, targets, lambda _display: settings)
    return sorted(objects, key=lambda live: live.label)


def selector_place(live: LiveObject) -> tuple[str, int, int]:
    where = live.locate(("spec", "selector"))
    assert where is not None
    return where[0], where[1], where[2]


PROD = ("Deployment/shop/web", ("overlays/prod (kustomize)",))
RELABEL = ("Deployment/lab/web", ("overlays/relabel (kustomize)",))


@needs_kustomize
@pytest.mark.parametrize(("named", "expected"), [
    (("overlays/prod",), [PROD]),
    (("overlays/prod/kustomization.yaml",), [PROD]),
    (("base",), [RELABEL, PROD]),  # every overlay that reads it, never the base on its own
    (("overlays/prod", "base"), [RELABEL, PROD]),  # once each
], ids=["overlay", "kustomization", "base", "both"])
def test_an_overlay_is_checked_as_rendered_and_placed_in_its_base(
        inside: Path, named: tuple[str, ...], expected: list[tuple[str, tuple[str, ...]]]) -> None:
    objects = checked_objects_of(inside, *named)
    assert [(live.label, live.units) for live in objects] == expected
    assert [selector_place(live) for live in objects] == [("base/deploy.yaml", 6, 3)] * len(expected)  # not named


@needs_kustomize
@pytest.mark.parametrize(("named", "expected"), [
    ("argocd/web.yaml", [("Application/argocd/web", ("argocd",)),
                         ("Deployment/shop/web", ("apps/web (Argo CD Application argocd/web, namespace shop)",)),
                         ("HorizontalPodAutoscaler/shop/web",
                          ("apps/web (Argo CD Application argocd/web, namespace shop)",))]),
    ("flux/api.yaml", [("Deployment/team/api", ("apps/api (Flux Kustomization flux-system/api, namespace team)",)),
                       ("Kustomization/flux-system/api", ("flux",))]),
], ids=["argo-cd", "flux"])
def test_a_named_gitops_object_checks_the_plain_folder_it_deploys_in_its_namespace(
        inside: Path, named: str, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    objects = checked_objects_of(inside, named)
    assert [(live.label, live.units) for live in objects] == expected
    deployment = next(live for live in objects if live.label.startswith("Deployment/"))
    assert selector_place(deployment) == (f"apps/{deployment.label.rsplit('/', 1)[1]}/deploy.yaml", 6, 3)


@needs_kustomize
def test_a_named_plain_file_does_not_bring_its_folders_other_objects(inside: Path) -> None:
    unit = ("apps/web (Argo CD Application argocd/web, namespace shop)",)
    assert checked(inside, "apps/web/hpa.yaml") == [("HorizontalPodAutoscaler/shop/web", unit)]
    assert checked(inside, "apps/web") == [("Deployment/shop/web", unit), ("HorizontalPodAutoscaler/shop/web", unit)]


@needs_kustomize
@pytest.mark.parametrize("named", [["overlays/relabel"], ["overlays/relabel/labels.yaml"], ["overlays/relabel", "base"],
                                   ["base"]], ids=["overlay", "patch", "both", "base"])
def test_the_static_lint_reports_what_a_patch_causes_in_an_untouched_base_field_once(
        inside: Path, named: list[str]) -> None:
    run = lint(["--select", "FW1,FW003", *named], cwd=inside)
    assert (run.code, [(f["file"], f["line"], f["column"], f["code"], f["unit"]) for f in run.findings]) == (
        1, [("base/deploy.yaml", 6, 3, "FW102", "overlays/relabel (kustomize)")])
    ignored = WEB_DEPLOYMENT.replace("  selector:\n", "  selector:  # fieldwarden: ignore[FW102]\n")
    write(inside, "base/deploy.yaml", ignored)
    run = lint(["--select", "FW1,FW003", *named], cwd=inside)  # suppressed there, and the comment is used
    assert (run.code, [(f["file"], f["line"], f["code"], f["suppressed"]) for f in run.findings]) == (
        0, [("base/deploy.yaml", 6, "FW102", "comment at line 6")])


def finding(file: str) -> Finding:
    return Finding(file, 6, 3, "FW502", "error", "Deployment/shop/web", "spec.selector", "message", "", -1, ("spec",))


def test_sarif_gives_a_file_shown_absolute_as_a_file_uri() -> None:
    """A base above the current folder is shown by its absolute path; under %SRCROOT% it would name no file."""
    def location(file: str) -> object:
        return json.loads(sarif([finding(file)]))["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
            "artifactLocation"]

    assert location("base/deploy.yaml") == {"uri": "base/deploy.yaml", "uriBaseId": "%SRCROOT%"}
    assert location("/work/my repo/base/deploy.yaml") == {"uri": "file:///work/my%20repo/base/deploy.yaml"}
    assert location("C:\\work\\base\\deploy.yaml") == {"uri": "file:///C:/work/base/deploy.yaml"}
