"""The lint run: targets and context in, suppressed and sorted findings out.

Targets are the files the user named (or pre-commit passed); context is the rest of the
project, loaded so that cross-file rules see the whole repository. Findings are only
ever reported for targets.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from ..policies.config import Settings
from ..policies.model import format_path
from ..policies.registry import RULES, resolve
from ..policies.rule import SET, SetObject
from .analyse import FileResult, Finding, ObjectRecord, analyse, context_paths, locate_in_record, read_source
from .cache import ContextCache, digest
from .suppress import covers, directive_document

PARALLEL_MIN_BYTES = 1_500_000


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
) -> Report:
    """Lint the targets with the context files as background knowledge."""
    target_results = _analyse_all([(s.display, s.path, s.data) for s in targets], settings, full=True)
    context_results = _load_context(context, settings, root)
    records: list[ObjectRecord] = [o for r in target_results for o in r.objects]
    owners: list[FileResult] = [r for r in target_results for _ in r.objects]
    target_count = len(records)
    records.extend(o for r in context_results for o in r.objects)
    findings = [f for r in target_results for f in r.findings if settings.enabled(f.code)]
    findings.extend(_run_set_rules(records, owners, target_count, settings))
    findings = _suppress(target_results, findings, settings)
    notices = [r.notice for r in target_results if r.notice]
    findings.sort(key=lambda f: (f.file, f.line, f.column, f.code))
    return Report(findings, notices, len(target_results))


def _analyse_all(jobs: list[tuple[str, Path | None, bytes | None]], settings: Settings, full: bool) -> list[FileResult]:
    loaded: list[tuple[str, Path | None, bytes | None, str]] = []
    for display, path, data in jobs:
        error = ""
        if data is None and path is not None:
            data, error = read_source(path, settings)
        loaded.append((display, path, data, error))
    return _analyse_loaded(loaded, settings, full)


def _analyse_loaded(loaded: list[tuple[str, Path | None, bytes | None, str]], settings: Settings, full: bool) -> list[FileResult]:
    total = sum(len(data) for _, _, data, _ in loaded if data)
    workers = os.cpu_count() or 1
    if workers < 2 or total < PARALLEL_MIN_BYTES or len(loaded) < 4:
        return [analyse(d, data, e, settings, full, p) for d, p, data, e in loaded]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        context = multiprocessing.get_context()
    chunks = [loaded[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parts = list(pool.map(_analyse_chunk, chunks, [settings] * workers, [full] * workers))
    order = {item[0]: n for n, item in enumerate(loaded)}
    results = [result for part in parts for result in part]
    results.sort(key=lambda r: order[r.file])
    return results


def _analyse_chunk(chunk: list[tuple[str, Path | None, bytes | None, str]], settings: Settings, full: bool) -> list[FileResult]:
    return [analyse(d, data, e, settings, full, p) for d, p, data, e in chunk]


def _load_context(paths: Sequence[Path], settings: Settings, root: Path | None) -> list[FileResult]:
    if not paths:
        return []
    cache = ContextCache(root, (context_paths(), settings.default_namespace, settings.max_file_size)) if root else None
    results: list[FileResult] = []
    missing: list[tuple[str, Path | None, bytes | None, str]] = []
    keys: dict[str, bytes] = {}
    for path in paths:
        display = _display(path)
        data, error = read_source(path, settings)
        if data is None:
            continue
        key = digest(data)
        cached = cache.get(display, key) if cache else None
        if cached is not None:
            results.append(cached)
        else:
            keys[display] = key
            missing.append((display, path, data, error))
    fresh = _analyse_loaded(missing, settings, full=False)
    for result in fresh:
        slim = FileResult(result.file, [], result.objects, [], [], "")
        results.append(slim)
        if cache:
            cache.put(result.file, keys[result.file], slim)
    if cache:
        cache.keep_only({_display(p) for p in paths})
        cache.save()
    return results


def _display(path: Path) -> str:
    text = str(path)
    return text[2:] if text.startswith("./") else text


def _run_set_rules(records: list[ObjectRecord], owners: list[FileResult], target_count: int, settings: Settings) -> list[Finding]:
    objects = [SetObject(r.key, r.projection, r.origin) for r in records]
    targets = list(range(target_count))
    found: list[Finding] = []
    for code, rule in RULES.items():
        if rule.SCOPE != SET or not settings.enabled(code) or not targets:
            continue
        for index, violation in rule.check_set(objects, targets, settings.rule_conf(code)):
            if index >= target_count:
                continue
            record = records[index]
            line, column = locate_in_record(record, violation.path)
            found.append(
                Finding(
                    owners[index].file, line, column, code, settings.severity[code], record.label,
                    format_path(violation.path, record.projection), violation.message, violation.hint,
                    record.document, record.prefix + tuple(violation.path),
                )
            )
    return found


def _suppress(results: Sequence[FileResult], findings: list[Finding], settings: Settings) -> list[Finding]:
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
    if settings.enabled("FW003"):
        out.extend(_unused(results, used, used_notes, settings))
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


def _unused(results: Iterable[FileResult], used: set[tuple[str, int, str]], used_notes: set[tuple[str, int, str]], settings: Settings) -> list[Finding]:
    found: list[Finding] = []

    def report(file: str, line: int, column: int, entry: str, where: str, obj: str = "", from_annotation: bool = False) -> None:
        rule = resolve(entry) if entry != "*" else None
        if entry != "*" and rule is None:
            if from_annotation:
                return  # the webhook may know codes the linter does not
            message = f'{where} names "{entry}", which is not a fieldwarden rule'
        elif rule is not None and not settings.enabled(rule.CODE):
            return
        else:
            what = "suppressions" if entry == "*" else f"{rule.CODE if rule else entry}"
            message = f"{where} for {what} suppresses nothing here"
        found.append(Finding(file, line, column, "FW003", settings.severity["FW003"], obj, "", message, "remove it"))

    for result in results:
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
