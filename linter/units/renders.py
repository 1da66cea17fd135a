"""Rendered units: the project's kustomizations and charts, found, then rendered through the render cache.

`find` reads the project (kustomize.py and helm.py read kustomization files and charts; nothing
runs). `render` renders the jobs a run needs, each once, on every core, taking what the
render cache (render_cache.py) still holds. A missing tool skips its units with a notice
naming what to install; a render that fails skips its unit with the renderer's message,
placed on the file to fix.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, NamedTuple, Sequence

from .not_linted import EXTRA, NotLinted
from .rendered import Render, RenderProblem
from .plan import CHART_FILE, HELM, KUSTOMIZATION_NAMES, KUSTOMIZE, RenderJob



class HelmValues(NamedTuple):
    """A value set asked for on the command line: for one chart (or every chart when None)."""

    chart: str | None  # project-relative chart folder
    files: tuple[str, ...]  # project-relative values files


class Layout(NamedTuple):
    """The renders a project can make."""

    kustomizations: list[str]  # folders of the kustomizations no other includes ("." for the root)
    consumed_by: dict[str, frozenset[str]]  # each of those folders -> the files its build reads
    consumed: frozenset[str]  # files some kustomization reads (never linted alone)
    charts: dict[str, list[tuple[str, ...]]]  # chart folder -> value sets (() = its values.yaml)
    kustomize: Any = None  # kustomize.py's layout, handed back to it when rendering
    network: bool = False  # `lint --allow-network`: kustomize fetches remote bases, Helm builds dependencies (never cached)


EMPTY = Layout([], {}, frozenset(), {})


def find(root: Path, files: Sequence[str], helm_values: Sequence[HelmValues] = (), network: bool = False) -> Layout:
    """The kustomizations and charts among the project's files (project-relative POSIX paths);
    `network` (from the command line only) lets their renders fetch remote kustomize bases."""
    names = {path.rpartition("/")[2] for path in files}
    layout = EMPTY
    if names & set(KUSTOMIZATION_NAMES):
        from .kustomize import find_kustomizations

        found = find_kustomizations(root, files)
        layout = Layout(
            [_ours(folder) for folder in found.roots],
            {_ours(folder): frozenset(paths) for folder, paths in found.consumed.items()},
            found.all_consumed, {}, found,
        )
    if CHART_FILE in names:
        charts = _charts(root, files)
        for extra in helm_values:
            for chart in charts if extra.chart is None else [extra.chart]:
                if chart in charts and extra.files not in charts[chart]:
                    charts[chart].append(extra.files)
        layout = layout._replace(charts=charts)
    return layout._replace(network=network)


def _ours(folder: str) -> str:
    """kustomize.py names the project root ``; plan.py names it `.`."""
    return folder or "."


def _theirs(folder: str) -> str:
    return "" if folder == "." else folder


def _charts(root: Path, files: Sequence[str]) -> dict[str, list[tuple[str, ...]]]:
    """Charts and their value sets (helm.py decides which folders are charts and which sets they get)."""
    try:
        from .helm import find_charts  # type: ignore[import-not-found, unused-ignore]
    except ModuleNotFoundError as exc:  # an installation without the Helm renderer: charts stay unrendered
        if exc.name != f"{__package__}.helm":
            raise
        return {}

    return {folder: list(sets) for folder, sets in find_charts(root, files).items()}


class Rendered(NamedTuple):
    """The renders of a run."""

    renders: dict[RenderJob, Render]  # jobs that rendered (problems may hold warnings)
    skipped: dict[RenderJob, NotLinted]  # jobs no renderer could make, and why (FW007; `file` is filled in by the caller)
    cached: frozenset[RenderJob] = frozenset()  # those of `renders` the render cache held


def merged(jobs: Sequence[RenderJob], parts: Sequence[Rendered]) -> Rendered:
    """The jobs' renders, made by several `render` calls, in the order one call for all of them gives
    (what the run reports follows it): skipped and cached jobs in job order, then the rest as batched."""
    renders: dict[RenderJob, Render] = {}
    skipped: dict[RenderJob, NotLinted] = {}
    cached: set[RenderJob] = set()
    made: dict[RenderJob, Render] = {}
    for part in parts:
        skipped.update(part.skipped)
        cached.update(part.cached)
        made.update(part.renders)
    order = list(dict.fromkeys(jobs))
    pending: list[tuple[RenderJob, str, list[str]]] = [(job, "", []) for job in order if job in made and job not in cached]
    for job in [job for job in order if job in made and job in cached] + [job for batch in _batches(pending) for job, _, _ in batch]:
        renders[job] = made[job]
    return Rendered(renders, {job: skipped[job] for job in order if job in skipped}, frozenset(cached & set(renders)))


def render(
    root: Path, jobs: Sequence[RenderJob], layout: Layout, default_namespace: Callable[[str], str],
    cache: bool = True, made: Callable[[RenderJob, Render], None] | None = None,
) -> Rendered:
    """Render each job once (the render cache first), in parallel when several must really be rendered.

    `made` is called with each job rendered anew as soon as it is, on the thread that rendered it:
    work on it there overlaps with the renders still running.
    """
    return render_pending(root, look_up(root, jobs, layout, default_namespace, cache), layout, default_namespace, cache, made)


class LookedUp(NamedTuple):
    """The first half of `render`: what the render cache holds, and what must really be rendered."""

    known: Rendered  # the cached renders, and the jobs no renderer makes
    pending: list[tuple[RenderJob, str, list[str]]]  # (job, its renderer's cache key, the files it watches)
    started: float  # the run's Helm time budget counts from here (helm_budget.py)


def look_up(root: Path, jobs: Sequence[RenderJob], layout: Layout, default_namespace: Callable[[str], str],
            cache: bool = True) -> LookedUp:
    """Each job's render from the render cache, if it holds it; the jobs left to `render_pending`."""
    started = time.monotonic()
    renders: dict[RenderJob, Render] = {}
    skipped: dict[RenderJob, NotLinted] = {}
    tools = {tool: _tool(tool) for tool in {job.tool for job in jobs}}
    pending: list[tuple[RenderJob, str, list[str]]] = []
    digests: dict[str, bytes | None] = {}  # input files' keys, each hashed once for every cache lookup
    listed: dict[str, list[str]] = {}  # a chart's listing, walked once for all its value sets
    for job in dict.fromkeys(jobs):
        tool = tools[job.tool]
        if tool is None:
            skipped[job] = _missing(job.tool)
            continue
        watched = listed[job.folder] if job.tool == HELM and job.folder in listed else _watched(root, job)
        if job.tool == HELM:
            listed[job.folder] = watched
        cached = _cached(root, job, tool, watched, digests) if cache and not _fetches(job, layout) else None
        if cached is not None:
            if job.tool == KUSTOMIZE:  # objects never placed are placed again from their files when asked
                from .kustomize import bind

                bind(root, _theirs(job.folder), layout.kustomize, cached)
            else:
                from .helm import RELEASE, ValueSet
                from .helm import bind as bind_chart

                bind_chart(root, _theirs(job.folder), ValueSet(tuple(job.values), job.namespace or default_namespace(job.folder),
                                                               job.release or RELEASE, job.inline), cached)
            renders[job] = cached
        else:
            pending.append((job, tool, watched))
    return LookedUp(Rendered(renders, skipped, frozenset(renders)), pending, started)


def render_pending(root: Path, looked: LookedUp, layout: Layout, default_namespace: Callable[[str], str],
                   cache: bool = True, made: Callable[[RenderJob, Render], None] | None = None) -> Rendered:
    """The second half of `render`: the jobs the cache lacks rendered, after those it held."""
    pending, started = looked.pending, looked.started

    def make(batch: list[tuple[RenderJob, str, list[str]]]) -> list[tuple[RenderJob, Render]]:
        from . import render_cache

        jobs = [job for job, _, _ in batch]
        digests: dict[str, bytes | None] = {}  # a chart's value sets read the same files: each hashed once before
        folders: dict[str, str] = {}  # their folders' real paths, at that moment
        before = [{path: digests[path] if path in digests else digests.setdefault(path, render_cache.file_digest(root, path, folders))
                   for path in _known_inputs(job, layout, watched)} for job, _, watched in batch]
        after: dict[str, bytes | None] = {}  # and once after
        encoded: render_cache.Encoded = {}  # the objects the sets render alike, encoded once
        finished: set[int] = set()

        def finish(position: int, render: Render) -> None:
            job, tool, watched = batch[position]
            if cache and render_cache.lasting(render) and not _fetches(job, layout):  # failed renders too
                render_cache.save(root, job, tool, watched, render, before[position], after, encoded)
            if made is not None:
                made(job, render)
            finished.add(position)

        def early(position: int, render: Render) -> None:
            """A chart's set saved and analysed while the child renders the next. Not the last set: once
            the batch is over (its child idle), unitrun._Early places the charts' findings as they arrive."""
            if position < len(batch) - 1:
                finish(position, render)

        rendered = _render_batch(root, jobs, layout, default_namespace, slots, started, early if len(batch) > 1 else None)
        for position, render in enumerate(rendered):
            if position not in finished:
                finish(position, render)
        return list(zip(jobs, rendered))

    batches = _batches(pending)
    charts = sum(1 for batch in batches if batch[0][0].tool == HELM)
    if charts:
        from .helm import MEMORY, engine_installed
        from .helm_pool import expect, prestart

        expect(charts, _cpus())  # a Helm child is kept only for a chart to come, one per chart rendered at once
        if engine_installed():  # their children start while the first charts are read and copied
            prestart(min(charts, _cpus()), MEMORY)
    slots = None
    scheduled = _scheduled(batches)
    if len(batches) > 1 and _cpus() > 1:
        import threading
        from concurrent.futures import ThreadPoolExecutor  # renderers wait on subprocesses or release the GIL

        # A renderer child per core; one thread more places the fields of a finished render
        # meanwhile (that work holds the GIL, not a core). The children are what holds memory.
        slots = threading.BoundedSemaphore(_cpus())
        with ThreadPoolExecutor(max_workers=_cpus() + 1) as pool:
            made_in_turn = list(pool.map(make, scheduled))
    else:
        made_in_turn = [make(batch) for batch in scheduled]
    made_by = {id(batch): pairs for batch, pairs in zip(scheduled, made_in_turn)}
    done = [pair for batch in batches for pair in made_by[id(batch)]]  # (the order reported stays the batches')
    if any(job.tool == HELM for job, _, _ in pending):
        from .helm_pool import close_idle

        close_idle()  # the Helm children kept for the next chart: there is none
    renders = dict(looked.known.renders)
    for job, render_made in done:
        renders[job] = render_made
    return Rendered(renders, looked.known.skipped, looked.known.cached)


def _batches(pending: list[tuple[RenderJob, str, list[str]]]) -> list[list[tuple[RenderJob, str, list[str]]]]:
    """The renders grouped as they are made: a chart's value sets together (one Helm process, its
    templates parsed once), each kustomization alone; the largest groups first, to keep every core busy."""
    groups: dict[tuple[str, str], list[tuple[RenderJob, str, list[str]]]] = {}
    for item in pending:
        groups.setdefault((item[0].tool, item[0].folder), []).append(item)  # a kustomization is one job
    return sorted(groups.values(), key=len, reverse=True)


def _scheduled(batches: list[list[tuple[RenderJob, str, list[str]]]]) -> list[list[tuple[RenderJob, str, list[str]]]]:
    """The order the batches start in: the charts first (largest first), then the kustomizations. Once
    the last chart is rendered no Helm child is alive, and the linter places the charts' findings
    (their templates read again, unitrun.UnitRun.start) while the kustomize builds still run, instead
    of after the last render with a core idle."""
    return sorted(batches, key=lambda batch: batch[0][0].tool != HELM)  # (stable: largest first within each)


def _fetches(job: RenderJob, layout: Layout) -> bool:
    """Whether the job's render may read what no cache key covers: remote bases or chart dependencies,
    with --allow-network."""
    return layout.network


def _cached(root: Path, job: RenderJob, tool: str, watched: list[str],
            digests: dict[str, bytes | None] | None = None) -> Render | None:
    from . import render_cache

    return render_cache.load(root, job, tool, watched, digests)


def _known_inputs(job: RenderJob, layout: Layout, watched: list[str]) -> list[str]:
    if job.tool == KUSTOMIZE:
        return sorted(layout.consumed_by.get(job.folder, ()))
    return [*watched, *job.values, *([job.inline[0]] if job.inline else [])]


def _watched(root: Path, job: RenderJob) -> list[str]:
    """Files whose mere appearance changes a render: everything in a chart (a new template)."""
    if job.tool != HELM:
        return []
    from .render_cache import listing

    return listing(root, job.folder)


class _Passed(Exception):
    """What `each` raised, carried past the renderers' failures `_render_batch` reports."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(raised)
        self.raised = raised


def _render_batch(root: Path, jobs: list[RenderJob], layout: Layout, default_namespace: Callable[[str], str],
                  slots: ContextManager[Any] | None = None, started: float | None = None,
                  each: Callable[[int, Render], None] | None = None) -> list[Render]:
    """Render a kustomization, or the value sets of one chart, whatever fails. `each` is told of a
    chart's sets as they are made (helm.render_chart_sets); the list returned holds those same Renders."""
    job = jobs[0]
    handed: dict[int, Render] = {}

    def hand(position: int, render: Render) -> None:
        handed[position] = render
        try:
            if each is not None:
                each(position, render)
        except BaseException as exc:  # the caller's own failure, not the renderer's
            raise _Passed(exc) from exc

    try:
        if job.tool == KUSTOMIZE:
            from .kustomize import render_kustomization

            return [render_kustomization(root, _theirs(job.folder), layout=layout.kustomize, slot=slots,
                                         network=layout.network)]
        from .helm import RELEASE, ValueSet, render_chart_sets  # type: ignore[import-not-found, unused-ignore]

        sets = [ValueSet(tuple(one.values), one.namespace or default_namespace(one.folder), one.release or RELEASE,
                         one.inline) for one in jobs]
        made: list[Render] = render_chart_sets(root, _theirs(job.folder), sets, slot=slots, run_started=started,
                                               network=layout.network, arrived=hand if each is not None else None)
        return made
    except _Passed as passed:
        raise passed.raised from None
    except (OSError, ValueError, RuntimeError) as exc:  # renderers report problems; this is the last line
        where = f"{job.folder}/{CHART_FILE}" if job.tool == HELM else job.folder
        # (the sets already handed on stay as they were made)
        return [handed[position] if position in handed
                else Render([], [], [RenderProblem(where, 1, 1, f"{job.tool} failed: {exc}")], passing=True)
                for position in range(len(jobs))]


_TOOLS: dict[str, str | None] = {}


def _tool(tool: str) -> str | None:
    """What renders this kind of job, as a cache-key string (None when nothing can): path, size and time."""
    if tool not in _TOOLS:
        _TOOLS[tool] = _find_tool(tool)
    return _TOOLS[tool]


def _find_tool(tool: str) -> str | None:
    if tool == KUSTOMIZE:
        from . import kustomize
        from .tools import kustomize_identity

        identity = kustomize_identity()  # which kustomize would build, none run: a warm lint runs none
        if identity is None:
            return None
        return f"{identity} {_stamp(kustomize.__file__)}"
    import importlib.util

    spec = importlib.util.find_spec("helm_python")
    if spec is None:
        return None
    from . import helm  # type: ignore[attr-defined, unused-ignore]

    # the engine's own files (its Go library under lib/) stamped: what an upgrade or a reinstall replaces
    # (importlib.metadata's version, imported for this alone, was ~15 ms of a chart lint's start)
    package = os.path.dirname(spec.origin or "")
    try:
        engine = sorted(os.path.join(package, "lib", name) for name in os.listdir(os.path.join(package, "lib")))
    except OSError:
        engine = []
    sources = getattr(helm, "SOURCES", (helm.__file__,))  # the mapping code, as much as the engine, makes a render
    return f"helm-python-sdk {' '.join(_stamp(path) for path in (spec.origin or '', *engine, *sources))}"


def _stamp(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return "?"
    return f"{info.st_size}:{info.st_mtime_ns}"


def _missing(tool: str) -> NotLinted:
    if tool == KUSTOMIZE:
        return NotLinted("kustomize is not installed", f"{EXTRA} (kubectl), or put kubectl or kustomize on PATH", "")
    return NotLinted("Helm's engine is not installed", f"{EXTRA} (helm-python-sdk)", "")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1

