"""`fieldwarden lint --cluster`: the live checks as one more pass over the files the lint read.

After the lint, the target files are read again (whole objects and their node trees: the lint
keeps only what its rules need), each object becomes a `live.LiveObject` placed by its YAML
nodes, and `live.check` runs against the cluster of the kubeconfig. Its findings then go
through the same suppressions as the others (`# fieldwarden: ignore[...]` comments and the
`fieldwarden.io/ignore` annotation); an ignore comment that only a live finding uses is no
longer "unused" (FW003). Without `--cluster` the live rules are off (cli.py), so that ignore
comments naming them are not reported as unused by a plain lint either.

Objects are checked as they are written: lint what `kubectl apply` receives (the folder it is
given, or a kustomize or Helm render on stdin). Importing this module loads neither the
`kubernetes` client nor the cluster edge; `run` does, and says how to install it when it is
missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..policies.config import Settings
from ..policies.kube import is_kubernetes_object, object_key
from ..policies.live import APPLY_MODES, SERVER
from ..policies.registry import RULES
from ..policies.rule import LIVE
from .analyse import Finding, read_source
from .discover import is_helm_template
from .engine import Report, Source
from .live import LiveError, LiveObject, LiveOptions, check
from .loader import decode, load, locate
from .suppress import ANNOTATION, Directive, annotation_codes, covers, directive_document, scan_comments

INSTALL = "pip install 'fieldwarden[cluster]'"


def live_codes() -> tuple[str, ...]:
    """Codes and names of the live rules (turned off without --cluster)."""
    return tuple(entry for code, rule in RULES.items() if rule.SCOPE == LIVE for entry in (code, str(rule.NAME)))


def options_from(args: Any, settings: Settings) -> LiveOptions:
    """The command line over the configuration's `cluster:` section (see policies/config.py)."""
    conf: Mapping[str, Any] = getattr(settings, "cluster", None) or {}
    kubeconfig = getattr(args, "kubeconfig", None) or conf.get("kubeconfig")
    if kubeconfig and not getattr(args, "kubeconfig", None) and settings.source:
        kubeconfig = os.path.join(os.path.dirname(settings.source), os.path.expanduser(str(kubeconfig)))
    mode = getattr(args, "apply_mode", None) or conf.get("apply-mode") or SERVER
    if mode not in APPLY_MODES:
        raise LiveError(f"--apply-mode must be one of {', '.join(APPLY_MODES)}")
    return LiveOptions(
        apply_mode=mode,
        field_manager=getattr(args, "field_manager", None) or conf.get("field-manager"),
        read_only=bool(getattr(args, "read_only", False) or conf.get("read-only", False)),
        force_conflicts=bool(getattr(args, "force_conflicts", False) or conf.get("force-conflicts", False)),
        kubeconfig=str(kubeconfig) if kubeconfig else None,
        context=getattr(args, "context", None) or conf.get("context"),
        timeout=float(conf.get("timeout", 30)),
        parallel=int(conf.get("parallel", 16)),
    )


def run(report: Report, targets: Sequence[Source], settings_for: Callable[[str], Settings], options: LiveOptions) -> Report:
    """The report with the live findings added (suppressed as the others) and the pass's notices."""
    try:
        from .cluster import Cluster
    except ImportError as error:
        raise LiveError(f"--cluster needs the Kubernetes client ({error.name or 'kubernetes'} is not installed): "
                        f"{INSTALL}") from None
    objects, texts = _objects(targets, settings_for)
    cluster = Cluster(options.kubeconfig, options.context, options.timeout, options.parallel)
    try:
        found = check(objects, options, settings_for, cluster)
    finally:
        cluster.close()
    live, used = _suppress(found.findings, texts, objects)
    kept = [f for f in report.findings if not _used_elsewhere(f, used)]
    findings = sorted(kept + live, key=lambda f: (f.file, f.line, f.column, f.code))
    return Report(findings, [*report.notices, *found.notices], report.files)


class _Text:
    """What suppression needs of one file: its comments and documents."""

    def __init__(self, directives: list[Directive], spans: list[tuple[int, int]]) -> None:
        self.directives = directives
        self.spans = spans


def _objects(targets: Sequence[Source], settings_for: Callable[[str], Settings]) -> tuple[list[LiveObject], dict[str, _Text]]:
    objects: list[LiveObject] = []
    texts: dict[str, _Text] = {}
    for source in targets:
        settings = settings_for(source.display)
        data = source.data
        if data is None and source.path is not None:
            data, _error = read_source(source.path, settings)
        if data is None:
            continue  # the lint has reported it (FW004)
        text, _problem = decode(data)
        if text is None or ("{{" in text and source.path is not None and is_helm_template(Path(source.path))):
            continue
        loaded = load(text)
        if "{{" in text and (loaded.template_like or loaded.problems):
            continue
        texts[source.display] = _Text(scan_comments(text), [(d.start_line, d.end_line) for d in loaded.documents])
        for document in loaded.documents:
            for prefix, node, obj in _documents_objects(document.node, document.data):
                key = object_key(obj, settings.default_namespace)
                label = key.label() if key else f"{obj['kind']}/(unnamed)"
                objects.append(LiveObject(obj, source.display, document.index, prefix, label,
                                          _locator(source.display, node), settings.default_namespace))
    return objects, texts


def _locator(file: str, node: Any) -> Callable[[tuple[str | int, ...]], tuple[str, int, int]]:
    def place(path: tuple[str | int, ...]) -> tuple[str, int, int]:
        line, column = locate(node, path)
        return file, line, column

    return place


def _documents_objects(node: Any, data: Any) -> Iterator[tuple[tuple[str | int, ...], Any, dict[str, Any]]]:
    """The Kubernetes objects of a document; each item of a `kind: List` counts."""
    if not is_kubernetes_object(data):
        return
    if data["kind"].endswith("List") and isinstance(data.get("items"), list):
        values = dict((k.value, v) for k, v in node.value if hasattr(k, "value")) if hasattr(node, "value") else {}
        items_node = values.get("items")
        item_nodes = items_node.value if items_node is not None and isinstance(items_node.value, list) else []
        for index, item in enumerate(data["items"]):
            if is_kubernetes_object(item) and index < len(item_nodes):
                yield ("items", index), item_nodes[index], item
        return
    yield (), node, data


Used = set[tuple[str, int, str]]  # (file, line of the comment or annotation, code or "*")


def _suppress(findings: list[Finding], texts: dict[str, _Text], objects: Sequence[LiveObject]) -> tuple[list[Finding], Used]:
    """The live findings with their suppressions, and which comments and annotations they used."""
    notes: dict[tuple[str, int, tuple[str | int, ...]], tuple[Any, int]] = {}
    for live in objects:
        codes = annotation_codes(live.obj)
        if codes is not False:
            _file, line, _column = live.locate(("metadata", "annotations", ANNOTATION))
            notes[(live.file, live.document, live.prefix)] = (codes, line)
    used: Used = set()
    out = []
    for finding in findings:
        how = ""
        text = texts.get(finding.file)
        for directive in text.directives if text is not None else ():
            heads = directive_document(directive, text.spans) if text is not None else None
            if not (heads is not None and heads == finding.document or directive.line == finding.line
                    or directive.standalone and heads is None and directive.line == finding.line - 1):
                continue
            entry = covers(directive.codes, finding.code, finding.name)
            if entry is not None:
                used.add((finding.file, directive.line, entry if directive.codes is not None else "*"))
                how = f"comment at line {directive.line}"
                break
        if not how:
            prefix = tuple(finding.raw_path[:2]) if finding.raw_path[:1] == ("items",) else ()
            note = notes.get((finding.file, finding.document, prefix))
            if note is not None:
                entry = covers(note[0], finding.code, finding.name)
                if entry is not None:
                    used.add((finding.file, note[1], entry if note[0] is not None else "*"))
                    how = "annotation fieldwarden.io/ignore"
        out.append(finding._replace(suppressed=how) if how else finding)
    return out, used


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
