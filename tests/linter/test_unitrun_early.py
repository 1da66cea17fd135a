"""Renders the layout names start while the files are analysed (UnitRun.start), with the same outcome.

Measured on bench/real_trees.py's MIXED tree (issue 23, row f): the kustomize and Helm children
started only once every plain file had been analysed, one core idle meanwhile. Every
kustomization root and each chart's own value sets are known from the file list; only GitOps
objects add renders (argocd-apps: an Application's chart with its values files and namespace),
and those still wait for the analysis. Whatever starts early, the run reports the same findings,
notices and exit code, in the same order, as rendering everything after the analysis.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.cli import main
from fieldwarden.linter import engine
from fieldwarden.linter.unitrun import UnitRun
from fieldwarden.linter.units import renders
from fieldwarden.linter.units.plan import HELM, KUSTOMIZE, RenderJob
from fieldwarden.linter.units.rendered import Render, RenderProblem
from fieldwarden.linter.units.renders import Rendered, merged
from tests.helpers import FIXTURES, lint
from tests.linter.test_repos import pytestmark as needs_renderers

REPOS = FIXTURES / "repos"


def _checkout(name: str, into: Path) -> Path:
    root = into / name
    shutil.copytree(REPOS / name, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


@needs_renderers
def test_renders_start_before_the_files_are_analysed_and_nothing_forks_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _checkout("kustomize-app", tmp_path)
    expected = lint([], cwd=root)
    shutil.rmtree(root / ".fieldwarden_cache", ignore_errors=True)
    begun, analysed = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    render, analyse_loaded, analyse_chunk = renders.render_pending, engine._analyse_loaded, engine._analyse_chunk

    def rendering(*args: Any, **kwargs: Any) -> Rendered:
        begun.set()
        analysed.wait(10)  # still running while the files are analysed
        return render(*args, **kwargs)

    def loading(loaded: engine.Loaded, full: bool, alone: bool = False) -> list[Any]:
        seen.setdefault("alone", alone)
        try:
            return analyse_loaded(loaded, full, alone)
        finally:
            analysed.set()

    def chunk(loaded: engine.Loaded, full: bool) -> list[Any]:
        seen.setdefault("render begun first", begun.wait(10))  # after the analysis, it would wait in vain
        return analyse_chunk(loaded, full)

    monkeypatch.setattr(renders, "render_pending", rendering)
    monkeypatch.setattr(engine, "_analyse_loaded", loading)
    monkeypatch.setattr(engine, "_analyse_chunk", chunk)
    run = lint([], cwd=root)
    assert seen == {"alone": True, "render begun first": True}
    assert (run.code, run.findings, run.stderr) == (expected.code, expected.findings, expected.stderr)
    assert run.code == 1 and any(f["code"] == "FW105" for f in run.findings)  # the canary overlap (README)


@needs_renderers
def test_large_targets_are_analysed_by_a_worker_forked_before_the_renders_begin(tmp_path: Path) -> None:
    """While renders run, this process's threads map and analyse their output (holding the GIL); a large
    input's files go to one worker process, forked while no other thread runs: before the renders'
    threads start (engine._analyse_apart), with the same report. (In a process of its own: a test
    session's leftover threads rightly keep the fork off.)"""
    import sys

    root = _checkout("shop-chart-and-kustomize", tmp_path)
    expected = _run(root, "json")
    shutil.rmtree(root / ".fieldwarden_cache")
    pids, forks = tmp_path / "analysed-by", tmp_path / "threads-at-fork"
    code = f"""
import os, sys, threading
from fieldwarden.linter import engine
engine.PARALLEL_MIN_BYTES = 1  # (the fixture is small)
engine._cpus = lambda: 2
chunk, fork = engine._analyse_chunk, os.fork
def analysing(loaded, full):
    with open({str(pids)!r}, "a") as handle:
        handle.write(f"{{os.getpid()}}\\n")
    return chunk(loaded, full)
def forking():
    with open({str(forks)!r}, "a") as handle:
        handle.write(f"{{threading.active_count()}}\\n")
    return fork()
engine._analyse_chunk, os.fork = analysing, forking
from fieldwarden.cli import main
print("pid", os.getpid(), file=sys.stderr)
sys.exit(main(["lint", "--format", "json"]))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    lines = done.stderr.splitlines()
    own = int(lines[0].split()[1])
    assert (done.returncode, done.stdout, "\n".join(lines[1:]) + ("\n" if lines[1:] else "")) == expected
    assert forks.read_text().split() == ["1"]  # one worker, forked while this process had no other thread
    assert {int(pid) for pid in pids.read_text().split()} - {own}  # files analysed in it (this process takes
    # tasks too once no render runs)

# argocd-apps: an Application's chart with values files and a namespace renders after the analysis, its
# default value set before; kubeflow-failed-render and kustomize-app: failed renders (FW006, FW007) and
# kustomize's warnings, whose order follows the renders'
@needs_renderers
@pytest.mark.parametrize("name", ["argocd-apps", "kustomize-app", "helm-chart", "flux-fleet", "kubeflow-failed-render"])
def test_same_report_as_rendering_after_the_analysis(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _checkout(name, tmp_path)
    early = [_run(root, "json"), _run(root, "text")]  # cold, then warm
    shutil.rmtree(root / ".fieldwarden_cache", ignore_errors=True)
    monkeypatch.setattr(UnitRun, "start", lambda self, root, cache=True: None)
    after = [_run(root, "json"), _run(root, "text")]
    assert "Traceback" not in early[0][2] and early[0][1]
    assert early == after


def _run(root: Path, form: str) -> tuple[int, str, str]:
    """`fieldwarden lint --format FORM` from `root`: exit code, output, errors."""
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        os.chdir(root)
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["lint", "--format", form])
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def _made(name: str) -> Render:
    return Render([], [name], [RenderProblem(name, 1, 1, f"{name} warns")])


def test_renders_made_in_two_calls_are_ordered_as_one_call_orders_them() -> None:
    web, api, lone = RenderJob(KUSTOMIZE, "web"), RenderJob(KUSTOMIZE, "api"), RenderJob(KUSTOMIZE, "lone")
    chart = [RenderJob(HELM, "charts/db", values) for values in [(), ("charts/db/ci/a-values.yaml",), ("charts/db/ci/b-values.yaml",)]]
    released = RenderJob(HELM, "charts/db", ("charts/db/ci/a-values.yaml",), "prod", "db")  # an Application's
    jobs = [released, web, *chart, api, lone]
    early = Rendered({web: _made("web"), chart[0]: _made("db"), chart[1]: _made("db-a"), chart[2]: _made("db-b"),
                      api: _made("api")}, {}, frozenset({api}))
    late = Rendered({released: _made("db-prod")}, {}, frozenset())
    unused = Rendered({lone: _made("lone")}, {}, frozenset())
    both = merged([job for job in jobs if job != lone], [early, late, unused])
    # one call: cached renders in job order, then the rest as batched (a chart's sets together, largest first)
    assert list(both.renders) == [api, released, *chart, web]
    assert both.cached == frozenset({api}) and both.skipped == {}
    missing = renders._missing(KUSTOMIZE)  # no kustomize: skipped, whichever call met it
    assert merged(jobs, [early._replace(skipped={lone: missing}), late]).skipped == {lone: missing}


@needs_renderers
def test_a_warm_run_reads_the_render_cache_first_and_analyses_as_ever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to render (row g: kubeflow/manifests warm): no render thread, the worker pool may run."""
    root = _checkout("kustomize-app", tmp_path)
    cold = _run(root, "json")
    seen: list[bool] = []
    analyse_loaded = engine._analyse_loaded

    def loading(loaded: engine.Loaded, full: bool, alone: bool = False) -> list[Any]:
        seen.append(alone)
        return analyse_loaded(loaded, full, alone)

    monkeypatch.setattr(engine, "_analyse_loaded", loading)
    monkeypatch.setattr(renders, "render_pending", lambda *args, **kwargs: pytest.fail("rendered again"))
    assert _run(root, "json") == cold
    assert seen and not any(seen)


# shop-chart-and-kustomize: GoogleCloudPlatform/microservices-demo's helm-chart/ and kustomize/ (base), as
# in bench/real_trees.py's MIXED tree (row f), 12 findings on each. There the charts' findings were placed
# (their templates read again, ~0.4 s) only after the last kustomize build, with a core idle meanwhile.
def _jobs(*batches: tuple[str, str, int]) -> list[list[tuple[RenderJob, str, list[str]]]]:
    return [[(RenderJob(tool, folder, (f"v{n}",) if n else ()), "", []) for n in range(size)]
            for tool, folder, size in batches]


def test_charts_are_rendered_first_largest_first_and_the_report_keeps_the_batches_order() -> None:
    batches = _jobs((HELM, "big", 3), (KUSTOMIZE, "a", 1), (KUSTOMIZE, "b", 1), (HELM, "one", 1), (HELM, "two", 1))
    started = [batch[0][0].folder for batch in renders._scheduled(batches)]
    assert started == ["big", "one", "two", "a", "b"]
    pending = [item for batch in batches for item in batch]
    assert [batch[0][0].folder for batch in renders._batches(pending)] == ["big", "a", "b", "one", "two"]


@needs_renderers
def test_charts_findings_are_placed_after_the_last_chart_while_kustomize_builds_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _checkout("shop-chart-and-kustomize", tmp_path)
    monkeypatch.setattr(renders, "_cpus", lambda: 2)
    batch, place_ahead = renders._render_batch, UnitRun._place_ahead
    running: dict[str, int] = {HELM: 0, KUSTOMIZE: 0}
    seen: list[tuple[int, int]] = []
    placed = threading.Event()

    def rendering(root: Path, jobs: list[RenderJob], *args: Any, **kwargs: Any) -> list[Render]:
        tool = jobs[0].tool
        running[tool] += 1
        try:
            made = batch(root, jobs, *args, **kwargs)
            if tool == KUSTOMIZE:
                placed.wait(10)  # the build still runs while the chart's findings are placed
            return made
        finally:
            running[tool] -= 1

    def ahead(self: UnitRun, job: RenderJob) -> None:
        seen.append((running[HELM], running[KUSTOMIZE]))
        place_ahead(self, job)
        placed.set()

    monkeypatch.setattr(renders, "_render_batch", rendering)
    monkeypatch.setattr(UnitRun, "_place_ahead", ahead)
    early = [_run(root, "json"), _run(root, "text")]  # cold, then warm (nothing rendered: nothing placed ahead)
    assert seen == [(0, 1)]  # no Helm child beside the placement (the run's peak of memory); the build still ran
    shutil.rmtree(root / ".fieldwarden_cache", ignore_errors=True)
    monkeypatch.setattr(UnitRun, "start", lambda self, root, cache=True: None)
    after = [_run(root, "json"), _run(root, "text")]
    assert early == after
    assert early[0][0] == 0 and early[0][1].count('"FW201"') == 24  # (infos)
    assert "helm-chart/templates/adservice.yaml:37:1: FW201 info: Deployment/default/adservice:" in early[1][1]
    assert "kustomize/base/adservice.yaml:21:1: FW201 info: Deployment/default/adservice:" in early[1][1]


# Whichever renders finish first (a slow chart, a slow build), the same report in the same order.
@needs_renderers
@pytest.mark.parametrize("slow", [HELM, KUSTOMIZE])
@pytest.mark.parametrize("name", ["shop-chart-and-kustomize", "argocd-addons", "helm-chart"])
def test_same_report_whichever_renders_finish_first(name: str, slow: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = _checkout(name, tmp_path)
    expected = _run(root, "json")
    batch = renders._render_batch

    def rendering(root: Path, jobs: list[RenderJob], *args: Any, **kwargs: Any) -> list[Render]:
        made = batch(root, jobs, *args, **kwargs)
        if jobs[0].tool == slow:
            time.sleep(0.3)
        return made

    monkeypatch.setattr(renders, "_render_batch", rendering)
    monkeypatch.setattr(renders, "_cpus", lambda: 2)
    shutil.rmtree(root / ".fieldwarden_cache", ignore_errors=True)
    assert _run(root, "json") == expected
    assert "Traceback" not in expected[2] and expected[1]


# A UnitRun kept alive by a reference cycle (its _Early holding one of its bound methods) holds every
# object the run read until the interpreter's last collection walks them all: +0.5 s on
# kubeflow/manifests warm (row g), found by the bench after 1d3e4ea.
@needs_renderers
@pytest.mark.parametrize("name", ["shop-chart-and-kustomize", "kustomize-app"])
def test_the_run_s_objects_are_freed_when_the_lint_returns(name: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import weakref

    root = _checkout(name, tmp_path)
    made: list[weakref.ref[UnitRun]] = []
    init = UnitRun.__init__

    def recorded(self: UnitRun, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(UnitRun, "__init__", recorded)
    monkeypatch.setattr(renders, "_cpus", lambda: 2)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for run in ("cold", "warm"):
            made.clear()
            code, out, err = _run(root, "json")
            assert "Traceback" not in err and out, run
            assert made and [ref() for ref in made] == [None] * len(made), run
    finally:
        if collecting:
            gc.enable()
