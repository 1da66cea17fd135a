"""The units one run lints, and what their renders contribute.

A unit is linted when it holds a file being linted: one of its plain manifests, or a file one
of its renders reads (pre-commit passes a changed patch: every overlay using it is linted,
with the rest of each as context). Renders are made only for such units; what is found on a
rendered object is reported where rendered.locate places it, in whichever file that is.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable, NamedTuple, Protocol, Sequence
else:
    from ..policies.records import NamedTuple

from ..policies.config import Settings
from ..policies.model import SEVERITY_RANK
from ..policies.registry import RULES
from ..policies.rule import OBJECT
from .analyse import FileResult, Finding, analyse
from .crds import RenderCRDs
from .sets import Member, annotated, labelled
from .units.plan import CHART_FILE, HELM, KUSTOMIZATION_NAMES, KUSTOMIZE, InlineValues, RenderJob, Unit, folder_of, folders_with_ancestors, is_below

if TYPE_CHECKING:  # the renderers' side is imported when a unit has renders (units/renders.py)
    from .units.not_linted import NotLinted
    from .units.rendered import Render, RenderedObject
    from .units.renders import Layout, Rendered


RENDER_FAILED = "FW006"
NOT_LINTED = "FW007"


if TYPE_CHECKING:  # (a Protocol for annotations only: typing is not imported at run time)
    class Names(Protocol):
        """Project-relative keys of files and the names findings show (engine._Names)."""

        base: str  # the project root (absolute)

        def display(self, key: str) -> str: ...

        def id(self, display: str) -> str: ...


class _Analysed(NamedTuple):
    obj: RenderedObject
    anchor: str  # the file it is anchored in, as shown
    result: FileResult  # its analysis (object rules run, positions in the rendered text)


class UnitRun:
    """Chooses the units to lint, renders them, and places what is found on rendered objects."""

    def __init__(
        self, names: Names, wanted: set[str], settings_for: Callable[[str], Settings], layout: Layout | None
    ) -> None:
        self.names = names
        self.wanted = wanted  # keys of the files being linted
        self.settings_for = settings_for
        self.layout = layout
        self.renders: dict[RenderJob, Render] = {}
        self.notices: list[str] = []
        self.unlinted: set[str] = set()  # files (as shown) a skipped render would have read
        self.failures: list[Finding] = []  # FW006: renders that failed, placed in a file being linted; FW007: units not linted
        self._analysed: dict[RenderJob, list[_Analysed]] = {}
        self.crds = RenderCRDs()  # the project's CRDs (engine.py sets `project`), and each render's own for its objects
        self._parsed: dict[int, tuple[RenderedObject, Any]] = {}  # id(rendered object) -> (it, its data)
        self._texts: dict[tuple[str, str], FileResult] = {}  # (anchor file, rendered text) -> its analysis
        self.using: dict[RenderJob, list[Unit]] = {}  # job -> the linted units that render it
        self.chosen: list[Unit] = []  # what `relevant` returned (the live checks go through them again)
        self._early: _Early | None = None  # the renders `start` began

    def start(self, root: str, cache: bool = True) -> None:
        """Begin, on another thread, the renders the layout names alone, while this one analyses the files.

        Every kustomization root is rendered as `RenderJob(KUSTOMIZE, root)` whatever declares it,
        and each chart with each of its own value sets: neither depends on what the files hold.
        Only GitOps objects add renders (a chart's release, namespace, inline values); those wait
        for the analysis (`relevant`). Of these jobs, those that may read a file being linted
        start now (`relevant` makes the same choice). What `relevant` ends up not using is dropped.
        The charts render first; once the last has, their findings are placed while the kustomize
        builds finish (`_Early.result`), not after the last render with a core idle.
        """
        layout = self.layout
        if layout is None or not (layout.kustomizations or layout.charts):
            return
        folders = folders_with_ancestors(self.wanted)
        jobs = [RenderJob(KUSTOMIZE, folder) for folder in sorted(layout.kustomizations)]
        jobs.extend(RenderJob(HELM, chart, tuple(values)) for chart in sorted(layout.charts)
                    for values in layout.charts[chart] or [()])
        jobs = [job for job in jobs if self._may_read(job, folders)]
        if jobs:
            from pathlib import Path  # (not imported by a lint without renders)

            self._early = _Early(Path(root), jobs, layout, self._default_namespace, cache, self._analyse_if_read,
                                 self._place_ahead)

    def rendering(self) -> bool:
        """Whether renders `start` began still run (no worker process may be forked meanwhile: see engine.py)."""
        return self._early is not None and self._early.running()

    def _analyse_if_read(self, job: RenderJob, made: Render) -> None:
        if not self.wanted.isdisjoint(made.inputs):  # while other renders run
            self._analyse(job, made)

    def _place_ahead(self, job: RenderJob) -> None:
        """Place the findings on a chart's rendered objects while the last renders run (the kustomize builds,
        renders._scheduled), as `rendered_findings` will: its places are the same whenever they are worked out."""
        for item in self._analysed.get(job, ()):
            for finding in item.result.findings:
                if RULES[finding.code].SCOPE == OBJECT:
                    self.place(item.obj, finding.raw_path)

    def relevant(self, units: Sequence[Unit], root: str, cache: bool = True) -> list[Unit]:
        """The units holding a file being linted; their renders made."""
        folders = folders_with_ancestors(self.wanted)
        candidates: list[tuple[Unit, bool]] = []
        jobs: list[RenderJob] = []
        for unit in units:
            # a changed GitOps object (an Argo CD Application, a Flux Kustomization or HelmRelease) changes
            # what its unit is (its path, namespace, release, values): the whole unit is linted, as its files are
            plain = any(key in self.wanted for key in unit.files) or self.declared_by_wanted(unit)
            if plain or any(self._may_read(job, folders) for job in unit.renders):
                candidates.append((unit, plain))
                jobs.extend(unit.renders)
        if jobs and self.layout is not None:
            from pathlib import Path

            from .units.renders import merged, render

            plain_jobs = {job for unit, plain in candidates if plain for job in unit.renders}

            def analyse_if_linted(job: RenderJob, made: Render) -> None:  # while other renders run
                if job in plain_jobs or not self.wanted.isdisjoint(made.inputs):
                    self._analyse(job, made)

            early = self._early.result() if self._early is not None else None
            begun = {*early.renders, *early.skipped} if early is not None else set()
            rest = [job for job in jobs if job not in begun]
            made = render(Path(root), rest, self.layout, self._default_namespace, cache, analyse_if_linted) if rest else None
            made = merged(jobs, [part for part in (early, made) if part is not None])
            self.renders = made.renders
            self._report(made.renders, made.skipped, units)
        chosen = []
        for unit, plain in candidates:
            if plain or any(self.wanted.intersection(self.renders[job].inputs) for job in unit.renders if job in self.renders):
                chosen.append(unit)
                for job in unit.renders:
                    self.using.setdefault(job, []).append(unit)
        self.chosen = chosen
        return chosen

    def declared_by_wanted(self, unit: Unit) -> bool:
        """Whether the unit is declared by a GitOps object in a file being linted."""
        return bool(unit.source) and unit.source in self.wanted

    def _may_read(self, job: RenderJob, folders: set[str]) -> bool:
        if job.tool == HELM:
            return job.folder in folders or any(path in self.wanted for path in _values_files(job))
        consumed = self.layout.consumed_by.get(job.folder, frozenset()) if self.layout is not None else frozenset()
        return not self.wanted.isdisjoint(consumed)

    def _default_namespace(self, folder: str) -> str:
        return self.settings_for(self.names.display(f"{folder}/Chart.yaml" if folder != "." else "Chart.yaml")).default_namespace

    def _report(self, made: dict[RenderJob, Render], skipped: dict[RenderJob, NotLinted], units: Sequence[Unit]) -> None:
        """FW007 for units not linted, FW006 or notices for renders that failed or warned; their files judge no suppressions."""
        from .units.not_linted import NotLinted  # (with renders only)

        named = {job: unit.name for unit in units for job in unit.renders}
        sources = {job: unit.source for unit in units for job in unit.renders if unit.source}
        written = {job: dict(unit.written) for unit in units for job in unit.renders if unit.written}
        for job, why in skipped.items():  # no renderer: FW007 on the unit's defining file (its GitOps object)
            self._not_linted(job, NotLinted(why.reason, why.hint, *self._defining_place(job, sources, written)), named)
            self.unlinted.update(self.names.display(key) for key in self._reads(job))
        for job, done in made.items():
            if done.not_linted is not None:
                self._not_linted(job, done.not_linted, named)
                self.unlinted.update(self.names.display(key) for key in (*done.inputs, *self._reads(job)))
            failed = not done.objects and bool(done.problems)
            for problem in done.problems:
                shown = self.names.display(problem.file)
                message = problem.message if problem.message.startswith(f"{job.tool}:") else f"{job.tool}: {problem.message}"
                settings = self.settings_for(shown)
                # the unit does not render: FW006 where the problem is, whichever run finds it (a changed file's
                # unit reports it too); a problem in no file of the project (a values file that is not there) is FW007
                if failed and (problem.file in self.wanted or self._in_project(problem.file)) and settings.enabled(RENDER_FAILED):
                    self.failures.append(Finding(
                        shown, problem.line, problem.column, RENDER_FAILED, settings.severity[RENDER_FAILED], "", "",
                        message, "", units=(named.get(job, job.folder),),
                    ))
                    continue
                if failed:  # in a file not being linted (a values file that is not there, say): the unit was not
                    self._not_linted(job, NotLinted(f"it does not render ({shown}:{problem.line}:{problem.column}: {message})",
                                                    "fix what it names; the unit is linted once it renders",
                                                    *self._defining_place(job, sources, written, problem.file)), named)
                    continue
                self.notices.append(f"{shown}:{problem.line}:{problem.column}: {message}")
            if failed:
                self.unlinted.update(self.names.display(key) for key in (*done.inputs, *self._reads(job)))
        self.notices[:] = list(dict.fromkeys(self.notices))

    def _not_linted(self, job: RenderJob, why: NotLinted, named: dict[RenderJob, str]) -> None:
        """One FW007 per unit, on its defining file, saying why and what to do."""
        shown = self.names.display(why.file)
        settings = self.settings_for(shown)
        if settings.enabled(NOT_LINTED):
            unit = named.get(job, job.folder)
            self.failures.append(Finding(
                shown, why.line, why.column, NOT_LINTED, settings.severity[NOT_LINTED], "", "", why.message(), "",
                units=(unit,),
            ))

    def _in_project(self, key: str) -> bool:
        """Whether the project holds the file (a render's problem can be reported there)."""
        return not key.startswith("/") and os.path.isfile(os.path.join(self.names.base, key))

    def _defining_place(self, job: RenderJob, sources: dict[RenderJob, str], written: dict[RenderJob, dict[str, InlineValues]],
                        about: str = "") -> tuple[str, int, int]:
        """Where FW007 about the job goes: on the GitOps object's entry naming `about` (a values file that is
        not there), else on the object's first line; line 1 of its defining file when no object declares it."""
        file = self._defining_file(job, sources)
        ref = written.get(job, {}).get(about) or written.get(job, {}).get("")
        if ref is None or ref[0] != file:
            return file, 1, 1
        try:
            with open(os.path.join(self.names.base, file), encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            return file, 1, 1
        from .units.inline_values import place_of

        return (file, *(place_of(text, ref) or (1, 1)))

    def _defining_file(self, job: RenderJob, sources: dict[RenderJob, str]) -> str:
        """The file that makes the job a unit: the GitOps object's that declares it, its Chart.yaml, or its kustomization file."""
        if job in sources:
            return sources[job]
        from .units.not_linted import defining_file

        if job.tool == HELM:
            return defining_file(job.folder, CHART_FILE)
        for key in sorted(self.layout.consumed_by.get(job.folder, ())) if self.layout is not None else ():
            if folder_of(key) == job.folder and key.rpartition("/")[2] in KUSTOMIZATION_NAMES:
                return key
        return defining_file(job.folder, KUSTOMIZATION_NAMES[0])

    def _reads(self, job: RenderJob) -> list[str]:
        """What a render of the job would read, as far as it is known without it."""
        if job.tool == HELM:
            return sorted(key for key in self.wanted if is_below(key, job.folder) or key in _values_files(job))
        return sorted(self.layout.consumed_by.get(job.folder, ())) if self.layout is not None else []

    def inputs_of(self, unit: Unit) -> list[str]:
        """The files the unit's renders read (keys)."""
        return [key for job in unit.renders if job in self.renders for key in self.renders[job].inputs]

    def place(self, obj: RenderedObject, path: tuple[str | int, ...]) -> tuple[str, int, int, bool] | None:
        """Where a finding on a rendered object of a linted unit is reported: wherever it was written.

        The unit holds a file being linted, so the finding is one that file may cause, in
        whichever file it lands (engine.py says why). A path the object lacks (a missing field)
        goes to its nearest present parent, as in a plain file: approximate only when the
        renderer cannot place that parent itself.
        """
        from .units.rendered import locate

        (file, line, column), exact = locate(obj, _present(self.data(obj), path))
        return self.names.display(file), line, column, exact

    def data(self, obj: RenderedObject) -> Any:
        """The rendered object's data (read once)."""
        known = self._parsed.get(id(obj))
        if known is None:
            from .loader import load

            documents = load(obj.text).documents
            known = self._parsed[id(obj)] = (obj, documents[0].data if documents else None)
        return known[1]

    def _objects(self, job: RenderJob) -> list[_Analysed]:
        """The job's rendered objects, each analysed once (object rules run, projected)."""
        known = self._analysed.get(job)
        if known is None:
            known = self._analyse(job, self.renders.get(job))
        return known

    def _analyse(self, job: RenderJob, made: Render | None) -> list[_Analysed]:
        analysed: list[_Analysed] = []
        crds = self.crds.of(made.objects) if made is not None else None
        for obj in made.objects if made is not None else ():
            anchor = self.names.display(obj.anchor[0])
            # a chart's value sets render most objects alike: the same text in the same file is analysed once
            result = self._texts.get((anchor, obj.text))
            read, obj.loaded = obj.loaded, None  # the renderer's reading of the text (kustomize's), used once
            if read is not None and read.documents:
                self._parsed.setdefault(id(obj), (obj, read.documents[0].data))
            if result is None:
                result = self._texts[anchor, obj.text] = analyse(
                    anchor, obj.text.encode("utf-8", "surrogateescape"), "", self.settings_for(anchor), True, None,
                    read=read, crds=crds)
            # other objects' messages name it where it is written, not by its line in the render
            result = result._replace(objects=[r._replace(origin=self._origin(obj, r.prefix)) for r in result.objects])
            analysed.append(_Analysed(obj, anchor, result))
        self._analysed[job] = analysed
        return analysed

    def _origin(self, obj: RenderedObject, prefix: tuple[str | int, ...]) -> str:
        from .units.rendered import locate

        (file, line, _), _ = locate(obj, prefix + ("metadata", "name"))
        return f"{self.names.display(file)}:{line}"

    def rendered_members(self, unit: Unit) -> list[Member]:
        """The unit's rendered objects as set-rule members."""
        return [
            Member(record, item.anchor, True, item.obj)
            for job in unit.renders for item in self._objects(job) for record in item.result.objects
        ]

    def rendered_findings(self, units: Sequence[Unit]) -> list[Finding]:
        """Object-rule findings on the rendered objects of these units, placed in the files being linted."""
        found: list[Finding] = []
        for job in dict.fromkeys(job for unit in units for job in unit.renders):
            for item in self._objects(job):
                records = item.result.objects
                for finding in item.result.findings:
                    if RULES[finding.code].SCOPE != OBJECT:
                        continue  # the rendered text's own syntax is the renderer's business
                    where = self.place(item.obj, finding.raw_path)
                    if where is None:
                        continue
                    file, line, column, exact = where
                    settings = self.settings_for(file)
                    if not settings.enabled(finding.code):
                        continue
                    record = next((r for r in records if finding.raw_path[: len(r.prefix)] == r.prefix), None)
                    units = self.using.get(job, [])
                    found.append(finding._replace(
                        file=file, line=line, column=column, document=-1,
                        severity=_rejudged(finding.severity, self.settings_for(item.anchor), settings, finding.code),
                        object=labelled(record, units[0]) if record and units else finding.object,
                        units=tuple(unit.name for unit in units), approximate=not exact,
                        suppressed=annotated(record.ignore if record else False, finding.code),
                    ))
        return found


class _Early:
    """renders.render in two halves: the render cache read here and now (a warm run renders nothing, and
    its files are analysed as ever); what the cache lacks rendered on a thread of its own. `result` waits
    for that thread (and raises what it raised)."""

    def __init__(self, root: Path, jobs: list[RenderJob], layout: Layout, default_namespace: Callable[[str], str],
                 cache: bool, made: Callable[[RenderJob, Render], None], ahead: Callable[[RenderJob], None]) -> None:
        import queue
        import threading

        from .units.renders import look_up, render_pending

        looked = look_up(root, jobs, layout, default_namespace, cache)
        self._outcome: list[Rendered | BaseException] = [] if looked.pending else [looked.known]
        self._thread: threading.Thread | None = None
        self._ahead: Callable[[RenderJob], None] | None = None
        self._helm_jobs = sum(1 for job, _, _ in looked.pending if job.tool == HELM)
        self._arrived: queue.SimpleQueue[RenderJob | None] = queue.SimpleQueue()  # None: the renders are over
        if not looked.pending:
            return
        self._ahead = ahead  # (dropped once the renders are over: a UnitRun kept alive by a cycle holds its
        # objects until the interpreter's last collection, ~0.5 s on kubeflow/manifests warm)

        def arrived(job: RenderJob, render: Render) -> None:  # on a render thread
            made(job, render)
            self._arrived.put(job)

        def run() -> None:
            try:
                self._outcome.append(render_pending(root, looked, layout, default_namespace, cache, arrived))
            except BaseException as exc:  # handed to the thread that waits for it
                self._outcome.append(exc)
            finally:
                self._arrived.put(None)

        self._thread = threading.Thread(target=run, name="fieldwarden-renders")
        self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def result(self) -> Rendered:
        if self._thread is not None:
            try:
                self._place_while_rendering()
            finally:
                self._thread.join()
                self._ahead = None
        outcome = self._outcome[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _place_while_rendering(self) -> None:
        """Wait for the renders; once the last chart is rendered (no Helm child is alive then: a chart's
        placement reads its templates again, and beside a child that would add to the run's peak of
        memory), place the charts' findings while the other renders finish."""
        charts: list[RenderJob] = []
        while (job := self._arrived.get()) is not None:
            if job.tool != HELM:
                continue
            charts.append(job)
            if len(charts) == self._helm_jobs and self._ahead is not None:
                for each in charts:
                    self._ahead(each)
        self._arrived.put(None)  # (result may be asked for again)


def _values_files(job: RenderJob) -> tuple[str, ...]:
    """The files a Helm job's values come from: its values files, and the GitOps file of its inline values."""
    return (*job.values, job.inline[0]) if job.inline else job.values


def _present(data: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """The longest start of `path` that the data holds."""
    for depth, part in enumerate(path):
        if isinstance(part, int):
            if not isinstance(data, list) or not 0 <= part < len(data):
                return path[:depth]
            data = data[part]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return path[:depth]
    return path


def _rejudged(severity: str, anchor: Settings, place: Settings, code: str) -> str:
    """A finding's severity under the settings of the file it is reported in (a rule's own lowering kept)."""
    if anchor is place:
        return severity
    configured = place.severity[code]
    lowered = severity != anchor.severity[code]
    return severity if lowered and SEVERITY_RANK[severity] < SEVERITY_RANK[configured] else configured

