"""A lint with nothing to render does without unitrun.py (engine._PlainRun) and finds the same.

Each plain project of tests/fixtures/repos (copies of real repositories' shapes: GitOps objects,
folders of alternatives, install variants, see their READMEs), linted one file at a time as
pre-commit runs it: the findings, their units and the exit code are those of a run that goes
through UnitRun (as `lint --cluster` does, Scope.keep_units).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter import cli as lint_cli
from fieldwarden.linter import analyse as analyse_module, engine
from tests.helpers import FIXTURES, git_repo, lint

RENDERED = ("Chart.yaml", "kustomization.yaml", "kustomization.yml", "Kustomization")


def _plain_projects() -> list[tuple[Path, str]]:
    """(project, a folder left out of the copy): the plain ones, and argocd-apps without its one chart,
    whose Argo CD Applications then declare plain folders only (workloads/*: a unit a changed
    Application file lints whole)."""
    plain = [(repo, "") for repo in sorted((FIXTURES / "repos").iterdir())
             if repo.is_dir() and not any(next(repo.rglob(name), None) for name in RENDERED)]
    return [*plain, (FIXTURES / "repos" / "argocd-apps", "charts")]


def test_there_are_plain_projects() -> None:
    names = {repo.name for repo, _ in _plain_projects()}
    assert {"argocd-apps", "install-variants", "sample-folders", "examples-folder"} <= names, names


@pytest.mark.parametrize("repo, without", _plain_projects(), ids=lambda value: getattr(value, "name", value))
def test_one_file_at_a_time_finds_what_unitrun_finds(repo: Path, without: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / repo.name
    shutil.copytree(repo, project)
    if without:
        shutil.rmtree(project / without)
    assert not any(next(project.rglob(name), None) for name in RENDERED)
    git_repo(project)
    files = sorted(str(path.relative_to(project)) for path in project.rglob("*.y*ml") if ".git" not in path.parts)
    assert files
    plain_runs: list[int] = []
    made = engine._PlainRun.__init__

    def counted(self: Any, wanted: set[str]) -> None:
        plain_runs.append(1)
        made(self, wanted)

    monkeypatch.setattr(engine._PlainRun, "__init__", counted)
    scope = lint_cli._scope
    found = []
    for keep in (False, True):
        monkeypatch.setattr(lint_cli, "_scope", lambda *a: scope(*a)._replace(keep_units=keep))
        found.append([lint([name], cwd=project) for name in files])
    assert len(plain_runs) == len(files)  # the first pass went without UnitRun, the second through it
    assert found[0] == found[1]


def test_a_plain_lint_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CRD scan and the analysis share the bytes of each target and context file (engine._lint)."""
    project = tmp_path / "sample-folders"
    shutil.copytree(FIXTURES / "repos" / "sample-folders", project)
    git_repo(project)
    reads: dict[str, int] = {}
    original = analyse_module.read_source

    def counted(path: Any, settings: Any) -> Any:
        reads[str(path)] = reads.get(str(path), 0) + 1
        return original(path, settings)

    monkeypatch.setattr(analyse_module, "read_source", counted)  # (crds.py imports it from there when it runs)
    monkeypatch.setattr(engine, "read_source", counted)
    found = lint(["."], cwd=project)
    assert found.findings and len(reads) > 3
    assert set(reads.values()) == {1}, {path: count for path, count in reads.items() if count > 1}
