"""The lint run: targets and context in, suppressed and sorted findings out.

Targets are the files the user named (or pre-commit passed); context is the rest of the
project. The project is cut into apply units (units/plan.py); every cross-object rule runs inside
each unit that holds a target, with the rest of that unit as context.

What is reported ("caused by" a target): a file's own findings (its syntax, object rules on its
own objects) only for targets; every finding of a linted unit (set rules over its objects,
object rules on its rendered objects) wherever it is placed, since a unit is linted because it
holds a target (a plain member, or a file its render reads). A patch that sets `type: Recreate`
over a base's `rollingUpdate` is reported on the base's line when only the patch is named
(pre-commit passes the changed files). Findings placed outside the targets honour that file's
ignore comments; its unused ones are only judged when it is linted itself.
"""

from __future__ import annotations

import gc
import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from pathlib import Path
    from typing import Callable, Iterable, NamedTuple, Sequence, TypeVar
else:
    from ..policies.records import NamedTuple

from ..policies.config import Settings
from ..policies.registry import resolve
from ..policies.rule import ADMISSION
from .crds import catalog as crd_catalog, once_per_kind
from .analyse import FileResult, Finding, ObjectRecord, analyse, context_tree, locate_in_record, read_source
from .sets import Member, labelled, merged_duplicates, project_index, run_set_rules
from .suppress import covers, directive_document
from .units.plan import (
    Declaration, Unit, chainsaw_folders, chart_of, declared_by_globs, folder_of, folders_with_ancestors, is_fixture,
    kustomization_folder_files, may_declare, may_render, step_folders,
)
from .units.plan import plan as units_plan
from .discover import go_files

if TYPE_CHECKING:
    from ..policies.model import ObjectKey
    from ..policies.schemas.crd import Catalog
    from .unitrun import UnitRun
    from .units.renders import HelmValues, Layout
    from .units.rendered import RenderedObject

STDIN = "<stdin>"  # stdin without --stdin-filename: a unit of its own
# Below this, workers cost more CPU than the wall time they save (bench corpus parts, 2 cores:
# 1.7 MB +45% CPU for ~0.1 s less wall; 4.4 MB +14% for ~0.3 s; 14.5 MB +12% for ~0.9 s)
PARALLEL_MIN_BYTES = 4_000_000
CHUNK_BYTES = 256_000  # a worker's task: small enough to balance the load and stream results back
CACHE_MIN_BYTES = 16_000  # a smaller context is parsed faster than the cache is read and checked


class Source(NamedTuple):
    """A file to read (path) or text already in hand (stdin)."""

    display: str
    path: str | None  # as pathlib shows it
    data: bytes | None = None


class Scope(NamedTuple):
    """How a run cuts the project into units (see units/plan.py)."""

    include_fixtures: bool = False
    helm_values: tuple[tuple[str | None, tuple[str, ...]], ...] = ()  # (chart folder or None: every chart, values files)
    unit_globs: tuple[tuple[str, str], ...] = ()  # (`units:` pattern, folder it is relative to)
    git_root: str = ""  # GitOps paths are relative to it ("" = the project root)
    render_cache: bool = True
    allow_network: bool = False  # kustomize may fetch remote bases (`--allow-network`, the command line only)
    plan_only: bool = False  # stop once the units are known: nothing rendered, no rule run (`fieldwarden units`)
    keep_units: bool = False  # Report.units even when nothing renders (`lint --cluster`: linter/live reads them)


class Report(NamedTuple):
    """Outcome of a run."""

    findings: list[Finding]  # unsuppressed and suppressed, sorted
    notices: list[str]
    files: int
    units: UnitRun | None = None  # the units linted, their renders and places (for the live checks)
    planned: list[Unit] | None = None  # with Scope.plan_only: every unit of the project, and `layout` its renders
    layout: Layout | None = None
    fixtures: int = 0  # test fixture files left out (with Scope.plan_only: of the whole project)


def lint(
    targets: Sequence[Source],
    context: Sequence[str],
    settings: Settings,
    root: str | Path | None,
    settings_for: Callable[[str], Settings] | None = None,
    scope: Scope = Scope(),
) -> Report:
    """Lint the targets with the context files as background knowledge.

    `settings_for(display)` gives each file its own settings (the nearest configuration);
    without it every file gets `settings`. A finding is judged (selected, severity, fail
    level, FW003) under the settings of the file it is reported in; a set rule runs once
    per distinct settings among the targets, with that configuration's options.
    """
    # A run allocates millions of small objects that form no reference cycles (node trees,
    # data, projections); the cyclic collector would walk them over and over for nothing
    # (about 40% of a large run). Reference counting still frees everything as usual.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _lint(targets, context, settings_for or (lambda _display: settings), root, scope)
    finally:
        if collecting:
            gc.enable()


def _lint(
    targets: Sequence[Source], context: Sequence[str], settings_for: Callable[[str], Settings], root: str | Path | None,
    scope: Scope,
) -> Report:
    names = _Names(os.path.abspath(root) if root is not None else os.getcwd())
    target_ids = [names.add(s.display, stdin=s.path is None and s.display == STDIN) for s in targets]
    context_ids = [names.add(str(path)) for path in context]
    notices: list[str] = []
    steps = step_folders([*target_ids, *context_ids])
    fixtures, alone = _read_tests(names.base, [k for k in (*target_ids, *context_ids) if k != STDIN and not k.startswith("/")],
                                  go_files(names.base))
    left_out = 0
    if not scope.include_fixtures:
        chainsaw = chainsaw_folders([*target_ids, *context_ids])
        given = len(targets) + (len(context) if scope.plan_only else 0)  # planning: the project's files are context
        targets, target_ids = _without_fixtures(targets, target_ids, chainsaw, fixtures)
        context, context_ids = _without_fixtures(context, context_ids, chainsaw, fixtures)
        left_out = given - len(targets) - (len(context) if scope.plan_only else 0)
        if left_out:
            notices.append(f"left out {left_out} test fixture file{'s' if left_out != 1 else ''} (testdata/ folders, "
                           "kuttl and chainsaw assert/error files, files kyverno CLI and Go tests name); --include-fixtures lints them")
    files = [key for key in (*target_ids, *context_ids) if key != STDIN]
    inside = [key for key in files if not key.startswith("/")]  # outside the project: plain folders only
    layout: Layout | None = None
    consumed: set[str] = set()
    if may_render(inside):
        from .units.renders import find

        layout = find(_path(names.base), inside, _helm_values(scope, names), network=scope.allow_network)
        consumed.update(layout.consumed)
        consumed.update(kustomization_folder_files(inside))  # a folder with a kustomization is applied through it
        if layout.charts:
            consumed.update(f for f in inside if chart_of(f, layout.charts) is not None)
    targets, target_ids = _without_stray_helpers(targets, target_ids, consumed, notices)
    global _CRDS
    # Without renders the context is read now, once: the CRDs' scan and _load_context share the bytes (with
    # renders it is read after them, as before: its bytes would be held all the while).
    early: dict[str, tuple[bytes | None, str]] | None = None
    if layout is None and not scope.plan_only:
        early = {str(p): read_source(p, settings_for(str(p))) for p in context}
        # the targets too: read once for both (a file that cannot be read is tried again, for its error)
        targets = [s._replace(data=_read_early(s, settings_for)) if s.data is None and s.path is not None else s
                   for s in targets]
    _CRDS = None if scope.plan_only else crd_catalog(
        [(s.display, s.path, s.data) for s in targets], settings_for,
        [(str(p), str(p), early[str(p)][0] if early is not None else None) for p in context])
    wanted = set(target_ids)
    jobs = [(s.display, s.path, s.data, settings_for(s.display), key in consumed) for s, key in zip(targets, target_ids)]
    apart = None
    work: UnitRun | _PlainRun
    if layout is not None or scope.keep_units:
        from .unitrun import UnitRun

        work = run = UnitRun(names, wanted, settings_for, layout)
        run.crds.project = _CRDS
        if not scope.plan_only and layout is not None:  # the renders the layout names run while the files are analysed
            if layout.kustomizations or layout.charts:
                apart = _analyse_apart(jobs)  # (forked before the renders' threads and children exist)
            run.start(names.base, scope.render_cache)  # (in this process alone)
    else:  # (a one-file lint of plain manifests does not import unitrun.py: ~1.2 M instructions)
        work = _PlainRun(wanted)
    target_results = apart(work.rendering) if apart is not None else _analyse_all(jobs, alone=work.rendering())
    context_results = _load_context(context, settings_for, root, keep=[s.display for s in targets], alone=work.rendering(),
                                    read=early)
    early = None
    results = dict(zip(target_ids, target_results))
    results.update(zip(context_ids, context_results))
    kustomizations, charts = (layout.kustomizations, layout.charts) if layout is not None else ([], {})
    plan = units_plan(files, kustomizations, consumed, charts, _declarations(results, names, scope, notices), steps,
                      alone)
    all_units = plan.units + ([Unit(STDIN, (STDIN,))] if STDIN in results else [])

    def keys_of(key: str) -> list[ObjectKey | None]:
        return [r.key for r in _objects(results.get(key))]

    if _shares_objects(all_units, keys_of):  # (else no folder holds alternatives: units/alternatives.py not imported)
        from .units.alternatives import same_content, split_alternatives

        all_units = split_alternatives(all_units, keys_of, notices, same_content(names.base))
    if scope.plan_only:
        return Report([], notices, len(target_results), planned=all_units, layout=layout, fixtures=left_out)
    relevant = work.relevant(all_units, names.base, scope.render_cache)
    notices.extend(work.notices)
    findings = [f for r in target_results for f in r.findings if settings_for(r.file).enabled(f.code)]
    findings.extend(work.failures)
    findings.extend(work.rendered_findings(relevant))
    elsewhere = project_index(all_units, lambda key: result.objects if (result := results.get(key)) else ())
    for unit in relevant:
        members = [m for key in unit.files for m in _members(results.get(key), names.display(key), key in wanted,
                                                               settings_for)]
        members.extend(work.rendered_members(unit))
        found = run_set_rules(unit, members, settings_for, work.place, elsewhere)
        if work.declared_by_wanted(unit):  # its GitOps object changed: all it finds is this run's
            findings.extend(found)
            continue
        findings.extend(_caused(found, members, lambda kept, codes: run_set_rules(unit, kept, settings_for, work.place,
                                                                                  elsewhere, codes)))
    findings = merged_duplicates(findings)
    placed = _placed_outside(findings, target_results, settings_for, {names.display(key) for key in consumed})
    findings = [_relocated(finding, placed.get(finding.file)) for finding in findings]
    findings = _with_units(findings, names, relevant, work, target_results)
    consumed_shown = {names.display(key) for key in wanted if key in consumed}
    findings = _suppress(target_results, findings, settings_for, consumed_shown, work.unlinted, placed.values())
    notices.extend(r.notice for r in target_results if r.notice)
    findings.sort(key=lambda f: (f.file, f.line, f.column, f.code))
    findings = once_per_kind(findings)
    return Report(findings, notices, len(target_results), None if isinstance(work, _PlainRun) else work)


# What units/testruns.py reads anything for (a chainsaw or kyverno CLI test, docexamples.py's mkdocs
# configuration, gotests.py's `*_test.go`): a project holding none is read without importing them.
_TEST_NAMES = ("chainsaw-test.yaml", "chainsaw-test.yml", "kyverno-test.yaml", "kyverno-test.yml", "mkdocs.yml",
               "mkdocs.yaml")


def _path(name: str) -> Path:
    """pathlib's Path, for the modules that take one (a one-file lint does not import pathlib)."""
    from pathlib import Path

    return Path(name)


def _read_tests(base: str, files: Sequence[str], go: Sequence[str] | None) -> tuple[frozenset[str], dict[str, str]]:
    """units/testruns.read's fixtures and files applied alone, or none when the file lists hold nothing it
    reads (go: None is a project outside git, whose Go tests it looks for)."""
    if go is not None and not any(name.endswith("_test.go") for name in go) and not any(
        path.rpartition("/")[2] in _TEST_NAMES for path in files
    ):
        return frozenset(), {}
    from .units.testruns import read

    found = read(_path(base), files, go)
    return found.fixtures, found.alone


class _Names:
    """Keys of files (project-relative POSIX paths, or absolute outside the project) and their shown names.

    A file is shown as it was given (targets) or found (context); a file only a render names
    is shown relative to the current folder.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self.cwd = os.getcwd()
        self.shown: dict[str, str] = {}
        self._plain = base == self.cwd and os.sep == "/"

    def add(self, display: str, stdin: bool = False) -> str:
        key = STDIN if stdin else self.id(display)
        self.shown.setdefault(key, display)
        return key

    def id(self, display: str) -> str:
        if self._plain and not display.startswith(("/", "./", "../")) and "/." not in display and "//" not in display:
            return display  # already relative to the project root and normal (what discovery gives)
        absolute = os.path.abspath(display)
        relative = os.path.relpath(absolute, self.base)
        if relative == ".." or relative.startswith(".." + os.sep):
            return absolute.replace(os.sep, "/")
        return relative.replace(os.sep, "/")

    def display(self, key: str) -> str:
        known = self.shown.get(key)
        if known is None:
            absolute = key if key.startswith("/") else os.path.join(self.base, key)
            relative = os.path.relpath(absolute, self.cwd)
            known = self.shown[key] = absolute if relative.startswith("..") else relative
        return known


class _PlainRun:
    """What _lint asks of a UnitRun (unitrun.py) when nothing renders: no chart or kustomization among the files.

    Then no unit has a render to make, read or place, so the units linted are those holding a
    file being linted (or declared by one); what UnitRun answers with no layout, without its module.
    """

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        self.notices: list[str] = []
        self.failures: list[Finding] = []
        self.unlinted: set[str] = set()

    def rendering(self) -> bool:
        return False

    def relevant(self, units: Sequence[Unit], root: str, cache: bool = True) -> list[Unit]:
        return [unit for unit in units if any(key in self.wanted for key in unit.files) or self.declared_by_wanted(unit)]

    def declared_by_wanted(self, unit: Unit) -> bool:
        return bool(unit.source) and unit.source in self.wanted

    def rendered_findings(self, units: Sequence[Unit]) -> list[Finding]:
        return []

    def rendered_members(self, unit: Unit) -> list[Member]:
        return []

    def inputs_of(self, unit: Unit) -> list[str]:
        return []

    def place(self, obj: RenderedObject, path: tuple[str | int, ...]) -> tuple[str, int, int, bool] | None:
        return None  # (never asked: no member is rendered)


if TYPE_CHECKING:
    Item = TypeVar("Item")


def _without_fixtures(items: Sequence[Item], keys: list[str], chainsaw: frozenset[str],
                      named: frozenset[str]) -> tuple[list[Item], list[str]]:
    """The items (and their keys) that are no test fixtures (units.is_fixture)."""
    kept = [index for index, key in enumerate(keys) if not is_fixture(key, chainsaw, named)]
    if len(kept) == len(keys):
        return list(items), keys
    return [items[index] for index in kept], [keys[index] for index in kept]


def _shares_objects(units: Sequence[Unit], keys_of: Callable[[str], Iterable[ObjectKey | None]]) -> bool:
    """Whether two files of a plain unit define an object of the same identity: what any two alternatives
    do (units/alternatives.py: they share MIN_SHARED objects, or, in a folder of samples, all of theirs)."""
    for unit in units:
        if unit.plain and len(unit.files) > 1:
            first: dict[ObjectKey, str] = {}
            for key in unit.files:
                for object_key in keys_of(key):
                    if object_key is not None and first.setdefault(object_key, key) != key:
                        return True
    return False


def _objects(result: FileResult | None) -> Sequence[ObjectRecord]:
    return result.objects if result is not None else ()


def _without_stray_helpers(
    targets: Sequence[Source], keys: list[str], consumed: set[str], notices: list[str]
) -> tuple[list[Source], list[str]]:
    """The targets less `.tpl` files no chart reads (pre-commit's hook passes every `.tpl`: a chart's
    `_helpers.tpl` re-lints its chart; any other is some tool's template, not a manifest)."""
    kept = [index for index, key in enumerate(keys) if not key.endswith(".tpl") or key in consumed]
    if len(kept) == len(keys):
        return list(targets), keys
    left_out = len(keys) - len(kept)
    notices.append(f"left out {left_out} .tpl file{'s' if left_out != 1 else ''} that no Helm chart holds")
    return [targets[index] for index in kept], [keys[index] for index in kept]


def _members(
    result: FileResult | None, display: str, named: bool, settings_for: Callable[[str], Settings]
) -> list[Member]:
    """A plain file's objects in a linted unit: reported on too unless its configuration says `context: false`."""
    if result is None:
        return []
    target = named or settings_for(display).context
    return [Member(record, display, target, named=named) for record in result.objects]


def _caused(
    found: list[Finding], members: Sequence[Member], rerun: Callable[[list[Member], set[str]], list[Finding]]
) -> list[Finding]:
    """The unit's set-rule findings, less those on other plain files that are there without the targets too.

    A finding on a plain file that was not named is kept only when the named files cause it:
    the rules run once more without the named plain files' objects, and what they find again
    was there before (an HPA added in a named file reports the replicas of the unchanged
    Deployment it scales; an old problem between two other files is not this run's). Only the
    rules with such findings run again: a finding's identity holds its rule's code.
    """
    elsewhere = {m.file for m in members if m.rendered is None and not m.named}
    codes = {f.code for f in found if f.file in elsewhere and f.document >= 0}
    if not codes:
        return found
    before = {_identity(f) for f in rerun([m for m in members if m.rendered is not None or not m.named], codes)}
    return [f for f in found if not (f.file in elsewhere and f.document >= 0 and _identity(f) in before)]


def _identity(finding: Finding) -> tuple[object, ...]:
    return finding.file, finding.document, finding.raw_path, finding.code


def _placed_outside(
    findings: Sequence[Finding], targets: Sequence[FileResult], settings_for: Callable[[str], Settings],
    consumed: set[str],
) -> dict[str, FileResult]:
    """Full analyses of the files outside the targets that findings are placed in.

    Context files are read for their objects only (no positions, no comments); the few that a
    unit's finding lands in are read again for what placing and suppressing it needs.
    """
    named = {result.file for result in targets}
    found: dict[str, FileResult] = {}
    for file in sorted({finding.file for finding in findings} - named - {STDIN}):
        settings = settings_for(file)
        data, error = read_source(file, settings)
        if data is not None:
            found[file] = analyse(file, data, error, settings, True, file, file in consumed)
    return found


def _relocated(finding: Finding, result: FileResult | None) -> Finding:
    """A set rule's finding on a context file's object, at the line of the field (context records have no positions)."""
    if result is None or finding.document < 0:
        return finding
    for record in result.objects:
        if record.document == finding.document and finding.raw_path[: len(record.prefix)] == record.prefix:
            line, column = locate_in_record(record, finding.raw_path[len(record.prefix):])
            return finding._replace(line=line, column=column)
    return finding


def _helm_values(scope: Scope, names: _Names) -> list[HelmValues]:
    from .units.renders import HelmValues

    return [
        HelmValues(None if chart is None else names.id(chart), tuple(names.id(f) for f in files))
        for chart, files in scope.helm_values
    ]


def _declarations(results: dict[str, FileResult], names: _Names, scope: Scope, notices: list[str]) -> list[Declaration]:
    """Units that GitOps objects of the project and the configuration's `units:` globs name."""
    found: list[Declaration] = []
    declaring = [(key, r) for key, result in results.items() for r in result.objects
                 if may_declare(r.projection.get("apiVersion"))]
    if declaring:
        from .units.gitops import declarations, not_read, values_from

        prefix = ""
        if scope.git_root:
            relative = os.path.relpath(names.base, scope.git_root).replace(os.sep, "/")
            prefix = "" if relative == "." else relative
        found.extend(declarations([r.projection for _, r in declaring], prefix,
                                  [None if key == STDIN or key.startswith("/") else (key, r.document, r.prefix)
                                   for key, r in declaring]))
        foreign = not_read([r.projection for _, r in declaring], [None if k.startswith("/") else k for k, _ in declaring],
                           prefix)
        if foreign:
            notices.append(f"not read as units: {len(foreign)} Flux Kustomization{'s' if len(foreign) != 1 else ''} of "
                           f"another repository ({'; '.join(f'{who}: {why}' for who, why in foreign[:3])}"
                           f"{'; ...' if len(foreign) > 3 else ''})")
        unread = values_from([r.projection for _, r in declaring])
        if unread:
            notices.append(f"valuesFrom is not read (its ConfigMaps and Secrets are the cluster's): {len(unread)} "
                           f"HelmRelease{'s' if len(unread) != 1 else ''} ({', '.join(unread[:3])}"
                           f"{', ...' if len(unread) > 3 else ''}) rendered with their values files and inline values only")
    if scope.unit_globs:
        folders = folders_with_ancestors(results)
        patterns = []
        for pattern, base in scope.unit_globs:
            key = names.id(os.path.join(base, "x"))
            if not key.startswith("/"):
                patterns.append((pattern, folder_of(key)))
        found.extend(declared_by_globs(patterns, folders))
    return found


def _with_units(
    findings: list[Finding], names: _Names, relevant: Sequence[Unit], work: UnitRun | _PlainRun,
    results: Sequence[FileResult],
) -> list[Finding]:
    """Every finding names its units; one found in several units is reported once, naming them all.

    A finding of a file's own (its syntax, an object rule on a plain file) names the units that
    hold the file, and its object as the first of them deploys it (its namespace).
    """
    of_file: dict[str, list[Unit]] = {}
    for unit in relevant:
        for member in unit.files:
            of_file.setdefault(names.display(member), []).append(unit)
    for unit in relevant:  # after the units that apply the file: a GitOps file is a render's input too (inline values)
        for member in work.inputs_of(unit):
            of_file.setdefault(names.display(member), []).append(unit)
    by_file = {result.file: result for result in results}
    merged: dict[tuple[object, ...], Finding] = {}
    for finding in findings:
        if not finding.units:
            units = list(dict.fromkeys(of_file.get(finding.file, ())))
            finding = finding._replace(units=tuple(unit.name for unit in units))
            if units and units[0].namespace and finding.document >= 0 and finding.file in by_file:
                finding = _relabelled(finding, by_file[finding.file], units[0])
        # the same place and rule: one finding (a base under two overlays, which may name its
        # object differently; a template line that writes several objects); in a plain file,
        # findings stay apart by object (document and path) and by what they say
        place = (finding.document, finding.raw_path, finding.message) if finding.document >= 0 else ()
        key = (finding.file, finding.line, finding.column, finding.code, finding.field, place)
        known = merged.get(key)
        if known is None:
            merged[key] = finding
        else:
            merged[key] = known._replace(
                units=tuple(dict.fromkeys((*known.units, *finding.units))),
                approximate=known.approximate and finding.approximate,
            )
    return list(merged.values())


def _relabelled(finding: Finding, result: FileResult, unit: Unit) -> Finding:
    """The finding naming its object with the namespace the unit deploys it to."""
    for record in result.objects:
        if record.document == finding.document and finding.raw_path[: len(record.prefix)] == record.prefix:
            return finding._replace(object=labelled(record, unit))
    return finding


def _analyse_all(jobs: list[tuple[str, str | None, bytes | None, Settings, bool]], alone: bool = False) -> list[FileResult]:
    """Targets: (display, path, data, settings, consumed by a render); `alone`: in this process."""
    return _analyse_loaded(_read_all(jobs), full=True, alone=alone)


def _read_early(source: Source, settings_for: Callable[[str], Settings]) -> bytes | None:
    assert source.path is not None
    return read_source(source.path, settings_for(source.display))[0]


def _read_all(jobs: list[tuple[str, str | None, bytes | None, Settings, bool]]) -> Loaded:
    loaded: Loaded = []
    for display, path, data, settings, consumed in jobs:
        error = ""
        if data is None and path is not None:
            data, error = read_source(path, settings)
        loaded.append((display, path, data, error, settings, consumed))
    return loaded


def _analyse_apart(jobs: list[tuple[str, str | None, bytes | None, Settings, bool]],
                   ) -> Callable[[Callable[[], bool]], list[FileResult]] | None:
    """Targets analysed by one worker process forked now, before renders start: their results, once asked
    (given what says whether renders still run: once none does, this process takes tasks from the end too).

    While renders run, this process maps and analyses what the renderers give back on its threads,
    which hold the GIL most of the time (prometheus-community's 44 charts: ~90% of the run); targets
    analysed here too would take their turns with them (there: a chart's CRDs under crds/ and its
    values files, 6 MB, ~0.45 s). The renderers' children leave part of the other core idle: the worker
    takes them there. Forked while this thread is the only one (nothing else to inherit, see
    _analyse_loaded), whatever the load average says: the renders' children keep the cores busy
    anyway, and the worker only frees this process's GIL. None when it does not pay (fewer than two
    cores, less than PARALLEL_MIN_BYTES, no fork) or threads already run.
    """
    import threading

    if _cpus() < 2 or threading.active_count() > 1:
        return None
    loaded = _read_all(jobs)
    total = sum(len(item[2]) for item in loaded if item[2])
    import multiprocessing

    try:
        context = multiprocessing.get_context("fork") if total >= PARALLEL_MIN_BYTES and len(loaded) >= 4 else None
    except ValueError:  # pragma: no cover - platforms without fork
        context = None
    if context is None:
        return lambda rendering: _analyse_loaded(loaded, full=True, alone=rendering())
    workers = _Workers(loaded, True, 1, context, CHUNK_BYTES)

    def results(rendering: Callable[[], bool]) -> list[FileResult]:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return workers.results(busy=rendering)  # (this process takes tasks too once no render runs)
        except BrokenProcessPool:  # the worker died (out of memory?): this process does it all
            return _analyse_chunk(loaded, True)

    return results


# (display, path, data, read error, settings, consumed by a render: see analyse())
Loaded = list[tuple[str, str | None, bytes | None, str, Settings, bool]]


def _analyse_loaded(loaded: Loaded, full: bool, alone: bool = False) -> list[FileResult]:
    """Analyse files in order; large inputs are shared with forked worker processes, unless `alone`: while
    renders run on other threads (UnitRun.start), nothing forks (a child would inherit their locks and pipes),
    and their renderers keep the cores busy anyway."""
    total = sum(len(item[2]) for item in loaded if item[2])
    if alone or total < PARALLEL_MIN_BYTES or len(loaded) < 4:  # (the load average is read for a large input only)
        return _analyse_chunk(loaded, full)
    workers = _free_cpus()
    if workers < 2:
        return _analyse_chunk(loaded, full)
    import multiprocessing

    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork: one process
        return _analyse_chunk(loaded, full)
    # This process is one of the `workers` (_Workers.results)
    return _Workers(loaded, full, workers - 1, context, min(CHUNK_BYTES, total // (4 * workers) + 1)).results()


class _Workers:
    """Files analysed by worker processes forked now, in many small tasks in file order.

    This process takes tasks from the end once `results` is asked (and `busy` says it may), while
    the workers take them from the start, until they meet (a task still pending is cancelled and
    done here): the cores stay busy to the end, and what this process analyses is never sent. The
    workers read the files' bytes from the memory they share with this process at the fork
    (_SHARED), and send results back packed (packing.py).
    """

    def __init__(self, loaded: Loaded, full: bool, workers: int, context: BaseContext, size: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        global _SHARED
        self.loaded, self.full = loaded, full
        self.bounds = _chunks(loaded, size)
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        _SHARED = (loaded, full)  # (the workers are forked at the first task)
        self.futures = [self.pool.submit(_analyse_shared, start, end) for start, end in self.bounds]

    def results(self, busy: Callable[[], bool] = lambda: False) -> list[FileResult]:
        """Every file's result, in order; while `busy()`, this process waits instead of taking tasks."""
        global _SHARED
        from concurrent.futures import FIRST_COMPLETED, wait

        from .packing import unpack

        futures = self.futures
        done_here: dict[int, list[FileResult]] = {}
        end = len(futures)
        try:
            while end and not futures[end - 1].done():
                if busy():
                    wait([f for f in futures[:end] if not f.done()], timeout=0.02, return_when=FIRST_COMPLETED)
                elif futures[end - 1].cancel():
                    end -= 1
                    done_here[end] = _analyse_chunk(self.loaded[slice(*self.bounds[end])], self.full)
                else:  # a worker has it: the tasks before it are done or theirs
                    break
            return [result for index, future in enumerate(futures)
                    for result in (done_here[index] if index in done_here else unpack(future.result()))]
        finally:
            self.pool.shutdown()
            _SHARED = None


_SHARED: tuple[Loaded, bool] | None = None  # (files, full) while forked workers analyse them
_CRDS: Catalog | None = None  # the run's CRDs (crds.py), for its targets' object rules; forked workers inherit them


def _analyse_shared(start: int, end: int) -> bytes:
    """A forked worker's task: files start..end of what the parent shares (_SHARED), packed."""
    from .packing import pack

    assert _SHARED is not None
    loaded, full = _SHARED
    return pack(_analyse_chunk(loaded[start:end], full))


def _chunks(loaded: Loaded, size: int) -> list[tuple[int, int]]:
    """Consecutive runs of files of about `size` bytes each: (start, end) indices."""
    bounds: list[tuple[int, int]] = []
    start = filled = 0
    for index, item in enumerate(loaded):
        if filled >= size:
            bounds.append((start, index))
            start, filled = index, 0
        filled += len(item[2] or b"")
    bounds.append((start, len(loaded)))
    return bounds


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _free_cpus() -> int:
    """The cores this run may keep busy: its own and those idle (by the 1-minute load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows; no load figure
        return _cpus()
    return workers_for(_cpus(), load)


def workers_for(cpus: int, load: float) -> int:
    """Worker processes for a large input: one per core no other process keeps busy, else none (1).

    Workers cost CPU a single process does not (processes sharing two cores each analyse ~15%
    slower, and their results are packed and read back; on the bench corpus the run's CPU is
    ~1.2x one process's, measured on a loaded 2-core machine); they pay only where they get a
    core of their own.
    On a busy machine the cores are shared anyway: one process does the same work in less CPU.
    """
    return max(1, min(cpus, int(cpus + 1.5 - load)))


def _analyse_chunk(chunk: Loaded, full: bool) -> list[FileResult]:
    collecting = gc.isenabled()
    gc.disable()  # see lint(); a forked worker inherits the parent's state, a spawned one does not
    try:
        if full and _CRDS is not None:
            return [analyse(d, data, e, settings, full, p, consumed, crds=_CRDS) for d, p, data, e, settings, consumed in chunk]
        return [analyse(d, data, e, settings, full, p, consumed) for d, p, data, e, settings, consumed in chunk]
    finally:
        if collecting:
            gc.enable()


def _load_context(
    paths: Sequence[str], settings_for: Callable[[str], Settings], root: str | Path | None, keep: Iterable[str] = (),
    alone: bool = False, read: dict[str, tuple[bytes | None, str]] | None = None,
) -> list[FileResult]:
    """What set rules need from the context files, in the order of `paths`.

    A large context goes through the cache (keyed by file content: an edited file is parsed
    again, a deleted one drops out); `keep` names further files whose entries stay (the
    targets: pre-commit passes another file next time, and this one joins the context).
    """
    loaded: Loaded = []
    for path in paths:
        settings = settings_for(str(path))
        data, error = read[str(path)] if read is not None else read_source(path, settings)
        if data is not None:
            loaded.append((str(path), path, data, error, settings, False))
    if root is None or sum(len(item[2] or b"") for item in loaded) < CACHE_MIN_BYTES:
        return [_slim(result) for result in _analyse_loaded(loaded, full=False, alone=alone)]
    from .cache import ContextCache, digest

    # What a file contributes depends on its bytes and on its configuration's default
    # namespace: one namespace for all (the usual case) keys the whole cache, several
    # key each entry.
    namespaces = {item[4].default_namespace for item in loaded}
    shared = namespaces.pop() if len(namespaces) == 1 else None
    # keyed by the paths projections keep, as the tree analyse() made them with (made once per process,
    # when the first file was analysed: sorting context_paths() again is ~0.8 M instructions of a one-file run)
    cache = ContextCache(root, (context_tree(), shared, ObjectRecord._fields, FileResult._fields))
    results: list[FileResult | None] = []
    missing: Loaded = []
    keys: dict[str, bytes] = {}
    for item in loaded:
        data = item[2] or b""
        key = digest(data if shared is not None else item[4].default_namespace.encode() + b"\0" + data)
        cached = cache.get(item[0], key)
        if cached is None:
            keys[item[0]] = key
            missing.append(item)
        results.append(cached)
    fresh = iter(_analyse_loaded(missing, full=False, alone=alone))
    for index, result in enumerate(results):
        if result is None:
            result = results[index] = _slim(next(fresh))
            cache.put(result.file, keys[result.file], result)
    cache.keep_only({item[0] for item in loaded} | set(keep))
    cache.save()
    return [result for result in results if result is not None]


def _slim(result: FileResult) -> FileResult:
    """Only the objects: context files report nothing."""
    return FileResult(result.file, [], result.objects, [], [], "")


def _suppress(
    results: Sequence[FileResult], findings: list[Finding], settings_for: Callable[[str], Settings],
    consumed: set[str], unlinted: set[str], placed: Iterable[FileResult] = (),
) -> list[Finding]:
    """Mark suppressed findings and add FW003 for suppressions that matched nothing.

    Comments in a file that a render consumes suppress what is placed on their lines; the
    annotations of its objects act on the rendered objects (see sets.annotated), so FW003
    does not judge them here, nor anything in a file whose render could not be made.
    `placed` are files outside the targets that findings landed in: their comments and
    annotations suppress, but what in them is unused is not judged here.
    """
    by_file = {r.file: r for r in (*placed, *results)}
    used: set[tuple[str, int, str]] = set()  # (file, line, entry) of comment entries that matched
    used_notes: set[tuple[str, int, str]] = set()  # (file, object index, entry)
    out: list[Finding] = []
    for finding in findings:
        result = by_file.get(finding.file)
        how = finding.suppressed
        if not how and result is not None and finding.code != "FW003":
            how = _comment_match(result, finding, used) or _annotation_match(result, finding, used_notes)
        out.append(finding._replace(suppressed=how) if how else finding)
    judged = [r for r in results if r.file not in unlinted]
    judged = [r._replace(objects=[]) if r.file in consumed else r for r in judged]
    out.extend(_unused(judged, used, used_notes, settings_for))
    return out


def _document_of(result: FileResult, line: int) -> int | None:
    for index, (start, end) in enumerate(result.spans):
        if start <= line <= end:
            return index
    return None


def _comment_match(result: FileResult, finding: Finding, used: set[tuple[str, int, str]]) -> str:
    name = finding.name
    document = finding.document if finding.document >= 0 else _document_of(result, finding.line)
    for directive in result.directives:
        heads = directive_document(directive, result.spans)
        applies = (
            heads is not None and heads == document
        ) or directive.line == finding.line or (directive.standalone and heads is None and directive.line == finding.line - 1)
        if not applies:
            continue
        entry = covers(directive.codes, finding.code, name)
        if entry is not None:
            used.add((result.file, directive.line, entry))
            return f"comment at line {directive.line}"
    return ""


def _annotation_match(result: FileResult, finding: Finding, used: set[tuple[str, int, str]]) -> str:
    if finding.document < 0:
        return ""
    for index, record in enumerate(result.objects):
        if record.document != finding.document or record.ignore is False:
            continue
        if record.prefix and tuple(finding.raw_path[: len(record.prefix)]) != record.prefix:
            continue
        codes = record.ignore if isinstance(record.ignore, tuple) else None
        entry = covers(codes, finding.code, finding.name)
        if entry is not None:
            used.add((result.file, index, entry))
            return "annotation fieldwarden.io/ignore"
    return ""


def _unused(
    results: Iterable[FileResult],
    used: set[tuple[str, int, str]],
    used_notes: set[tuple[str, int, str]],
    settings_for: Callable[[str], Settings],
) -> list[Finding]:
    found: list[Finding] = []
    settings = Settings()  # the file's, set in the loop below

    def report(file: str, line: int, column: int, entry: str, where: str, obj: str = "", from_annotation: bool = False) -> None:
        rule = resolve(entry) if entry != "*" else None
        if from_annotation and rule is not None and rule.SCOPE == ADMISSION:
            return  # the webhook honours it; the linter cannot tell whether it is used
        if entry != "*" and rule is None:
            if from_annotation:
                return  # the webhook may know codes the linter does not
            message = f'{where} names "{entry}", which is not a fieldwarden rule'
        elif rule is not None and not settings.enabled(rule.CODE):
            return
        else:
            what = "all rules" if entry == "*" else f"{rule.CODE if rule else entry}"
            message = f"{where} for {what} suppresses nothing here"
        found.append(Finding(file, line, column, "FW003", settings.severity["FW003"], obj, "", message, "remove it"))

    for result in results:
        settings = settings_for(result.file)
        if not settings.enabled("FW003"):
            continue
        for directive in result.directives:
            entries = directive.codes if directive.codes is not None else ("*",)
            for entry in entries:
                if (result.file, directive.line, "*" if directive.codes is None else entry) not in used:
                    report(result.file, directive.line, directive.column, entry, "ignore comment")
        for index, record in enumerate(result.objects):
            if record.ignore is False:
                continue
            entries = record.ignore if isinstance(record.ignore, tuple) else ("*",)
            for entry in entries:
                if (result.file, index, "*" if record.ignore is None else entry) not in used_notes:
                    line, column = record.ignore_at
                    report(result.file, line, column, entry, "fieldwarden.io/ignore annotation", record.label, True)
    return found
