"""Charts that Argo CD and Flux deploy render with the values those objects write inline, layered
as each tool layers them, and a finding on an inline value lands on its line in the GitOps file.

tests/fixtures/inline_values holds one chart whose Deployment splices `.Values.strategy`, and
the HelmReleases and Applications that deploy it (its README.md lists what each layers and
where FW202, `rollingUpdate` beside `type: Recreate`, is expected).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from fieldwarden.linter.units import gitops
from fieldwarden.linter.units.inline_values import parse
from tests.helpers import FIXTURES, Run, lint, write

pytestmark = pytest.mark.skipif(importlib.util.find_spec("helm_python") is None,
                                reason="rendering needs Helm's engine: pip install 'fieldwarden[render]'")

INLINE = FIXTURES / "inline_values"
FLUX = "charts/web (Flux HelmRelease edge/web, namespace edge)"
ARGO = "charts/web (Argo CD Application argocd/web, namespace edge)"


def repository(root: Path, deployed_by: str) -> Path:
    """The chart and one HelmRelease or Application, as a git repository."""
    shutil.copytree(INLINE / "charts", root / "charts")
    write(root, deployed_by, (INLINE / deployed_by).read_text(encoding="utf-8"))
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def fw202(run: Run) -> list[tuple[str, int, int, tuple[str, ...], bool]]:
    """(file, line, column, units, approximate) of the run's FW202 findings."""
    assert run.code in (0, 1), run.stderr
    assert not [f for f in run.findings if f["code"] == "FW006"], run.findings
    return sorted((f["file"], f["line"], f["column"], tuple(f["units"]), f["approximate"])
                  for f in run.findings if f["code"] == "FW202")


@pytest.mark.parametrize(("deployed_by", "expected"), [
    # spec.values alone: the `rollingUpdate:` it writes, exactly
    ("flux/values.yaml", [("flux/values.yaml", 15, 7, (FLUX,), False)]),
    # spec.values over valuesFiles: RollingUpdate wins over the file's Recreate
    ("flux/over-files.yaml", []),
    # merged key by key: rollingUpdate from the values file, type Recreate from spec.values
    ("flux/merged.yaml", [("charts/web/values-surge.yaml", 2, 3, (FLUX,), False)]),
    # a literal block: the line inside the block, its column moved by the block's indentation
    ("argocd/block.yaml", [("argocd/block.yaml", 17, 11, (ARGO,), False)]),
    # a quoted string: its lines are not the file's; the `values:` key, approximate
    ("argocd/quoted.yaml", [("argocd/quoted.yaml", 12, 7, (ARGO,), True)]),
    # valuesObject over valueFiles, and over values, which Argo CD then ignores
    ("argocd/object-over-values.yaml", []),
    # ignored, not merged: the rollingUpdate of `values` does not join valuesObject's Recreate
    ("argocd/object-replaces-values.yaml", []),
    # values over valueFiles
    ("argocd/values-over-files.yaml", []),
    # spec.sources[*]: the source that names the chart
    ("argocd/sources.yaml", [("argocd/sources.yaml", 17, 13, (ARGO,), False)]),
])
def test_inline_values_are_layered_as_the_gitops_tool_does(tmp_path: Path, deployed_by: str,
                                                          expected: list[tuple[str, int, int, tuple[str, ...], bool]]) -> None:
    root = repository(tmp_path, deployed_by)
    assert fw202(lint(["--select", "FW202,FW006"], cwd=root)) == expected


def test_valuesfrom_is_said_to_be_left_out(tmp_path: Path) -> None:
    run = lint(["--select", "FW202"], cwd=repository(tmp_path, "flux/merged.yaml"))
    assert "valuesFrom is not read" in run.stderr and "(edge/web)" in run.stderr


def test_pre_commit_on_the_gitops_file_lints_its_chart(tmp_path: Path) -> None:
    """The HelmRelease is an input of the render: given alone, its chart's unit is linted."""
    root = repository(tmp_path, "flux/values.yaml")
    assert fw202(lint(["--select", "FW202", "flux/values.yaml"], cwd=root)) == [("flux/values.yaml", 15, 7, (FLUX,), False)]
    # the chart's defaults are an input of the same unit: the finding their rollingUpdate meets in the
    # HelmRelease's inline values is reported there, though that file was not named (issue 22, item 8)
    assert fw202(lint(["--select", "FW202", "charts/web/values.yaml"], cwd=root)) == [("flux/values.yaml", 15, 7, (FLUX,), False)]


def test_changing_only_the_inline_value_renders_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = repository(tmp_path / "repo", "flux/values.yaml")
    release = root / "flux/values.yaml"
    text = release.read_text(encoding="utf-8")
    assert fw202(lint(["--select", "FW202"], cwd=root)) == [("flux/values.yaml", 15, 7, (FLUX,), False)]
    release.write_text(text.replace("  values:\n", "  values:\n    # moved down a line\n"), encoding="utf-8")
    assert fw202(lint(["--select", "FW202"], cwd=root)) == [("flux/values.yaml", 16, 7, (FLUX,), False)]
    release.write_text(text.replace("type: Recreate", "type: RollingUpdate"), encoding="utf-8")
    assert fw202(lint(["--select", "FW202"], cwd=root)) == []
    assert len(list((root / ".fieldwarden_cache").glob("render-*.cache"))) >= 1  # renders were cached meanwhile


# -- the reading itself --------------------------------------------------------------------------

def test_declarations_name_the_inline_values_they_layer() -> None:
    release = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "web"},
               "spec": {"chart": {"spec": {"chart": "charts/web", "sourceRef": {"kind": "GitRepository"}}},
                        "values": {"a": 1}}}
    application = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "web"},
                   "spec": {"sources": [{"ref": "values"}, {"path": "charts/web", "helm": {"values": "a: 1",
                                                                                            "valuesObject": {"a": 2}}}]}}
    found = gitops.declarations([release, application], "", [("r.yaml", 0, ()), ("a.yaml", 2, ("items", 1))])
    assert [d.inline for d in found] == [("r.yaml", 0, ("spec", "values")),
                                         ("a.yaml", 2, ("items", 1, "spec", "sources", 1, "helm", "valuesObject"))]
    assert [d.inline for d in gitops.declarations([release, application])] == [None, None]  # no places: none


def test_a_literal_block_that_is_not_line_for_line_is_approximate() -> None:
    """An indentation indicator or trailing lines that are not the file's: the key, never a wrong line."""
    text = "spec:\n  values: |2\n      a: 1\n"  # the text is `  a: 1`: its own indentation is not the block's
    inline, problem = parse(text, ("a.yaml", 0, ("spec", "values")))
    assert problem is None and inline is not None
    assert inline.approximate == ("a.yaml", 2, 3)


def test_inline_values_that_are_no_mapping_are_a_problem_on_their_line() -> None:
    inline, problem = parse("spec:\n  values: |\n    - a\n", ("a.yaml", 0, ("spec", "values")))
    assert inline is None and problem is not None and (problem.file, problem.line) == ("a.yaml", 2)
    inline, problem = parse("spec:\n  values: |\n    a: [\n", ("a.yaml", 0, ("spec", "values")))
    assert inline is None and problem is not None and problem.line >= 3  # the syntax error, inside the block


def test_one_chart_deployed_with_and_without_inline_values_is_planned(tmp_path: Path) -> None:
    """Two Applications render charts/web under one name, only one writing inline values: their
    declarations differ only there, and planning them must not compare a place with nothing
    (`fieldwarden lint tests/fixtures` once ended in a TypeError here)."""
    root = repository(tmp_path, "argocd/block.yaml")
    plain = (INLINE / "argocd/block.yaml").read_text(encoding="utf-8").split("    helm:\n")[0]
    write(root, "argocd/plain.yaml", plain + "  destination:\n    server: https://kubernetes.default.svc\n"
                                              "    namespace: edge\n")
    run = lint(["--select", "FW202"], cwd=root)
    assert run.code == 1, run.stderr
    assert fw202(run) == [("argocd/block.yaml", 17, 11, (ARGO,), False)]
