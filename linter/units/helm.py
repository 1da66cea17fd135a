"""Helm charts as apply units: find them, render them with Helm's own engine, map fields to lines.

`find_charts` lists a project's charts and the value sets each is rendered with: its
values.yaml alone, or, when it has `ci/*-values.yaml`, each of those over it instead (as
chart-testing does), then once per values file the caller adds. `render_chart_sets` renders
one chart with each of its value sets (`render_chart`: with one) through Helm's Go SDK (the
optional `helm-python-sdk` package: `pip install 'fieldwarden[render]'`) and maps the fields of
every rendered object to the template line that writes them; what `include` or `toYaml`
splices in maps to the helper line or the values-file line that writes it. A field whose
writer is not certain is left out of the table, so that rendered.locate() reports it at its
nearest enclosing field that is, marked approximate.

Rendering is offline and confined to the chart. Helm runs in a child process (helm_child.py,
one for all the value sets of a chart), under time budgets per set, chart and run
(helm_budget.py), a memory limit and no sockets (helm_seccomp.py), over a
private copy of the chart holding only the chart's own files:
Helm's loader follows symlinks out of a chart (their targets become `.Files`), and its schema
validation loads `$ref`s of values.schema.json from disk and network; neither reaches the
copy (links out of the chart are left out, and a schema is given to Helm only when
helm_schema.py proves it self-contained; either is said).
The template functions themselves are sandboxed by Helm: `.Files` sees only chart files,
`env`/`expandenv` do not exist, `lookup` returns nothing and `getHostByName` resolves
nothing when rendering offline (tests/linter/units/test_helm.py checks each).

The line mapping is fieldwarden's own (Helm keeps no source map, helm/helm#11552): the
template is read as indentation-structured YAML with its actions set aside, and the rendered
object is matched against that skeleton.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Iterator, NamedTuple, Sequence

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from . import helm_archive, helm_budget, helm_child, helm_fetch, helm_pool, helm_schema, helm_seccomp, helmmap, inline_values
from . import scratch as scratch_folders
from ..loader import load
from .not_linted import NotLinted
from .rendered import NAME_PATHS, FieldPath, Place, Render, RenderedObject, RenderProblem
from .plan import InlineValues

EXTRA = helm_child.EXTRA  # the optional dependency's extra in pyproject.toml
_PASSED = os.path.join(os.path.dirname(helm_child.__file__), "helm_passed.py")  # (the child's alone: not imported here)
SOURCES = (__file__, helmmap.__file__, helm_child.__file__, _PASSED, helm_pool.__file__, helm_schema.__file__,
           helm_archive.__file__, helm_budget.__file__, helm_seccomp.__file__, inline_values.__file__,
           helm_fetch.__file__)  # the code a render depends on besides Helm (for a render cache's key)
RELEASE = "release-name"  # `helm template`'s release name when none is given
TIMEOUT = helm_budget.SET  # seconds a value set may take by default, child process start included (helm_budget.py)
MEMORY = 1 << 30  # bytes of data the rendering process may hold
MAX_OUTPUT = 32 << 20  # characters of rendered manifests
HANDED = 256 << 10  # characters of a rendered document whose reading is handed to the linter (a larger one is read again
# when analysed: held meanwhile, it would sit beside the chart's Helm child, kyverno's 1.4 MB CRDs)
MAX_FILE = 5 << 20  # Helm's own limit on one chart file
MAX_CHART = 64 << 20  # bytes of one chart, subcharts and unpacked archives included
LARGE_CHART = 2 << 20  # bytes of a chart's files from which its Helm child grows to about twice a small chart's
_LARGE = threading.Lock()  # held while a large chart's child runs: two of them at once would double the run's peak
MAX_FILES = 10_000
MAX_NESTING = 20  # subcharts of subcharts... mapped to their files, at most this deep
_SKIP_DIRS = frozenset({".git", ".hg", ".svn"})


# -- discovery --------------------------------------------------------------------------------

def find_charts(root: Path, files: Iterable[str], extra_values: Sequence[str] = ()) -> dict[str, list[tuple[str, ...]]]:
    """The charts among `files` (project-relative POSIX paths) and the value sets of each.

    A chart is a folder with a Chart.yaml ("." for the root). Charts under another chart's
    `charts/` are its subcharts, rendered with it; a library chart (`type: library`) renders
    nothing: neither is a chart of its own here. Each value set is a tuple of values files
    applied over the chart's values.yaml, in order: one per `ci/*-values.yaml` of the chart, or
    `()` (values.yaml alone) when it has none, then one per file of `extra_values`.
    """
    names = sorted(set(files))
    folders = sorted({_folder(f) for f in names if f == "Chart.yaml" or f.endswith("/Chart.yaml")}, key=_depth)
    charts: dict[str, list[tuple[str, ...]]] = {}
    for folder in folders:
        if any(folder.startswith(_join(parent, "charts/")) for parent in folders if parent != folder):
            continue  # a subchart
        if _chart_type(root / folder / "Chart.yaml") == "library":
            continue
        ci = "ci/" if folder == "." else folder + "/ci/"
        # chart-testing's rule (`ct lint`): each ci/*-values.yaml over values.yaml, instead of the
        # bare defaults, which a chart may leave incomplete on purpose (a `required` value)
        sets: list[tuple[str, ...]] = [(f,) for f in names if f.startswith(ci) and "/" not in f[len(ci):]
                                       and f.endswith("-values.yaml")] or [()]
        sets.extend((f,) for f in extra_values)
        charts[folder] = sets
    return charts


def _folder(path: str) -> str:
    head, _, _ = path.rpartition("/")
    return head or "."


def _depth(folder: str) -> tuple[int, str]:
    return (0 if folder == "." else folder.count("/") + 1, folder)


def _chart_type(chart_yaml: Path) -> str:
    try:
        with open(chart_yaml, "rb") as handle:
            data = _plain_yaml(handle.read(1 << 20))
    except OSError:
        return ""
    return str(data.get("type") or "") if isinstance(data, dict) else ""


def _yaml(text: str, file: str) -> tuple[Node | None, Any, RenderProblem | None]:
    """The first document of a YAML text, node and data, screened as the linter screens files
    (nesting that would overflow libyaml's stack, alias bombs); a syntax error is a problem."""
    loaded = load(text)
    for problem in loaded.problems:
        if problem.code in ("FW001", "FW005"):
            return None, None, RenderProblem(file, problem.line, problem.column, problem.message)
    if not loaded.documents:
        return None, None, None
    return loaded.documents[0].node, loaded.documents[0].data, None


# -- rendering --------------------------------------------------------------------------------

class ValueSet(NamedTuple):
    """One render of a chart: its values files (after its values.yaml), release name and namespace."""

    files: tuple[str, ...] = ()  # project-relative values files, in order (`helm -f` each)
    namespace: str = ""  # the release namespace ("" = `default`)
    release: str = RELEASE
    inline: InlineValues | None = None  # values a GitOps object writes inline, over the files (inline_values.py)


def render_chart(
    root: Path,
    chart: str,
    values_files: Sequence[str],
    namespace: str | None = None,
    *,
    release: str = RELEASE,
    timeout: float | None = None,
) -> Render:
    """Render `chart` (a project-relative folder) with its values.yaml and `values_files`.

    As `helm template` with `-f` for each values file, for release `release` in `namespace`
    (None or "" for `default`), offline. Problems (a missing extra, a template error placed
    on its template line, missing dependencies, a render over time) come back in the Render,
    never as exceptions; `inputs` lists every file the render read.
    """
    return render_chart_sets(root, chart, [ValueSet(tuple(values_files), namespace or "", release)], timeout=timeout)[0]


def render_chart_sets(root: Path, chart: str, sets: Sequence[ValueSet], *, timeout: float | None = None,
                      budgets: helm_budget.Budgets | None = None, run_started: float | None = None,
                      slot: ContextManager[Any] | None = None, network: bool = False,
                      arrived: Callable[[int, Render], None] | None = None) -> list[Render]:
    """`render_chart` for each value set of one chart, in order: the chart read, copied, parsed once.

    One child process renders them all (a new one takes over after a set that fails it), and
    the templates the mapping parses serve every set. `slot` is held while a child runs
    (renders.py bounds the child processes alive at once with it). Time is bounded by
    `budgets` (default: helm_budget.from_environment(); `timeout` replaces its per-set
    seconds), the run's budget counted from `run_started` (time.monotonic(); default: now). With
    `network` (`lint --allow-network`), dependencies charts/ lacks are built first (helm_fetch.py).
    `arrived` is told each set's index and final Render, in order, as soon as it and those before it
    are made (while the child renders the next set); when no child runs, none is told.
    """
    chart = chart.strip("/") or "."
    here = root / chart
    chart_yaml = _join(chart, "Chart.yaml")
    common: list[RenderProblem] = []  # the chart's own problems, in every set's Render

    def each(problem: RenderProblem) -> list[Render]:
        return [Render([], [], [problem]) for _ in sets]

    try:
        budgets = budgets or helm_budget.from_environment()
    except ValueError as exc:
        return each(RenderProblem(chart_yaml, 1, 1, f"Helm charts are not rendered: {exc}"))
    if timeout is not None:
        budgets = budgets._replace(per_set=timeout)

    if not (here / "Chart.yaml").is_file():
        return each(RenderProblem(chart_yaml, 1, 1, f"no chart here: {chart_yaml} is missing"))
    if not _inside(here / "Chart.yaml", root):
        return each(RenderProblem(chart_yaml, 1, 1, "the chart lies outside the project (links resolved): not rendered"))
    snapshot = _snapshot(here, chart, common)
    chart_inputs = sorted({*(_join(chart, name) for name in snapshot.files), *snapshot.links})
    inputs = [[*chart_inputs, *(name for name in dict.fromkeys((*value_set.files, *(value_set.inline or ())[:1]))
                                if name not in chart_inputs)] for value_set in sets]
    if snapshot.fatal:
        return [Render([], read, list(common)) for read in inputs]
    meta = _metadata(snapshot.files.get("Chart.yaml", b""), chart_yaml, common)
    if meta is None:
        return [Render([], read, list(common)) for read in inputs]
    if meta.get("type") == "library":
        return [Render([], read, [*common, RenderProblem(chart_yaml, 1, 1, "a library chart renders nothing")])
                for read in inputs]
    layout = _Layout(chart, snapshot)
    clock = helm_budget.Clock(budgets, run_started)
    fetch_failed = ""
    if network:
        layout, fetch_failed = _with_dependencies(layout, snapshot, meta, clock)
    results: list[Render | None] = [None] * len(sets)
    ready: list[tuple[int, list[tuple[str, str]], _ValueSources, list[RenderProblem]]] = []
    for index, value_set in enumerate(sets):
        problems = list(common)
        values: list[tuple[str, str]] = []  # (project-relative file, text) of the value set, in order
        for name in value_set.files:
            text, problem = _read_values(root, name)
            if problem is not None:
                problems.append(problem)
            else:
                values.append((name, text))
        inline = _read_inline(root, value_set.inline, problems)
        if len(problems) > len(common):
            results[index] = Render([], inputs[index], problems)
            continue
        sources = _ValueSources(layout, values, problems, inline)
        if sources.broken:
            results[index] = Render([], inputs[index], problems)
            continue
        ready.append((index, [*values, *([(inline.file, inline.text)] if inline else [])], sources, problems))
    if not ready:
        return [render for render in results if render is not None]
    dependencies = layout.missing_dependencies(meta)
    unbuilt = [p for p in dependencies if _MISSING in p.message]
    if not engine_installed():
        missing = RenderProblem(chart_yaml, 1, 1, (
            f"rendering Helm charts needs Helm's engine: pip install 'fieldwarden[{EXTRA}]' "
            "(the helm-python-sdk package); the chart was not linted"))
        for index, _, _, problems in ready:
            results[index] = Render([], inputs[index], [*problems, *dependencies, missing])
        return [render for render in results if render is not None]
    copied: list[RenderProblem] = []
    with scratch_folders.folder("fieldwarden-helm-") as scratch:
        copy = Path(scratch) / "chart"
        layout.write(copy, copied)
        requests = [{"values": [text for _, text in values], "release": sets[index].release,
                     "namespace": sets[index].namespace or "default"} for index, values, _, _ in ready]
        labels = [_label(sets[index]) for index, _, _, _ in ready]
        templates = _Templates(layout)
        charted: list[_ChartContext] = []  # what places fields when a finding asks, read again then (bind)
        large = sum(map(len, snapshot.files.values())) >= LARGE_CHART
        told = 0  # the sets `arrived` was told of: results[:told]
        queued = time.monotonic()
        with contextlib.ExitStack() as turn:  # held while a child of this chart is alive (no longer: `ended`)
            if large:
                turn.enter_context(_LARGE)
            if slot is not None:
                turn.enter_context(slot)
            clock.waited(time.monotonic() - queued)
            # each set's reply read as it comes, while the child renders the next set
            for position, reply in enumerate(_run_helm(copy, requests, clock, labels, Path(scratch), templates.read_ahead,
                                                       ended=turn.close)):
                index, values, sources, problems = ready[position]
                problems.extend(dependencies)
                problems.extend(copied)
                made = _rendered(reply, inputs[index], layout, templates, sources, values, problems)
                bind(root, chart, sets[index], made, charted, layout if network else None)
                if unbuilt and reply.get("stage") != "limit":
                    made = _not_built(made, "error" in reply, unbuilt, fetch_failed, _fetchable(layout, meta))
                results[index] = made
                while arrived is not None and told < len(results) and (done := results[told]) is not None:
                    arrived(told, done)
                    told += 1
    return [render for render in results if render is not None]


def _fetchable(layout: _Layout, meta: dict[str, Any]) -> bool:
    """Whether a dependency build could bring the chart's dependencies: each from a repository (not file://)."""
    declared = _dependencies(meta, _plain_yaml(layout.files.get("requirements.yaml", b"")))
    return bool(declared) and all(helm_fetch.remote(d) for d in declared)


def _with_dependencies(layout: _Layout, snapshot: _Snapshot, meta: dict[str, Any],
                       clock: helm_budget.Clock) -> tuple[_Layout, str]:
    """The layout with the dependencies charts/ lacks built from their repositories (`--allow-network`),
    or as it was and why not. Only archives of missing dependencies are taken."""
    missing = [p.message.split(" ", 2)[1] for p in layout.missing_dependencies(meta) if _MISSING in p.message]
    if not missing or not _fetchable(layout, meta) or not engine_installed():
        return layout, ""
    with tempfile.TemporaryDirectory(prefix="fieldwarden-helm-deps-") as scratch:
        built = helm_fetch.build(snapshot.files, Path(scratch), clock.next_wait()[0], MEMORY, MAX_FILE, MAX_CHART)
    if built.error:
        return layout, built.error
    for name, data in built.archives.items():
        if any(name.startswith(f"charts/{wanted}-") for wanted in missing) and name not in snapshot.files:
            snapshot.files[name] = data
    return _Layout(layout.chart, snapshot), ""


def _not_built(render: Render, failed: bool, unbuilt: list[RenderProblem], fetch_failed: str = "",
               fetchable: bool = False) -> Render:
    """A set rendered while dependencies are not built: the unit is not (wholly) linted, one FW007, no FW006.

    What did render is linted; the dependencies' objects are not. When the set fails, Helm's error
    names what the absent subchart would define (`no template "common.names.fullname"`), which the
    repository need not fix: `helm dependency build` brings it. Other problems stay.
    """
    first = unbuilt[0]
    names = ", ".join(p.message.split(" ", 2)[1] for p in unbuilt)
    problems = render.problems[:-1] if failed else render.problems  # a failure's last problem is Helm's error, a consequence
    kept = [p for p in problems if p not in unbuilt]
    effect = "and it does not render without them" if failed else "so their objects are not linted"
    if fetch_failed:
        reason = f"the chart's dependencies could not be built ({fetch_failed}), {effect}"
        hint = "check this run's network access and the dependencies' repositories, or run `helm dependency build` first"
    else:
        reason = f"the chart's dependencies are not built ({names} not in charts/), {effect}"
        hint = "run `helm dependency build` on the chart before linting" + (
            ", or lint with --allow-network to let fieldwarden build them" if fetchable else "")
    return Render(render.objects, render.inputs, kept, not_linted=NotLinted(reason, hint, first.file, first.line,
                                                                            first.column))


def _label(value_set: ValueSet) -> str:
    """A value set as a person names it: its values files in order, its release."""
    parts = ["values.yaml", *value_set.files, *([f"the values inline in {value_set.inline[0]}"] if value_set.inline else [])]
    return f"{' + '.join(parts)} (release {value_set.release})"


def engine_installed() -> bool:
    """Whether Helm's engine (helm-python-sdk, the `render` extra) can be imported."""
    try:
        import importlib.util

        return importlib.util.find_spec("helm_python") is not None
    except (ImportError, ValueError):  # pragma: no cover - a broken environment
        return False


def _rendered(reply: dict[str, Any], inputs: list[str], layout: _Layout, templates: _Templates,
              sources: _ValueSources, values: list[tuple[str, str]], problems: list[RenderProblem]) -> Render:
    """One value set's Render from the child's reply: its objects mapped to lines, or the problem placed."""
    if "error" in reply:
        stage = "schema" if reply.get("type") == "HelmValuesError" and reply.get("stage") == "render" else str(reply.get("stage", ""))
        problems.append(_helm_problem(str(reply["error"]), stage, layout, sources, values))
        # a limit of this run (the parent's replies, "passing"), not the child's own output limit: not cached
        return Render([], inputs, problems, passing=reply.get("passing") is True)
    manifests = reply.get("manifests")
    if not isinstance(manifests, dict):
        problems.append(RenderProblem(_join(layout.chart, "Chart.yaml"), 1, 1, "Helm's render returned nothing readable"))
        return Render([], inputs, problems)
    return Render(_objects(manifests, layout, templates, sources, problems), inputs, problems)


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, links resolved, lies in `root` (links resolved)."""
    top = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _read_values(root: Path, name: str) -> tuple[str, RenderProblem | None]:
    """A values file's text. Only files of the project are read: a values file a repository names
    (a chart's ci/ folder, an Argo CD Application) may be a link to a file elsewhere on the machine."""
    path = root / name
    if path.exists() and not _inside(path, root):
        return "", RenderProblem(name, 1, 1, "values file outside the project (links resolved): not read")
    try:
        if path.stat().st_size > MAX_FILE:
            return "", RenderProblem(name, 1, 1, f"values file larger than {MAX_FILE >> 20} MiB")
        data = path.read_bytes()
    except OSError as exc:
        return "", RenderProblem(name, 1, 1, f"cannot read values file: {exc.strerror or exc}")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return "", RenderProblem(name, 1, 1, "values file is not UTF-8 text")


def _read_inline(root: Path, ref: InlineValues | None, problems: list[RenderProblem]) -> inline_values.Inline | None:
    """The inline values of a value set (None when it has none, or they cannot be read: a problem says why)."""
    if ref is None:
        return None
    text, problem = _read_values(root, ref[0])
    found = None
    if problem is None:
        found, problem = inline_values.parse(text, ref)
    if problem is not None:
        problems.append(problem)
    return found


def _metadata(data: bytes, chart_yaml: str, problems: list[RenderProblem]) -> dict[str, Any] | None:
    try:
        _, meta, problem = _yaml(data.decode("utf-8-sig"), chart_yaml)
    except UnicodeDecodeError:
        problems.append(RenderProblem(chart_yaml, 1, 1, "Chart.yaml is not UTF-8 text"))
        return None
    if problem is not None:
        problems.append(problem)
        return None
    if not isinstance(meta, dict):
        problems.append(RenderProblem(chart_yaml, 1, 1, "Chart.yaml is not a mapping"))
        return None
    return meta


# -- the chart's files, and the private copy Helm renders -------------------------------------

class _Snapshot:
    __slots__ = ("files", "links", "fatal")

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}  # chart-relative POSIX path -> content
        self.links: list[str] = []  # project-relative links left out
        self.fatal = False


def _snapshot(here: Path, chart: str, problems: list[RenderProblem]) -> _Snapshot:
    """The chart's files, read once; symlinks count only when they stay inside the chart."""
    snap = _Snapshot()
    top = os.path.realpath(here)
    total = 0
    seen: set[str] = set()
    stack: list[tuple[str, str]] = [(os.fspath(here), "")]
    while stack:
        folder, prefix = stack.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            name = prefix + entry.name
            shown = _join(chart, name)
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if target != top and not target.startswith(top + os.sep) or not os.path.exists(target):
                        snap.links.append(shown)
                        problems.append(RenderProblem(shown, 1, 1, (
                            "symlink to a file outside the chart: left out of the render "
                            "(Helm would read it into the chart)")))
                        continue
                if entry.is_dir():
                    if entry.name not in _SKIP_DIRS:
                        stack.append((entry.path, name + "/"))
                    continue
                if not entry.is_file():
                    continue
                size = entry.stat().st_size
                if size > MAX_FILE:
                    problems.append(RenderProblem(shown, 1, 1, f"chart file larger than Helm's limit of {MAX_FILE >> 20} MiB"))
                    snap.fatal = True
                    continue
                total += size
                if total > MAX_CHART or len(snap.files) >= MAX_FILES:
                    problems.append(RenderProblem(_join(chart, "Chart.yaml"), 1, 1, (
                        f"chart too large to render (over {MAX_CHART >> 20} MiB or {MAX_FILES:,} files)")))
                    snap.fatal = True
                    return snap
                with open(entry.path, "rb") as handle:
                    snap.files[name] = handle.read(MAX_FILE + 1)
            except OSError as exc:
                problems.append(RenderProblem(shown, 1, 1, f"cannot read chart file: {exc.strerror or exc}"))
    return snap


class _Chart(NamedTuple):
    """A chart of the render: the root, a subchart folder, or a subchart archive unpacked."""

    prefix: str  # chart-relative folder in the copy ("" for the root)
    names: tuple[str, ...]  # its name in Helm's template paths (several when aliased twice)
    home: str | None  # project-relative folder; None for an archive (not editable)
    archive: Place | None  # where an archive's objects are placed (its dependency in Chart.yaml)
    scope: tuple[str, ...]  # names from the root chart down: where its values sit in the parent's


class _Layout:
    """The chart's files as Helm will see them: subchart archives unpacked, links and foreign schemas out."""

    def __init__(self, chart: str, snapshot: _Snapshot) -> None:
        self.chart = chart
        self.files = dict(snapshot.files)
        self.archived: dict[str, str] = {}  # copy-relative file -> the project-relative archive it came from
        self.problems: list[RenderProblem] = []
        self.read: dict[str, tuple[Node | None, RenderProblem | None]] = {}  # its values.yaml files, read once for every set
        self._unpack()
        self.charts: list[_Chart] = []
        self._collect("", (), None)
        # Helm's template path prefix (`root/charts/cache`) -> chart
        self.by_helm_path: dict[str, _Chart] = {}
        for item in self.charts:
            for helm_path in self._helm_paths(item):
                self.by_helm_path[helm_path] = item

    def _unpack(self) -> None:
        """Subchart archives (`charts/*.tgz`, at any depth) become folders, within one budget (helm_archive.py).

        An archive past the budget, or unreadable, adds none of its files: a problem on it says why."""
        pending = sorted(name for name in self.files if _is_archive(name))
        budget = helm_archive.Budget(MAX_FILES - len(self.files), MAX_CHART, MAX_FILE)
        while pending:
            name = pending.pop(0)
            data = self.files.pop(name)
            where = _folder(name)
            origin = self.archived.get(name, _join(self.chart, name))
            try:
                unpacked = helm_archive.unpack(data, budget)
            except helm_archive.TooLarge as exc:
                self.problems.append(RenderProblem(origin, 1, 1, (
                    f"subchart archive not unpacked: {exc} (at most {MAX_FILES:,} files and {MAX_CHART >> 20} MiB "
                    "for a chart, archives included); its objects are not linted")))
                continue
            except helm_archive.Unreadable as exc:
                self.problems.append(RenderProblem(origin, 1, 1, f"unreadable subchart archive: {exc}"))
                continue
            for inner, content in unpacked.items():
                path = f"{where}/{inner}" if where != "." else inner
                self.files[path] = content
                self.archived[path] = origin
                if _is_archive(path):
                    pending.append(path)

    def _collect(self, prefix: str, scope: tuple[str, ...], names: tuple[str, ...] | None) -> None:
        """The chart at `prefix` and its subcharts, known by `names` (aliases) in Helm's paths."""
        meta = _plain_yaml(self.files.get(prefix + "Chart.yaml", b""))
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        if names is None:
            names = (name,)
        chart_yaml = prefix + "Chart.yaml"
        archived = self.archived.get(chart_yaml)
        home = None if archived else (_join(self.chart, prefix.rstrip("/")) if prefix else self.chart)
        archive_place: Place | None = None
        if archived:
            archive_place = self._dependency_place(scope, archived)
        self.charts.append(_Chart(prefix, names, home, archive_place, scope))
        deps = _dependencies(meta, _plain_yaml(self.files.get(prefix + "requirements.yaml", b"")))
        subs = sorted({n[len(prefix) + len("charts/"):].split("/", 1)[0] for n in self.files
                       if n.startswith(prefix + "charts/") and n.endswith("/Chart.yaml")
                       and n[len(prefix) + len("charts/"):].count("/") == 1})
        for sub in subs if len(scope) < MAX_NESTING else ():
            sub_prefix = f"{prefix}charts/{sub}/"
            sub_meta = _plain_yaml(self.files.get(sub_prefix + "Chart.yaml", b""))
            sub_name = str(sub_meta.get("name") or sub) if isinstance(sub_meta, dict) else sub
            aliases = tuple(str(d.get("alias") or sub_name) for d in deps if d.get("name") == sub_name) or (sub_name,)
            self._collect(sub_prefix, (*scope, aliases[0]), aliases)

    def _helm_paths(self, item: _Chart) -> Iterator[str]:
        if not item.prefix:
            yield item.names[0]
            return
        parent = next(c for c in self.charts if c.scope == item.scope[:-1])
        for parent_path in self._helm_paths(parent):
            for name in item.names:
                yield f"{parent_path}/charts/{name}"

    def _dependency_place(self, scope: tuple[str, ...], archive: str) -> Place:
        """An archived subchart's objects go on its entry in the parent's Chart.yaml, else the archive."""
        wanted = scope[-1] if scope else ""
        for file in ("Chart.yaml", "requirements.yaml"):  # Helm 3 still reads a requirements.yaml
            found = dependency_entry(self.files.get(file, b"").decode("utf-8", "replace").splitlines(), wanted,
                                     ("name", "alias"))
            if found is not None:
                return (_join(self.chart, file), *found)
        return (archive, 1, 1)

    def source_of(self, helm_path: str) -> tuple[_Chart, str] | None:
        """The chart a template of Helm's output comes from (`web/charts/cache/templates/x.yaml`),
        and the template's path within that chart."""
        best: tuple[str, _Chart] | None = None
        for prefix, item in self.by_helm_path.items():
            if helm_path.startswith(prefix + "/") and (best is None or len(prefix) > len(best[0])):
                best = (prefix, item)
        if best is None:
            return None
        return best[1], helm_path[len(best[0]) + 1:]

    def file_of(self, item: _Chart, inner: str) -> str | None:
        """The project-relative file of a chart's file; None inside an archive."""
        return None if item.home is None else _join(item.home, inner)

    def chart_yaml_text(self) -> str:
        return self.files.get("Chart.yaml", b"").decode("utf-8", "replace")

    def missing_dependencies(self, meta: dict[str, Any]) -> list[RenderProblem]:
        """Dependencies Chart.yaml declares that charts/ lacks (`helm template` refuses those charts)."""
        present = set()
        for item in self.charts:
            if item.prefix.count("charts/") == 1:
                sub_meta = _plain_yaml(self.files.get(item.prefix + "Chart.yaml", b""))
                if isinstance(sub_meta, dict):
                    present.add(str(sub_meta.get("name") or ""))
        found = []
        texts = [(name, self.files.get(name, b"").decode("utf-8", "replace").splitlines())
                 for name in ("Chart.yaml", "requirements.yaml")]  # Helm 3 still reads a requirements.yaml
        for dep in _dependencies(meta, _plain_yaml(self.files.get("requirements.yaml", b""))):
            name = str(dep.get("name") or "")
            if not name or name in present:
                continue
            file, (line, column) = next(((f, at) for f, text in texts
                                         if (at := dependency_entry(text, name, ("name",))) is not None),
                                        ("Chart.yaml", (1, 1)))
            source = f" from {dep['repository']}" if dep.get("repository") else ""
            found.append(RenderProblem(_join(self.chart, file), line, column, (
                f"dependency {name}{source} {_MISSING}: {_NOT_BUILT}")))
        return found + self.problems

    def write(self, copy: Path, problems: list[RenderProblem]) -> None:
        """The private copy Helm loads: plain files only, schemas as helm_schema.py screened them (or dropped)."""
        made: set[str] = set()  # folders of the copy created so far
        for name, data in self.files.items():
            if name.rsplit("/", 1)[-1] == "values.schema.json":
                try:
                    data = helm_schema.screen(data)
                except helm_schema.Unsafe as exc:
                    shown = self.archived.get(name) or _join(self.chart, name)
                    problems.append(RenderProblem(shown, 1, 1, (
                        f"values.schema.json not used: {exc}; fieldwarden gives Helm only a schema it can prove "
                        "self-contained, so the values are not checked against this one")))
                    continue
            path = copy / name
            folder = name.rpartition("/")[0]
            if folder not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(folder)
            path.write_bytes(data)


_NOT_BUILT = "its objects are not linted"
_MISSING = "is missing from charts/ (run `helm dependency build`)"  # a dependency not built


def dependency_entry(lines: Sequence[str], wanted: str, keys: Sequence[str]) -> tuple[int, int] | None:
    """Line and column of `wanted` as the `name` (or another of `keys`) of an entry of the top-level
    `dependencies:` list in a Chart.yaml's or requirements.yaml's lines, None if there is none.

    Only inside that list: a chart named like its dependency (argo-cd's redis-ha chart wrapping
    the redis-ha chart) has the same `name:` on its first line.
    """
    entry = re.compile(rf"\s*-?\s*(?:{'|'.join(map(re.escape, keys))}):\s*['\"]?({re.escape(wanted)})['\"]?\s*(?:#.*)?$")
    inside = False
    for number, line in enumerate(lines, 1):
        if line[:1] not in ("", " ", "\t", "-", "#"):  # a top-level key starts (or ends) the list
            inside = re.match(r"['\"]?dependencies['\"]?\s*:", line) is not None
            continue
        match = entry.match(line) if inside and wanted else None
        if match:
            return number, match.start(1) + 1
    return None


def _is_archive(name: str) -> bool:
    folder = _folder(name)
    return (folder == "charts" or folder.endswith("/charts")) and name.endswith((".tgz", ".tar.gz"))


def _plain_yaml(data: bytes) -> Any:
    return _yaml(data.decode("utf-8-sig", "replace"), "")[1]


def _dependencies(meta: Any, requirements: Any) -> list[dict[str, Any]]:
    found: list[Any] = []
    for source in (meta, requirements):
        if isinstance(source, dict) and isinstance(source.get("dependencies"), list):
            found.extend(source["dependencies"])
    return [d for d in found if isinstance(d, dict)]


# -- the child process ------------------------------------------------------------------------

def _run_helm(copy: Path, requests: list[dict[str, Any]], clock: helm_budget.Clock, labels: list[str],
              scratch: Path, idle: Callable[[Callable[[], bool]], None] | None = None,
              ended: Callable[[], None] | None = None) -> Iterator[dict[str, Any]]:
    """Render the copy once per request in child processes: per request, {"manifests": {template path:
    text}} or {"error", "stage"}.

    A child, because Helm's Go engine cannot be stopped from Python: a template looping for
    ever, or allocating until the Go runtime aborts the process, must not take the linter down.
    One child renders the sets in turn; when one fails it, the next child starts after that set.
    Once the chart's or the run's time budget is used up, the sets left are not rendered (each says so).
    Each reply is given as it comes (the caller maps it while the child renders the next set);
    `idle` is called while a child renders its first set, with what says when to stop: its reply is there, or
    a child renders on every core (helm_pool.core_idle);
    `ended` once no child of the chart is alive any more, before the last reply is given.
    """
    answered = 0
    while answered < len(requests):
        spent = clock.used_up()
        if spent is not None:
            for label in labels[answered:]:
                yield {"error": f"value set {label} not rendered: {clock.describe(spent)} was used up", "stage": "limit",
                       "passing": True}
            return
        for reply in _run_child(copy, requests[answered:], clock, labels[answered:], scratch, idle, ended):
            answered += 1
            yield reply


def _run_child(copy: Path, requests: list[dict[str, Any]], clock: helm_budget.Clock, labels: list[str],
               scratch: Path, idle: Callable[[Callable[[], bool]], None] | None = None,
               ended: Callable[[], None] | None = None) -> Iterator[dict[str, Any]]:
    """The replies of one child: one per request up to the first it could not answer (that one an error).

    The child comes from helm_pool.py (one that rendered an earlier chart whole, else a new one) and
    goes back to it only when it answered every request."""
    import queue

    request = json.dumps({"chart": os.fspath(copy), "sets": requests, "memory": MEMORY, "max_output": MAX_OUTPUT})
    texts: dict[str, str] = {}  # the templates' outputs so far, each once (_shared)
    last: dict[str, Any] = {}  # the templates' outputs of the last set answered: the child sends null for the same
    try:
        child = helm_pool.take(MEMORY)
    except OSError as exc:
        yield {"error": f"cannot start the rendering process: {exc.strerror or exc}", "stage": "limit", "passing": True}
        return
    errors_from = child.error_size()
    answered = 0
    stage: Any = None  # the last reply's
    whole = False
    final: dict[str, Any] | None = None  # the last set's reply: given once the child is ended or kept
    try:
        try:
            child.send(request.encode())
        except OSError:  # it ended before reading: its error output says why
            pass
        if idle is not None:  # while a core is idle: else other renders' children fill the wait
            idle(lambda: not child.lines.empty() or child.process.poll() is not None or not helm_pool.core_idle())
        while answered < len(requests):
            wait, limit = clock.next_wait()
            started = time.monotonic()
            try:
                line = child.lines.get(timeout=wait)
            except queue.Empty:
                if limit == "set":
                    stopped = f"rendering took longer than {wait:g} s and was stopped"
                else:
                    stopped = (f"value set {labels[answered]} stopped after {time.monotonic() - started:.1f} s "
                               f"and not rendered: {clock.describe(limit)} was used up")
                answered, stage = answered + 1, "limit"
                if child.process.poll() is None:  # stopped now, not once the caller has read the reply
                    child.process.kill()
                yield {"error": stopped, "stage": "limit", "passing": True}
                break
            try:
                reply = json.loads(line) if line else None
            except ValueError:
                reply = None
            if not isinstance(reply, dict):
                if child.process.poll() is None:
                    child.process.kill()
                child.process.wait()
                yield _died(child.error_output(errors_from), child.process.returncode)
                return
            answered, stage = answered + 1, reply.get("stage")
            if answered == len(requests):  # a large chart's child must not sit beside its last set's mapping
                final = _shared(_filled(reply, last), texts)
                break
            yield _shared(_filled(reply, last), texts)
        whole = answered == len(requests) and stage != "limit"
    finally:
        if whole:
            helm_pool.give_back(child)
        else:
            child.end(kill=True)
    if final is not None:
        if ended is not None:  # the child is kept or ended: a next chart's may start while this set is mapped
            ended()
        yield final


def _filled(reply: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """The reply with each template output the child sent as null (the last set's, alike) put back;
    `last` becomes this set's outputs."""
    manifests = reply.get("manifests")
    if isinstance(manifests, dict):
        for name, text in manifests.items():
            if text is None and name in last:
                manifests[name] = last[name]
        last.clear()
        last.update(manifests)
    return reply


def _shared(reply: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    """The reply with each template's output that an earlier set rendered alike replaced by that one
    string: most are alike (a chart's CRDs), and the mapping keys what it reads once by the text."""
    manifests = reply.get("manifests")
    if isinstance(manifests, dict):
        for name, text in manifests.items():
            if isinstance(text, str):
                manifests[name] = texts.setdefault(text, text)
    return reply


def _died(messages: str, code: int | None) -> dict[str, Any]:
    """Why a child ended without answering, from what it wrote on stderr."""
    # Go says "out of memory", or, when a new thread's stack is what the data limit refuses,
    # "pthread_create failed: Resource temporarily unavailable"
    if any(sign in messages for sign in ("out of memory", "cannot allocate memory", "pthread_create failed")):
        return {"error": f"rendering needed more than {MEMORY >> 20} MiB of memory and was stopped", "stage": "limit",
                "passing": True}
    last = messages.strip().splitlines()[-1:] or [f"exit code {code}"]
    return {"error": f"the rendering process failed: {last[0][:300]}", "stage": "limit", "passing": True}


# -- Helm's errors, placed --------------------------------------------------------------------

_LOCATION = re.compile(r"(?P<path>[\w.@+-]+(?:/[\w.@+-]+)*/templates/[^\s:()]+):(?P<line>\d+)(?::(?P<col>\d+))?")
_SCHEMA_AT = re.compile(r"at '(/[^']*)'")


def _helm_problem(message: str, stage: str, layout: _Layout, sources: _ValueSources,
                  values: list[tuple[str, str]]) -> RenderProblem:
    """Helm's error on the file and line it names: the innermost template location, else Chart.yaml."""
    chart_yaml = _join(layout.chart, "Chart.yaml")
    text = " ".join(message.split())
    if stage.startswith("values:"):
        name = values[int(stage.split(":", 1)[1])][0]
        numbered = re.search(r"line (\d+)", message)
        return RenderProblem(name, int(numbered.group(1)) if numbered else 1, 1, f"Helm cannot read these values: {text}")
    if stage in ("limit", "import"):
        return RenderProblem(chart_yaml, 1, 1, text)
    if stage == "schema":
        for match in _SCHEMA_AT.finditer(message):
            path = tuple(part.replace("~1", "/").replace("~0", "~") for part in match.group(1).split("/")[1:])
            written = sources.find((), tuple(int(p) if p.isdigit() else p for p in path))
            if written is not None:
                return RenderProblem(*written[0], f"values do not match the chart's values.schema.json: {text}")
        return RenderProblem(_join(layout.chart, "values.schema.json"), 1, 1, f"values do not match the chart's schema: {text}")
    places: list[Place] = []
    for match in _LOCATION.finditer(message):
        found = layout.source_of(match.group("path"))
        if found is None:
            continue
        item, inner = found
        file = layout.file_of(item, inner)
        if file is None:
            places.append(item.archive or (chart_yaml, 1, 1))
        else:
            places.append((file, int(match.group("line")), int(match.group("col") or 1)))
    if places:
        file, line, column = places[-1]
        return RenderProblem(file, line, column, f"helm template failed: {text}")
    return RenderProblem(chart_yaml, 1, 1, f"helm template failed: {text}")


# -- values files, with positions -------------------------------------------------------------

class _ValueSources:
    """The values files of a render, parsed with positions: where a values path is set, and to what."""

    def __init__(self, layout: _Layout, values: list[tuple[str, str]], problems: list[RenderProblem],
                 inline: inline_values.Inline | None = None) -> None:
        self.broken = False
        self.charts: dict[tuple[str, ...], tuple[str, Node]] = {}  # scope -> its values.yaml
        for item in layout.charts:
            data = layout.files.get(item.prefix + "values.yaml")
            if data is None or item.home is None:
                continue
            node = self._compose(_join(item.home, "values.yaml"), data.decode("utf-8-sig", "replace"), problems, layout.read)
            if node is not None:
                self.charts[item.scope] = (_join(item.home, "values.yaml"), node)
        self.sets: list[tuple[str, Node]] = []
        for name, text in values:
            node = self._compose(name, text, problems)
            if node is not None:
                self.sets.append((name, node))
        if inline is not None and inline.node is not None:
            self.sets.append((inline.file, inline.node))  # composed already, its marks in the GitOps file
        self.approximate = frozenset([inline.approximate] if inline is not None and inline.approximate else [])
        self._known: dict[tuple[tuple[str, ...], FieldPath], list[tuple[str, int, int, Node]]] = {}  # _layers, asked before
        self._truths: dict[tuple[tuple[str, ...], FieldPath], bool | None] = {}  # truthy, asked before

    def _compose(self, name: str, text: str, problems: list[RenderProblem],
                 read: dict[str, tuple[Node | None, RenderProblem | None]] | None = None) -> Node | None:
        known = read.get(name) if read is not None else None
        if known is None:
            node, _, problem = _yaml(text, name)
            known = node, problem
            if read is not None:
                read[name] = known
        node, problem = known
        if problem is not None:
            problems.append(problem)
            self.broken = True
            return None
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return None  # an empty document (`---` and comments, as chart-testing's ci/default-values.yaml): Helm reads {}
        if node is not None and not isinstance(node, MappingNode):
            problems.append(RenderProblem(name, node.start_mark.line + 1, node.start_mark.column + 1,
                                          "values must be a mapping of keys to values"))
            self.broken = True
            return None
        return node

    def _layers(self, scope: tuple[str, ...], path: FieldPath) -> list[tuple[str, int, int, Node]]:
        """Every file of the set that writes `path` for the chart at `scope`, the one that wins first
        (the mapping asks the same paths for every object of the render: each is walked once)."""
        known = self._known.get((scope, path))
        if known is None:
            known = self._known[scope, path] = list(self._walk_layers(scope, path))
        return known

    def _walk_layers(self, scope: tuple[str, ...], path: FieldPath) -> Iterator[tuple[str, int, int, Node]]:
        candidates: list[tuple[str, Node, FieldPath]] = [(name, node, (*scope, *path)) for name, node in reversed(self.sets)]
        for depth in range(len(scope) + 1):
            found = self.charts.get(scope[:depth])
            if found is not None:
                candidates.append((found[0], found[1], (*scope[depth:], *path)))
        for name, node, full in candidates:
            hit = _walk(node, full)
            if hit is not None:
                yield name, *hit

    def find(self, scope: tuple[str, ...], path: FieldPath) -> tuple[Place, Node] | None:
        """Where the value set writes `path` of the chart at `scope`: the file that wins, its line."""
        for name, line, column, node in self._layers(scope, path):
            return (name, line, column), node
        return None

    def truthy(self, scope: tuple[str, ...], path: FieldPath) -> bool | None:
        """Whether the value at `path` is true for a template's `if`; absent values are false."""
        key = (scope, path)
        if key not in self._truths:
            self._truths[key] = self._truthy(scope, path)
        return self._truths[key]

    def _truthy(self, scope: tuple[str, ...], path: FieldPath) -> bool | None:
        layers = [node for _, _, _, node in self._layers(scope, path)]
        if not layers:
            return False
        if isinstance(layers[0], MappingNode):
            return any(isinstance(node, MappingNode) and node.value for node in layers)
        if isinstance(layers[0], SequenceNode):
            return bool(layers[0].value)
        text = str(layers[0].value)
        tag = layers[0].tag.rsplit(":", 1)[-1]
        if tag == "null":
            return False
        if tag == "bool":
            return text.lower() in ("true", "yes", "on", "y")
        if tag in ("int", "float"):  # 0, 0.0, -0, 0x0, 0_000 are false
            return any(digit not in "0" for digit in re.sub(r"^[-+]?(0[xob])?|[._]|e.*$", "", text.lower()))
        return text != ""

    def size(self, scope: tuple[str, ...], path: FieldPath) -> int | None:
        """Items of the list at `path`, or keys of the map (maps merge over the files)."""
        keys: set[str] = set()
        for _, _, _, node in self._layers(scope, path):
            if isinstance(node, MappingNode):
                keys.update(k.value for k, _ in node.value if isinstance(k, ScalarNode))
                continue
            if not keys and isinstance(node, SequenceNode):
                return len(node.value)
            break
        return len(keys) if keys else None


class _ScopedValues:
    """The value set as the templates of one chart (the root, or a subchart) see it."""

    def __init__(self, sources: _ValueSources, scope: tuple[str, ...]) -> None:
        self.sources = sources
        self.scope = scope

    def find(self, path: FieldPath) -> tuple[Place, Node] | None:
        return self.sources.find(self.scope, path)

    def size(self, path: FieldPath) -> int | None:
        return self.sources.size(self.scope, path)

    def truthy(self, path: FieldPath) -> bool | None:
        return self.sources.truthy(self.scope, path)


def _walk(node: Node, path: FieldPath) -> tuple[int, int, Node] | None:
    line, column = node.start_mark.line + 1, node.start_mark.column + 1
    for part in path:
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.value == str(part):
                    line, column, node = key.start_mark.line + 1, key.start_mark.column + 1, value
                    break
            else:
                return None
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line, column = node.start_mark.line + 1, node.start_mark.column + 1
        else:
            return None
    return line, column, node


# -- rendered objects -------------------------------------------------------------------------

_SEPARATOR = re.compile(r"(?m)^---[ \t]*(?:#[^\n]*)?(?:\n|$)")
_DEFINES = re.compile(rb"define|block")  # the words of an action that defines a helper (helmmap._action)


class _Templates:
    """The chart's templates, parsed once, and the helpers they define."""

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self.parsed: dict[str, helmmap.Template] = {}
        self.helpers: dict[str, list[tuple[int, str, helmmap.Container]]] | None = None  # by name, when asked
        self.pieces: dict[tuple[str, str], _Piece] = {}  # (Helm's template path, a document it rendered) -> it
        self.split: dict[str, tuple[str, list[str]]] = {}  # Helm's template path -> its last output, cut into documents
        self.placed: dict[tuple[str, str], _Piece] = {}  # the same as `pieces`, of the documents bind() places

    def read_ahead(self, answered: Callable[[], bool]) -> None:
        """Parse the charts' templates until `answered` (the Helm child renders meanwhile: a chart's first
        set is a wait the parse fills, kyverno's two 1.4 MB CRD templates ~1 s of it)."""
        for item in self.layout.charts:
            folder = item.prefix + "templates/"
            for key in self.layout.files:
                if answered():
                    return
                name = key[len(folder):]
                if key.startswith(folder) and not name.rpartition("/")[2].startswith("_") and name != "NOTES.txt":
                    self.template(item, key[len(item.prefix):])

    def template(self, item: _Chart, inner: str) -> helmmap.Template | None:
        file = self.layout.file_of(item, inner)
        key = item.prefix + inner
        if file is None or key not in self.layout.files:
            return None
        if key not in self.parsed:
            self.parsed[key] = helmmap.parse_template(self.layout.files[key].decode("utf-8", "replace"), file)
        return self.parsed[key]

    def helper(self, name: str) -> helmmap.Container | None:
        """A helper by name; of several, the one Helm keeps (the least deep chart's, as Helm parses it last)."""
        if self.helpers is None:
            self.helpers = {}
        if name not in self.helpers:
            found = []
            wanted = f'"{name}"'.encode()
            for item in self.layout.charts:
                if item.home is None:
                    continue
                for key, data in self.layout.files.items():
                    # a cheap look before parsing: the name, and a word that defines (`define`, `block`), not
                    # only the `include`s of it every template has (placing one finding parsed most of a chart)
                    if key.startswith(item.prefix + "templates/") and wanted in data and _DEFINES.search(data):
                        template = self.template(item, key[len(item.prefix):])
                        if template is not None and name in template.defines:
                            found.append((item.prefix.count("/"), key, template.defines[name]))
            self.helpers[name] = found
        defined = self.helpers[name]
        return min(defined, key=lambda f: (f[0], f[1]))[2] if defined else None


def _objects(manifests: dict[str, Any], layout: _Layout, templates: _Templates, sources: _ValueSources,
             problems: list[RenderProblem]) -> list[RenderedObject]:
    memo: dict[int, bool | None] = {}  # conditions evaluated, by template member (one value set)
    chart_yaml = _join(layout.chart, "Chart.yaml")
    objects: list[RenderedObject] = []
    for helm_path in sorted(manifests):
        text = manifests[helm_path]
        if not isinstance(text, str) or helm_path.endswith("NOTES.txt") or not text.strip():
            continue
        found = layout.source_of(helm_path)
        item, inner = found if found is not None else (None, "")
        template = templates.template(item, inner) if item is not None else None
        file = layout.file_of(item, inner) if item is not None else None
        fallback: Place = (file, 1, 1) if file else (item.archive if item is not None and item.archive else None) or (chart_yaml, 1, 1)
        last = templates.split.get(helm_path)
        if last is None or last[0] != text:  # another set's output alike (a chart's CRDs) is not cut again
            last = templates.split[helm_path] = (text, _SEPARATOR.split(text))
        for piece in last[1]:
            seen = templates.pieces.get((helm_path, piece))
            handed = None  # the piece's reading, handed to the linter with its first object (not read again)
            if seen is None:  # not rendered by an earlier value set of the chart
                seen = templates.pieces[helm_path, piece] = _Piece(piece, load(piece))
                handed = seen.loaded if len(piece) < HANDED else None
            if seen.broken is not None:
                problems.append(RenderProblem(*fallback, f"the template renders invalid YAML (line {seen.broken.line} "
                                              f"of a document it renders): {seen.broken.message}"))
                continue
            if seen.empty:
                continue
            piece = seen.text  # one string for the same object in every value set
            if template is None or item is None or seen.too_complex:  # the linter reports it when it loads the text
                objects.append(RenderedObject(piece, {}, fallback, loaded=handed))
                continue
            values = _ScopedValues(sources, item.scope)
            if sources.approximate:  # inline values place near their lines: which paths, only a whole mapping says
                anchor, positions = seen.mapped(template, templates.helper, values, memo)
                objects.append(RenderedObject(piece, positions, anchor, frozenset(
                    p for p, at in positions.items() if at in sources.approximate), loaded=handed))
                continue
            anchor, named = seen.mapped(template, templates.helper, values, memo, NAME_PATHS)
            objects.append(RenderedObject(piece, named, anchor, place=_unbound, settled=NAME_PATHS,
                                          recipe=(helm_path, "", 0), loaded=handed))  # render_chart_sets binds it
    return objects


def _unbound() -> dict[FieldPath, Place]:
    raise LookupError("a rendered object's positions asked for before bind() gave it its placer")


_ChartContext = tuple[_Layout, _Templates] | None


def bind(root: Path, chart: str, value_set: ValueSet, render: Render, charted: list[_ChartContext] | None = None,
         layout: _Layout | None = None) -> None:
    """Give the objects of a render never placed (just rendered, or read back from the cache) what places
    their fields, from the chart's files and the set's values: read and parsed again, once, when the
    first of them is asked for (a chart's parsed templates kept for every object held ~40 MB over a
    run of prometheus-community's charts; few objects have findings). `charted`, shared by a chart's
    sets, keeps the chart's part once made; `layout`, the chart as rendered when it is not only its files
    (dependencies built with --allow-network)."""
    shared: list[_ChartContext] = [] if charted is None else charted
    made: list[tuple[_Layout, _Templates, _ValueSources] | None] = []

    def context() -> tuple[_Layout, _Templates, _ValueSources] | None:
        if not made:
            if not shared:
                shared.append(_chart_context(root, chart.strip("/") or ".", layout))
            made.append(None if shared[0] is None else _context(root, shared[0], value_set))
        return made[0]

    def placer(text: str, helm_path: str) -> Callable[[], dict[FieldPath, Place]]:
        def place() -> dict[FieldPath, Place]:
            known = context()
            found = known[0].source_of(helm_path) if known is not None else None
            template = known[1].template(*found) if known is not None and found is not None else None
            if known is None or found is None or template is None:
                return {}
            # a document the chart's sets render alike (its CRDs, most objects) is read and mapped once: a
            # later set's mapping is the first's when the values answer the mapping's questions alike
            piece = known[1].placed.get((helm_path, text))
            if piece is None:
                piece = known[1].placed[helm_path, text] = _Piece(text, load(text))
            if piece.broken is not None or piece.empty or piece.too_complex:
                return {}
            return piece.mapped(template, known[1].helper, _ScopedValues(known[2], found[0].scope), {})[1]
        return place

    for obj in render.objects:
        if obj.recipe is not None:
            obj.defer(placer(obj.text, obj.recipe[0]))


def _chart_context(root: Path, chart: str, layout: _Layout | None) -> _ChartContext:
    """A chart's layout and templates, as a render read them (bind)."""
    if layout is None:
        snapshot = _snapshot(root / chart, chart, [])
        if snapshot.fatal:
            return None
        layout = _Layout(chart, snapshot)
    return layout, _Templates(layout)


def _context(root: Path, charted: tuple[_Layout, _Templates], value_set: ValueSet) -> tuple[_Layout, _Templates, _ValueSources] | None:
    """The chart's part with the value set's parsed values, as a render made them (bind)."""
    layout, templates = charted
    problems: list[RenderProblem] = []
    values: list[tuple[str, str]] = []
    for name in value_set.files:
        text, problem = _read_values(root, name)
        if problem is not None:
            return None
        values.append((name, text))
    sources = _ValueSources(layout, values, problems, _read_inline(root, value_set.inline, problems))
    return None if sources.broken else (layout, templates, sources)


class _Piece:
    """One document a template renders, as the chart's value sets render it: loaded once, and the
    places of its fields under each set of answers the mapping got from the values (helmmap.answers_alike)."""

    __slots__ = ("text", "broken", "too_complex", "empty", "loaded", "mappings", "named")

    MAPPINGS = 4  # different mappings of one document kept for the chart's later value sets

    def __init__(self, text: str, loaded: Any) -> None:
        self.text = text
        self.broken = next((p for p in loaded.problems if p.code == "FW001"), None)
        self.too_complex = any(p.code == "FW005" for p in loaded.problems)
        self.empty = self.broken is None and (not loaded.documents or loaded.documents[0].data is None
                                              and not self.too_complex)
        mappable = self.broken is None and not self.empty and not self.too_complex
        self.loaded: Any = loaded if mappable else None  # dropped once mapped (what is mapped again loads it again)
        self.mappings: list[tuple[helmmap.Asked, Place, dict[FieldPath, Place]]] = []
        self.named: list[tuple[helmmap.Asked, Place, dict[FieldPath, Place]]] = []  # the same, of its name only

    def mapped(self, template: helmmap.Template, helpers: helmmap.Helpers, values: _ScopedValues,
               memo: dict[int, bool | None], wanted: frozenset[FieldPath] | None = None) -> tuple[Place, dict[FieldPath, Place]]:
        """The anchor and places of the document's fields for this value set (of `wanted` only, when given)."""
        kept = self.mappings if wanted is None else self.named
        for answered, anchor, positions in kept:
            if helmmap.answers_alike(answered, values, memo):
                return anchor, positions
        loaded = self.loaded if self.loaded is not None else load(self.text)
        self.loaded = None
        asked: helmmap.Asked = {}
        try:
            anchor, positions = helmmap.map_object(loaded.documents[0].node, template, helpers, values, memo, asked, wanted)
        except Exception:  # a template the mapping cannot read must not cost the render: findings go on its file
            anchor, positions = (template.file, 1, 1), {}
        if len(kept) < self.MAPPINGS:
            kept.append((asked, anchor, positions))
        return anchor, positions
