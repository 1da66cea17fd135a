"""A chart's value sets are saved to the render cache and analysed as each arrives, while Helm's child
renders the next (renders.render_pending; issue 23, row e): on kyverno's charts (kyverno/kyverno
111e07bbec charts/kyverno, 17 ci/ value sets) ~0.3 s of analysis waited for the child's last reply.
The run's outcome and the render cache are those of handing the sets on after the whole chart.

The fixture is tests/fixtures/repos/helm-chart (ct's ci/*-values.yaml layout: charts/ledger has
two value sets), each run cold in a copy of its own.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from fieldwarden.linter.unitrun import UnitRun
from fieldwarden.linter.units import helm, renders
from fieldwarden.linter.units.plan import HELM, RenderJob
from fieldwarden.linter.units.rendered import Render, RenderProblem
from tests.helpers import FIXTURES, Run, lint
from tests.linter.test_repos import pytestmark as needs_renderers

LEDGER = "charts/ledger"


def _cold(into: Path) -> Path:
    root = into / "helm-chart"
    shutil.copytree(FIXTURES / "repos" / "helm-chart", root)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def _cache(root: Path) -> dict[str, bytes]:
    folder = root / ".fieldwarden_cache"
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _after_the_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    """As before: no set handed on until the chart's last reply is read."""
    batch = renders._render_batch
    monkeypatch.setattr(renders, "_render_batch", lambda *args, **kwargs: batch(*args[:6]))


@needs_renderers
def test_a_charts_sets_are_analysed_before_its_last_reply_with_the_same_report_and_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    run_helm, analyse = helm._run_helm, UnitRun._analyse

    def replies(copy: Path, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        ledger = "ledger" in (copy / "Chart.yaml").read_text()
        for reply in run_helm(copy, *args, **kwargs):
            yield reply
            if ledger:
                events.append("reply")  # (once the parent is done with it)
        if ledger:
            events.append("last reply read")

    def analysing(self: UnitRun, job: RenderJob, made: Render | None) -> Any:
        if job.folder == LEDGER:
            events.append("analysed")
        return analyse(self, job, made)

    monkeypatch.setattr(helm, "_run_helm", replies)
    monkeypatch.setattr(UnitRun, "_analyse", analysing)
    root = _cold(tmp_path / "arrived")
    run = lint([], cwd=root)
    # (its two value sets, ci/ha and ci/recreate: the last is handed on once the chart is done)
    assert events == ["analysed", "reply", "reply", "last reply read", "analysed"]

    _after_the_chart(monkeypatch)
    events.clear()
    before = _cold(tmp_path / "after")
    expected = lint([], cwd=before)
    assert events == ["reply", "reply", "last reply read", "analysed", "analysed"]
    assert (run.code, run.findings, run.stderr) == (expected.code, expected.findings, expected.stderr)
    assert run.code == 1 and any(f["file"].startswith(f"{LEDGER}/templates/") for f in run.findings)
    assert _cache(root) == _cache(before) and _cache(root)
    assert lint([], cwd=root) == expected  # read back warm


def _jobs() -> list[RenderJob]:
    return [RenderJob(HELM, LEDGER, (f"{LEDGER}/ci/{name}-values.yaml",)) for name in ("a", "b", "c")]


def _batch(monkeypatch: pytest.MonkeyPatch, first: Render, fails: BaseException) -> list[Render]:
    """_render_batch on a chart whose renderer hands on its first set, then raises."""

    def renderer(*args: Any, arrived: Any = None, **kwargs: Any) -> list[Render]:
        arrived(0, first)
        raise fails

    monkeypatch.setattr(helm, "render_chart_sets", renderer)
    handed: list[tuple[int, Render]] = []
    layout: Any = SimpleNamespace(network=False)
    made = renders._render_batch(Path("."), _jobs(), layout, lambda folder: "default", None, None,
                                 lambda position, render: handed.append((position, render)))
    assert handed == [(0, first)]
    return made


def test_a_set_handed_on_is_the_one_reported_when_the_renderer_fails_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    first = Render([], [f"{LEDGER}/Chart.yaml"], [])
    made = _batch(monkeypatch, first, RuntimeError("the child went away"))
    assert made[0] is first
    failed = RenderProblem(f"{LEDGER}/Chart.yaml", 1, 1, "helm failed: the child went away")
    assert [(render.objects, render.problems, render.passing) for render in made[1:]] == [([], [failed], True)] * 2


def test_what_the_caller_raises_is_not_reported_as_the_renderers_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def renderer(*args: Any, arrived: Any = None, **kwargs: Any) -> list[Render]:
        arrived(0, Render([], [], []))
        return []

    def broken(position: int, render: Render) -> None:
        raise ValueError("a bug in the analysis")

    monkeypatch.setattr(helm, "render_chart_sets", renderer)
    layout: Any = SimpleNamespace(network=False)
    with pytest.raises(ValueError, match="a bug in the analysis"):
        renders._render_batch(Path("."), _jobs(), layout, lambda folder: "default", None, None, broken)


# kyverno's main chart has 17 value sets: its folder was walked 17 times to key the render cache (~0.09 s).
@needs_renderers
def test_a_charts_folder_is_walked_once_for_all_its_value_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fieldwarden.linter.units import render_cache

    root = _cold(tmp_path)
    expected = lint([], cwd=root)
    listing, walked = render_cache.listing, []

    def counted(root: Path, folder: str) -> list[str]:
        walked.append(folder)
        return listing(root, folder)

    monkeypatch.setattr(render_cache, "listing", counted)
    for run in ("cold", "warm"):
        if run == "cold":
            shutil.rmtree(root / ".fieldwarden_cache")
        walked.clear()
        again = lint([], cwd=root)
        assert (again.code, again.findings, again.stderr) == (expected.code, expected.findings, expected.stderr), run
        assert walked.count(LEDGER) == 1, run
