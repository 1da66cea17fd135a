"""`fieldwarden lint --cluster`: the live checks as one more pass over the units the lint read.

After the lint, the target files are read again (whole objects and their node trees: the lint
keeps only what its rules need), with the plain files of units a named GitOps object declares,
and live/units.py turns each unit's objects into
`live.LiveObject`s: a plain unit's as written, a rendered unit's as rendered (a patch, a base,
a template is never checked on its own), placed on the source line. `live.check` runs them
against the cluster of the kubeconfig. Its findings then go through the same suppressions as
the others (`# fieldwarden: ignore[...]` comments at the place a finding is reported, and the
object's `fieldwarden.io/ignore` annotation, a rendered object's included); an ignore comment
that only a live finding uses is no longer "unused" (FW003). A finding that several units'
objects raise at one place is reported once, naming them all. Without `--cluster` the live
rules are off (cli.py), so that ignore comments naming them are not reported as unused by a
plain lint either.

Importing this module loads neither the `kubernetes` client nor the cluster edge; `run` does,
and says how to install it when it is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ...policies.config import Settings
from ...policies.live import APPLY_MODES, SERVER
from ...policies.registry import RULES
from ...policies.rule import LIVE
from ..analyse import Finding, read_source
from ..discover import is_helm_template
from ..engine import STDIN, Report, Source
from .checks import LiveError, LiveObject, LiveOptions, check
from .units import Written, live_objects
from ..loader import decode, load
from ..sets import annotated
from ..suppress import ANNOTATION, Directive, annotation_codes, covers, directive_document, scan_comments

if TYPE_CHECKING:
    from ..unitrun import UnitRun

INSTALL = "pip install 'fieldwarden[cluster]'"


def live_codes() -> tuple[str, ...]:
    """Codes and names of the live rules (turned off without --cluster)."""
    return tuple(entry for code, rule in RULES.items() if rule.SCOPE == LIVE for entry in (code, str(rule.NAME)))


TARGET_KEYS = ("kubeconfig", "context")  # where to connect, with which credentials: never from a configuration file


def options_from(args: Any, settings: Settings) -> LiveOptions:
    """The command line over the configuration's `cluster:` section (see policies/config.py).

    A configuration file may sit in the tree being linted, which may be a stranger's pull request:
    it says how the team applies, never where to connect or with which credentials (its
    `kubeconfig` and `context` are ignored, with a notice; those come from --kubeconfig,
    --context, $KUBECONFIG or ~/.kube/config). Whatever it says, every request is a GET or a dry
    run (paths.guard), and it can turn --read-only on, never off.
    """
    conf: Mapping[str, Any] = getattr(settings, "cluster", None) or {}
    ignored = [key for key in TARGET_KEYS if key in conf]
    notices = (f"--cluster: {settings.source or 'the configuration'}: cluster.{' and cluster.'.join(ignored)} ignored: "
               "a configuration file never chooses the cluster or the credentials (use --kubeconfig, --context or "
               "$KUBECONFIG)",) if ignored else ()
    kubeconfig = getattr(args, "kubeconfig", None)
    mode = getattr(args, "apply_mode", None) or conf.get("apply-mode") or SERVER
    if mode not in APPLY_MODES:
        raise LiveError(f"--apply-mode must be one of {', '.join(APPLY_MODES)}")
    return LiveOptions(
        apply_mode=mode,
        field_manager=getattr(args, "field_manager", None) or conf.get("field-manager"),
        read_only=bool(getattr(args, "read_only", False) or conf.get("read-only", False)),
        force_conflicts=bool(getattr(args, "force_conflicts", False) or conf.get("force-conflicts", False)),
        kubeconfig=str(kubeconfig) if kubeconfig else None,
        context=getattr(args, "context", None),
        timeout=float(conf.get("timeout", 30)),
        parallel=int(conf.get("parallel", 16)),
        sensitive=tuple(str(entry) for entry in conf.get("sensitive-fields") or ()),
        notices=notices,
    )


def run(report: Report, targets: Sequence[Source], settings_for: Callable[[str], Settings], options: LiveOptions) -> Report:
    """The report with the live findings added (suppressed as the others) and the pass's notices."""
    try:
        from .cluster import Cluster
    except ImportError as error:
        raise LiveError(f"--cluster needs the Kubernetes client ({error.name or 'kubernetes'} is not installed): "
                        f"{INSTALL}") from None
    objects, texts = checked_objects(report, targets, settings_for)
    try:
        cluster = Cluster(options.kubeconfig, options.context, options.timeout, options.parallel)
        try:
            found = check(objects, options, settings_for, cluster)
        finally:
            cluster.close()
    except LiveError as error:  # say what was ignored here too: it may be why the cluster is not the one expected
        if not options.notices:
            raise
        raise LiveError("; ".join((str(error), *options.notices))) from None
    texts.update(_placed_texts(found.findings, texts, settings_for))
    live, used = _suppress(found.findings, found.about, texts, objects)
    kept = [f for f in report.findings if not _used_elsewhere(f, used)]
    findings = sorted(kept + _merged(live), key=lambda f: (f.file, f.line, f.column, f.code))
    return report._replace(findings=findings, notices=[*report.notices, *options.notices, *found.notices])


def checked_objects(report: Report, targets: Sequence[Source], settings_for: Callable[[str], Settings]
                    ) -> tuple[list[LiveObject], dict[str, _Text]]:
    """The objects the lint's units apply, each placed where it is written (in a target or not), and
    what suppression needs of the files read for them."""
    written, texts = _read(checked_sources(targets, report.units), settings_for, report.units)
    return live_objects(report.units, written, settings_for), texts


def checked_sources(targets: Sequence[Source], units: UnitRun | None) -> list[Source]:
    """The files whose objects are checked: the targets, and the plain files of each unit a named GitOps
    object declares (the namespace they go to is that object's doing: a changed Application's
    destination is checked with the folder it deploys). A rendered unit's objects come with its render."""
    if units is None:
        return list(targets)
    shown = {source.display for source in targets}
    more: list[Source] = []
    for unit in units.chosen:
        if not units.declared_by_wanted(unit):
            continue
        for key in unit.files:
            display = units.names.display(key)
            if display not in shown and key != STDIN:
                shown.add(display)
                more.append(Source(display, display))
    return [*targets, *more]


class _Text:
    """What suppression needs of one file: its comments and documents."""

    def __init__(self, directives: list[Directive], spans: list[tuple[int, int]]) -> None:
        self.directives = directives
        self.spans = spans


def _read(targets: Sequence[Source], settings_for: Callable[[str], Settings], units: UnitRun | None
          ) -> tuple[list[Written], dict[str, _Text]]:
    """The targets' documents (none for templates) and suppression comments."""
    written: list[Written] = []
    texts: dict[str, _Text] = {}
    for source in targets:
        data = source.data
        if data is None and source.path is not None:
            data, _error = read_source(source.path, settings_for(source.display))
        if data is None:
            continue  # the lint has reported it (FW004)
        text, _problem = decode(data)
        if text is None:
            continue
        template = "{{" in text and source.path is not None and is_helm_template(Path(source.path))
        loaded = None if template else load(text)
        if loaded is None or "{{" in text and (loaded.template_like or loaded.problems):
            texts[source.display] = _Text(scan_comments(text), [])  # a template: its comments, for rendered findings
            continue
        texts[source.display] = _Text(scan_comments(text), [(d.start_line, d.end_line) for d in loaded.documents])
        stdin = source.path is None and source.display == STDIN
        key = STDIN if stdin else (units.names.id(source.display) if units is not None else source.display)
        written.append(Written(source.display, key, loaded.documents))
    return written, texts


def _placed_texts(findings: Sequence[Finding], texts: dict[str, _Text], settings_for: Callable[[str], Settings]
                  ) -> dict[str, _Text]:
    """The comments of files outside the targets that live findings land in (a unit's base, say)."""
    found: dict[str, _Text] = {}
    for file in sorted({finding.file for finding in findings} - set(texts) - {STDIN}):
        data, _error = read_source(Path(file), settings_for(file))
        text = decode(data)[0] if data is not None else None
        if text is None:
            continue
        loaded = None if "{{" in text else load(text)
        found[file] = _Text(scan_comments(text), [(d.start_line, d.end_line) for d in loaded.documents] if loaded else [])
    return found


Used = set[tuple[str, int, str]]  # (file, line of the comment or annotation, code or "*")


def _suppress(findings: list[Finding], about: Sequence[LiveObject], texts: dict[str, _Text],
              objects: Sequence[LiveObject]) -> tuple[list[Finding], Used]:
    """The live findings with their suppressions, and which comments and annotations they used.

    A finding on a rendered object (no document of its own) is suppressed by the comments at its
    place, and by the rendered object's annotation (written in a base, say): the lint judges no
    annotation of the files renders read, so that one needs no bookkeeping.
    """
    notes: dict[tuple[str, int, tuple[str | int, ...]], tuple[Any, int]] = {}
    for live in objects:
        codes = annotation_codes(live.obj)
        if codes is not False and live.document >= 0:
            where = live.locate(("metadata", "annotations", ANNOTATION))
            if where is not None:
                notes[(live.file, live.document, live.prefix)] = (codes, where[1])
    used: Used = set()
    out = []
    for finding, source in zip(findings, about):
        how = ""
        text = texts.get(finding.file)
        document = finding.document if finding.document >= 0 else _document_of(text, finding.line)
        for directive in text.directives if text is not None else ():
            heads = directive_document(directive, text.spans) if text is not None else None
            if not (heads is not None and heads == document or directive.line == finding.line
                    or directive.standalone and heads is None and directive.line == finding.line - 1):
                continue
            entry = covers(directive.codes, finding.code, finding.name)
            if entry is not None:
                used.add((finding.file, directive.line, entry if directive.codes is not None else "*"))
                how = f"comment at line {directive.line}"
                break
        if not how and finding.document < 0:
            how = annotated(annotation_codes(source.obj), finding.code)
        elif not how:
            prefix = tuple(finding.raw_path[:2]) if finding.raw_path[:1] == ("items",) else ()
            note = notes.get((finding.file, finding.document, prefix))
            if note is not None:
                entry = covers(note[0], finding.code, finding.name)
                if entry is not None:
                    used.add((finding.file, note[1], entry if note[0] is not None else "*"))
                    how = "annotation fieldwarden.io/ignore"
        out.append(finding._replace(suppressed=how) if how else finding)
    return out, used


def _document_of(text: _Text | None, line: int) -> int | None:
    """The document of a file that holds a line (where a rendered finding is placed)."""
    for index, (start, end) in enumerate(text.spans if text is not None else ()):
        if start <= line <= end:
            return index
    return None


def _merged(findings: list[Finding]) -> list[Finding]:
    """Findings of several units' objects at one place, saying the same: one, naming every unit."""
    merged: dict[tuple[object, ...], Finding] = {}
    for finding in findings:
        place = (finding.document, finding.raw_path) if finding.document >= 0 else ()
        key = (finding.file, finding.line, finding.column, finding.code, finding.field, finding.message,
               finding.suppressed, place)
        known = merged.get(key)
        merged[key] = finding if known is None else known._replace(
            units=tuple(dict.fromkeys((*known.units, *finding.units))),
            approximate=known.approximate and finding.approximate)
    return list(merged.values())


def _used_elsewhere(finding: Finding, used: Used) -> bool:
    """An FW003 of the lint for a comment or annotation that a live finding turned out to use."""
    if finding.code != "FW003" or not used:
        return False
    for file, line, entry in used:
        if finding.file != file or finding.line != line:
            continue
        rule = RULES.get(entry.upper()) or next((r for r in RULES.values() if r.NAME == entry.lower()), None)
        what = "all rules" if entry == "*" else (str(rule.CODE) if rule is not None else entry)
        if f" for {what} suppresses nothing" in finding.message:
            return True
    return False
