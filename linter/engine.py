"""The lint run: targets and context in, suppressed and sorted findings out.

Targets are the files the user named (or pre-commit passed); context is the rest of the
project, loaded so that cross-file rules see the whole repository. Findings are only
ever reported for targets.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from ..policies.config import Settings
from ..policies.model import format_path, lighter
from ..policies.registry import RULES, resolve
from ..policies.rule import ADMISSION, SET, SetObject
from .analyse import FileResult, Finding, ObjectRecord, analyse, context_paths, locate_in_record, read_source
from .suppress import covers, directive_document

PARALLEL_MIN_BYTES = 1_500_000  # below this, starting worker processes costs more than it saves
CHUNK_BYTES = 256_000  # a worker's task: small enough to balance the load and stream results back
CACHE_MIN_BYTES = 16_000  # a smaller context is parsed faster than the cache is read and checked


class Source(NamedTuple):
    """A file to read (path) or text already in hand (stdin)."""

    display: str
    path: Path | None
    data: bytes | None = None


class Report(NamedTuple):
    """Outcome of a run."""

    findings: list[Finding]  # unsuppressed and suppressed, sorted
    notices: list[str]
    files: int


def lint(
    targets: Sequence[Source],
    context: Sequence[Path],
    settings: Settings,
    root: Path | None,
    settings_for: Callable[[str], Settings] | None = None,
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
        return _lint(targets, context, settings_for or (lambda _display: settings), root)
    finally:
        if collecting:
            gc.enable()


def _lint(targets: Sequence[Source], context: Sequence[Path], settings_for: Callable[[str], Settings], root: Path | None) -> Report:
    target_results = _analyse_all([(s.display, s.path, s.data, settings_for(s.display)) for s in targets], full=True)
    context_results = _load_context(context, settings_for, root, keep=[s.display for s in targets])
    records: list[ObjectRecord] = [o for r in target_results for o in r.objects]
    owners: list[FileResult] = [r for r in target_results for _ in r.objects]
    target_count = len(records)
    records.extend(o for r in context_results for o in r.objects)
    findings = [f for r in target_results for f in r.findings if settings_for(r.file).enabled(f.code)]
    findings.extend(_run_set_rules(records, owners, target_count, settings_for))
    findings = _suppress(target_results, findings, settings_for)
    notices = [r.notice for r in target_results if r.notice]
    findings.sort(key=lambda f: (f.file, f.line, f.column, f.code))
    return Report(findings, notices, len(target_results))


def _analyse_all(jobs: list[tuple[str, Path | None, bytes | None, Settings]], full: bool) -> list[FileResult]:
    loaded: Loaded = []
    for display, path, data, settings in jobs:
        error = ""
        if data is None and path is not None:
            data, error = read_source(path, settings)
        loaded.append((display, path, data, error, settings))
    return _analyse_loaded(loaded, full)


Loaded = list[tuple[str, Path | None, bytes | None, str, Settings]]  # (display, path, data, read error, settings)


def _analyse_loaded(loaded: Loaded, full: bool) -> list[FileResult]:
    """Analyse files in order; large inputs are spread over a pool of worker processes."""
    total = sum(len(item[2]) for item in loaded if item[2])
    workers = _cpus()
    if workers < 2 or total < PARALLEL_MIN_BYTES or len(loaded) < 4:
        return _analyse_chunk(loaded, full)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.context import BaseContext

    context: BaseContext
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        context = multiprocessing.get_context()
    # Many small tasks in file order: the workers stay busy to the end, results stream back
    # (and are unpickled here) while the workers go on, and map() keeps the order.
    chunks = _chunks(loaded, min(CHUNK_BYTES, total // (4 * workers) + 1))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parts = pool.map(_analyse_chunk, chunks, [full] * len(chunks))
        return [result for part in parts for result in part]


def _chunks(loaded: Loaded, size: int) -> list[Loaded]:
    """Consecutive runs of files of about `size` bytes each."""
    chunks: list[Loaded] = [[]]
    filled = 0
    for item in loaded:
        if filled >= size:
            chunks.append([])
            filled = 0
        chunks[-1].append(item)
        filled += len(item[2] or b"")
    return chunks


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _analyse_chunk(chunk: Loaded, full: bool) -> list[FileResult]:
    collecting = gc.isenabled()
    gc.disable()  # see lint(); a forked worker inherits the parent's state, a spawned one does not
    try:
        return [analyse(d, data, e, settings, full, p) for d, p, data, e, settings in chunk]
    finally:
        if collecting:
            gc.enable()


def _load_context(
    paths: Sequence[Path], settings_for: Callable[[str], Settings], root: Path | None, keep: Iterable[str] = ()
) -> list[FileResult]:
    """What set rules need from the context files, in the order of `paths`.

    A large context goes through the cache (keyed by file content: an edited file is parsed
    again, a deleted one drops out); `keep` names further files whose entries stay (the
    targets: pre-commit passes another file next time, and this one joins the context).
    """
    loaded: Loaded = []
    for path in paths:
        settings = settings_for(str(path))
        data, error = read_source(path, settings)
        if data is not None:
            loaded.append((str(path), path, data, error, settings))
    if root is None or sum(len(item[2] or b"") for item in loaded) < CACHE_MIN_BYTES:
        return [_slim(result) for result in _analyse_loaded(loaded, full=False)]
    from .cache import ContextCache, digest

    # What a file contributes depends on its bytes and on its configuration's default
    # namespace: one namespace for all (the usual case) keys the whole cache, several
    # key each entry.
    namespaces = {item[4].default_namespace for item in loaded}
    shared = namespaces.pop() if len(namespaces) == 1 else None
    cache = ContextCache(root, (context_paths(), shared, ObjectRecord._fields, FileResult._fields))
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
    fresh = iter(_analyse_loaded(missing, full=False))
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


def _run_set_rules(
    records: list[ObjectRecord], owners: list[FileResult], target_count: int, settings_for: Callable[[str], Settings]
) -> list[Finding]:
    """Set rules over every object, reporting on targets only, each under its own file's settings.

    For each rule, the targets whose configuration selects it are grouped by what the rule
    would see (its options, and whether the context counts); the rule runs once per group,
    so a hundred folder configurations that agree on a rule cost one pass, not a hundred.
    A finding's severity is that of the configuration of the file it is reported in. A
    configuration with `context: false` sees the targets alone.
    """
    objects = [SetObject(r.key, r.projection, r.origin) for r in records]
    distinct: dict[int, tuple[Settings, list[int]]] = {}  # the targets of each settings object
    for index in range(target_count):
        own = settings_for(owners[index].file)
        distinct.setdefault(id(own), (own, []))[1].append(index)
    found: list[Finding] = []
    for code, rule in RULES.items():
        if rule.SCOPE != SET:
            continue
        groups: dict[tuple[str, bool], tuple[dict[str, Any], list[int]]] = {}
        for settings, targets in distinct.values():
            if settings.enabled(code):
                conf = settings.rule_conf(code)
                groups.setdefault((repr(conf), settings.context), (conf, []))[1].extend(targets)
        for (_, context), (conf, targets) in groups.items():
            seen = objects if context else objects[:target_count]
            wanted = set(targets)
            for index, violation in rule.check_set(seen, sorted(targets), conf):
                if index not in wanted:
                    continue
                record = records[index]
                severity = settings_for(owners[index].file).severity[code]
                line, column = locate_in_record(record, violation.path)
                found.append(
                    Finding(
                        owners[index].file, line, column, code, lighter(severity, violation), record.label,
                        format_path(violation.path, record.projection), violation.message, violation.hint,
                        record.document, record.prefix + tuple(violation.path),
                    )
                )
    return found


def _suppress(results: Sequence[FileResult], findings: list[Finding], settings_for: Callable[[str], Settings]) -> list[Finding]:
    """Mark suppressed findings and add FW003 for suppressions that matched nothing."""
    by_file = {r.file: r for r in results}
    used: set[tuple[str, int, str]] = set()  # (file, line, entry) of comment entries that matched
    used_notes: set[tuple[str, int, str]] = set()  # (file, object index, entry)
    out: list[Finding] = []
    for finding in findings:
        result = by_file.get(finding.file)
        how = ""
        if result is not None and finding.code != "FW003":
            how = _comment_match(result, finding, used) or _annotation_match(result, finding, used_notes)
        out.append(finding._replace(suppressed=how) if how else finding)
    out.extend(_unused(results, used, used_notes, settings_for))
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
