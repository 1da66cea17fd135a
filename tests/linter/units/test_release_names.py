"""Charts that Argo CD and Flux deploy render under the release name they give them, and the
render cache keys each render by everything that makes it.

tests/fixtures/releases holds one chart and the Applications and HelmReleases that deploy it
(its README.md lists the release name each gives): the chart's main Deployment is named
`{{ .Release.Name }}`, its other one is always `edge-web`, so a render as release `edge-web`
holds a duplicate (FW305) and FW201 names the main Deployment as each unit renders it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fieldwarden.linter.units import gitops, helm, helmmap, renders
from tests.helpers import FIXTURES, Run, lint, write

pytestmark = pytest.mark.skipif(importlib.util.find_spec("helm_python") is None,
                                reason="rendering needs Helm's engine: pip install 'fieldwarden[render]'")

RELEASES = FIXTURES / "releases"
GITOPS = sorted(p.relative_to(RELEASES).as_posix() for p in RELEASES.glob("*/*.yaml") if p.parts[-3] != "charts")
MAIN = "charts/web/templates/deployment.yaml"
EDGE = "charts/web/templates/edge.yaml"


def repository(root: Path, gitops_files: list[str]) -> Path:
    """The fixture as a git repository, with only the named Applications and HelmReleases."""
    shutil.copytree(RELEASES / "charts", root / "charts")
    for name in gitops_files:
        write(root, name, (RELEASES / name).read_text(encoding="utf-8"))
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def findings(run: Run, code: str) -> list[tuple[str, int, str, tuple[str, ...]]]:
    """(file, line, object, units) of the run's findings of one rule."""
    assert run.code in (0, 1), run.stderr
    return sorted((f["file"], f["line"], f["object"], tuple(f["units"])) for f in run.findings if f["code"] == code)


@pytest.mark.parametrize(("deployed_by", "unit", "release"), [
    ("argocd/web.yaml", "Argo CD Application argocd/web", "web"),  # the Application's name
    ("argocd/edge-web.yaml", "Argo CD Application argocd/edge-web", "edge-web"),
    ("argocd/web-edge.yaml", "Argo CD Application argocd/web-edge", "edge-web"),  # helm.releaseName
    ("flux/web-target.yaml", "Flux HelmRelease flux-system/web", "edge-web"),  # <targetNamespace>-<name>
    ("flux/web.yaml", "Flux HelmRelease edge/web", "web"),  # no targetNamespace: the name alone
    ("flux/web-named.yaml", "Flux HelmRelease edge/web-named", "web-stable"),  # releaseName
])
def test_a_chart_renders_under_the_release_name_its_deployer_gives(tmp_path: Path, deployed_by: str, unit: str,
                                                                    release: str) -> None:
    root = repository(tmp_path, [deployed_by])
    run = lint(["--select", "FW201,FW305"], cwd=root)
    unit = f"charts/web ({unit}, namespace edge)"
    # one finding on the template line, its object as the first unit names it; the chart's own
    # unit renders it too, as Helm's default release (release-name)
    assert findings(run, "FW201") == [(MAIN, 5, f"Deployment/edge/{release}", (unit, "charts/web (helm)"))]
    duplicates = findings(run, "FW305")
    if release == "edge-web":
        assert duplicates == [(MAIN, 4, "Deployment/edge/edge-web", (unit,)), (EDGE, 4, "Deployment/edge/edge-web", (unit,))]
    else:
        assert duplicates == []


def test_different_release_names_are_different_units_and_one_name_is_one(tmp_path: Path) -> None:
    """Deployed as `web`, `web-stable` and `edge-web` (three ways), the chart is three units in
    namespace edge: the duplicate is found once, in the `edge-web` one, and nowhere else."""
    root = repository(tmp_path, GITOPS)
    run = lint(["--select", "FW305"], cwd=root)
    duplicates = findings(run, "FW305")
    assert [f for f, _, _, _ in duplicates] == [MAIN, EDGE]
    # the Applications and the HelmRelease that say `edge-web` name one unit: the first of them names it
    assert {u for _, _, _, units in duplicates for u in units} == {"charts/web (Argo CD Application argocd/edge-web, namespace edge)"}
    names = {f["object"] for f in lint(["--select", "FW201"], cwd=root).findings}
    assert names == {"Deployment/edge/edge-web"}  # one finding on the line: its object as the first unit names it


def test_flux_shortens_a_long_composed_release_name() -> None:
    """helm-controller's rule (its code and tests): more than 53 characters keep 40, a dash, 12 of the SHA-256."""
    long = "release-name-with-very-long-name-which-is-longer-than-53-characters"
    assert gitops.flux_release_name("", long) == "release-name-with-very-long-name-which-i-788ca0d0d7b0"
    assert gitops.flux_release_name("another", long) == "another-release-name-with-very-long-name-7e72150d5a36"
    assert gitops.flux_release_name("edge", "web") == "edge-web"
    release = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": "web" * 20, "namespace": "apps"},
               "spec": {"chart": {"spec": {"chart": "charts/web", "sourceRef": {"kind": "GitRepository"}}}}}
    [declared] = gitops.declarations([release])
    assert len(declared.release) == 53 and declared.release.startswith("web" * 13 + "w-")


# -- the render cache's key ----------------------------------------------------------------------

def test_a_new_release_name_is_a_new_render_not_a_cached_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Application is no input of the render: only the release name in the key tells the renders apart."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = repository(tmp_path / "repo", ["argocd/web-edge.yaml"])
    assert findings(lint(["--select", "FW201"], cwd=root), "FW201")[0][2] == "Deployment/edge/edge-web"
    application = root / "argocd/web-edge.yaml"
    application.write_text(application.read_text(encoding="utf-8").replace("releaseName: edge-web", "releaseName: canary"),
                           encoding="utf-8")
    assert findings(lint(["--select", "FW201"], cwd=root), "FW201")[0][2] == "Deployment/edge/canary"


def test_changing_the_line_mapping_code_invalidates_cached_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """helm.py and helmmap.py (the mapping makes each object's lines) are part of every Helm render's key."""
    assert {Path(helm.__file__), Path(helmmap.__file__)} <= {Path(p) for p in helm.SOURCES}
    stand_in = tmp_path / "helmmap.py"  # the real module's stamp is not to be touched: a copy stands in for it
    shutil.copyfile(helmmap.__file__, stand_in)
    monkeypatch.setattr(helm, "SOURCES", tuple(str(stand_in) if Path(p) == Path(helmmap.__file__) else p for p in helm.SOURCES))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = repository(tmp_path / "repo", [])

    def entries() -> set[str]:
        monkeypatch.setattr(renders, "_TOOLS", {})  # a new run looks at the tool (and its sources) again
        assert findings(lint(["--select", "FW201"], cwd=root), "FW201")[0][:3] == (MAIN, 5, "Deployment/default/release-name")
        return {p.name for p in (root / ".fieldwarden_cache").glob("render-*.cache")}

    first = entries()
    assert len(first) == 1 and entries() == first  # warm: the same entry serves
    stat = stand_in.stat()
    os.utime(stand_in, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert len(entries() - first) == 1  # the mapping changed: rendered again, kept under a new key
