"""One file, start to finish: read, parse, run object rules, locate, project for set rules.

This is what a worker process runs; everything it returns is plain, picklable data.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any, Iterable, NamedTuple, Sequence

    from ..policies.schemas.crd import Catalog
else:
    from ..policies.records import NamedTuple

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..policies.config import Settings
from ..policies.kube import group_kind, is_kubernetes_object, object_key
from ..policies.model import FieldPath, ObjectKey, format_path, lighter
from ..policies.registry import RULES
from ..policies.rule import OBJECT, SET
from .discover import is_helm_template
from .units.plan import PATHS as GITOPS_PATHS
from .loader import Document, Loaded, decode, load, json_non_manifest, locate
from .plainload import PlainDocument, Spot, load_plain, project
from .suppress import ANNOTATION, Directive, annotation_codes, scan_comments

Locations = dict[FieldPath, tuple[int, int]]


class Finding(NamedTuple):
    """A located violation, ready for suppression and formatting."""

    file: str
    line: int
    column: int
    code: str
    severity: str
    object: str
    field: str
    message: str
    hint: str
    document: int = -1  # index in the YAML stream, for --fix
    raw_path: FieldPath = ()  # path from the document root, for --fix
    suppressed: str = ""  # how it was suppressed, if it was
    units: tuple[str, ...] = ()  # the apply units it was found in (units/plan.py), the first one first
    approximate: bool = False  # placed on a rendered object's nearest known enclosing field

    @property
    def name(self) -> str:
        """The rule's kebab-case name."""
        return str(RULES[self.code].NAME)


class ObjectRecord(NamedTuple):
    """An object as set rules and suppression need it."""

    key: ObjectKey | None
    label: str
    projection: dict[str, Any]
    locations: Locations
    origin: str
    document: int
    prefix: FieldPath  # ("items", i) inside a `kind: List`, else ()
    ignore: tuple[str, ...] | None | bool  # the ignore annotation's codes (see suppress.annotation_codes)
    ignore_at: tuple[int, int]


class FileResult(NamedTuple):
    """Everything one file contributes."""

    file: str
    findings: list[Finding]
    objects: list[ObjectRecord]
    directives: list[Directive]
    spans: list[tuple[int, int]]
    notice: str


def context_paths() -> tuple[FieldPath, ...]:
    """Union of what set rules read, plus identity and the fields that name units (gitops.PATHS)."""
    paths: set[tuple[Any, ...]] = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
    paths.update(GITOPS_PATHS)
    for rule in RULES.values():
        if rule.SCOPE == SET:
            paths.update(tuple(p) for p in rule.CONTEXT_PATHS)
    return tuple(sorted(paths, key=str))


# The context paths merged into a tree, so that shared prefixes are walked once:
# {step: (a path ends here, deeper steps)}; "*" stands for every list item.
PathTree = dict[str, tuple[bool, "PathTree"]]
_TREE: PathTree | None = None


def context_tree() -> PathTree:
    """The paths projections keep (context_paths()), as a tree of path steps: made once per process."""
    global _TREE
    if _TREE is None:
        tree: PathTree = {}
        for path in context_paths():
            level = tree
            for depth, part in enumerate(path):
                ends, deeper = level.get(str(part), (False, {}))
                level[str(part)] = (ends or depth == len(path) - 1, deeper)
                level = deeper
        _TREE = tree
    return _TREE


def read_source(path: str | PathLike[str], settings: Settings) -> tuple[bytes | None, str]:
    """File bytes, or an explanation of why they cannot be had."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return None, "cannot read file: not a regular file"
            data = handle.read(settings.max_file_size + 1)
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        if exc.errno == errno.ENOENT and os.path.islink(path):
            reason = f"dangling symlink (its target {os.readlink(path)} does not exist)"
        return None, f"cannot read file: {reason}"
    if len(data) > settings.max_file_size:
        size = os.path.getsize(path)
        return None, (
            f"file is {size:,} bytes, over max-file-size ({settings.max_file_size:,}); not linted"
        )
    return data, ""


def analyse(
    display: str, data: bytes | None, error: str, settings: Settings, full: bool, path: str | PathLike[str] | None, consumed: bool = False,
    read: Loaded | None = None, crds: Catalog | None = None,
) -> FileResult:
    """Lint one file's bytes. `full` runs object rules (targets); otherwise only projects.

    `read` is the bytes' text as loader.load read it, when the caller did already (a rendered object's).
    `crds`: the CRDs at hand (linter/crds.py), given to the schema rules as conf["crds"].

    A `consumed` file (a kustomize patch, a chart template: see units/plan.py) is linted through
    the renders that use it: here it gets its input checks, suppression comments and
    projections, but no object rules; a template in it is no reason for a notice.
    """
    findings: list[Finding] = []
    if data is None:
        return FileResult(display, [_input_finding(display, "FW004", 1, 1, error)], [], [], [], "")
    text, problem = decode(data)
    if text is None:
        assert problem is not None
        return FileResult(display, [_input_finding(display, *problem)], [], [], [], "")
    template = "{{" in text and path is not None and is_helm_template(path)
    plain = load_plain(text) if read is None and not template else None
    if plain is not None:  # (no problems, nothing template-like: none of what follows applies)
        return _analysed(display, text, plain, [], settings, full, consumed, crds)
    loaded = None if template else read if read is not None else load(text)
    if "{{" in text and (loaded is None or loaded.template_like or any(p.code == "FW001" for p in loaded.problems)):
        if consumed:  # a template rendered elsewhere: its comments may suppress what is found on its lines
            return FileResult(display, [], [], scan_comments(text) if full else [], [], "")
        what = "Helm chart template" if template else "Go/Helm template syntax ({{ }})"
        return FileResult(display, [], [], [], [], f"{display}: skipped: {what}")
    assert loaded is not None
    if loaded.problems and json_non_manifest(os.fspath(path) if path is not None else display, text):
        return FileResult(display, [], [], [], [], "")  # JSONC, JSON lines...: no manifest, no findings
    findings.extend(_input_finding(display, *problem) for problem in loaded.problems)
    return _analysed(display, text, loaded.documents, findings, settings, full, consumed, crds)


def _analysed(
    display: str, text: str, documents: Sequence[Document | PlainDocument], findings: list[Finding], settings: Settings,
    full: bool, consumed: bool, crds: Catalog | None,
) -> FileResult:
    """The object rules, projections and comments of a file's documents (read by either loader)."""
    objects: list[ObjectRecord] = []
    tree = context_tree()
    # The object rules for each kind met (rule.KINDS), with their options: a rule's module is imported
    # when an object of its kinds is met (registry.py). Made once per settings (their memo), not per file.
    by_kind: dict[tuple[str, str], list[tuple[Any, Any]]] = settings.memo.setdefault(_BY_KIND, {}) if full and not consumed else {}
    object_rules = _object_rules(settings) if full and not consumed else []
    for document in documents:
        for prefix, node, obj in _objects(document.node, document.data):
            key = object_key(obj, settings.default_namespace)
            label = key.label() if key else _label_without_name(obj)
            kind = group_kind(obj)
            rules = by_kind.get(kind)
            if rules is None:
                rules = by_kind[kind] = [(r, settings.rule_conf(code)) for code, r in object_rules
                                         if (kinds := _kinds(settings, code, r)) is None or kind in kinds]
            if crds is not None:
                rules = [(r, {**c, "crds": crds}) if r.CODE in READS_CRDS else (r, c) for r, c in rules]
            for rule, conf in rules:
                for violation in rule.check(obj, conf):
                    line, column = _locate(node, obj, violation.path)
                    findings.append(
                        Finding(
                            display, line, column, rule.CODE, lighter(settings.severity[rule.CODE], violation), label,
                            format_path(violation.path, obj), violation.message, violation.hint,
                            document.index, prefix + tuple(violation.path),
                        )
                    )
            ignore = annotation_codes(obj)
            ignore_at = _locate(node, obj, ("metadata", "annotations", ANNOTATION)) if ignore is not False else (0, 0)
            locations: Locations = {}
            projection = _project(obj, node, tree, locations)
            name_line = locations.get(("metadata", "name"), (_line(node), 0))[0]
            if not full:
                locations = {}  # findings are only reported for targets: context needs no positions
            objects.append(
                ObjectRecord(key, label, projection, locations, f"{display}:{name_line}", document.index, prefix, ignore, ignore_at)
            )
    directives = scan_comments(text) if full else []
    spans = [(d.start_line, d.end_line) for d in documents]
    return FileResult(display, findings, objects, directives, spans, "")


READS_CRDS = frozenset({"FW601", "FW602", "FW603"})  # the schema rules: a custom resource's CRD, if at hand
_BY_KIND = "analyse: object rules by kind"  # (keys of Settings.memo)
_OBJECT_RULES = "analyse: object rules"
_RULE_KINDS = "analyse: object rules' kinds"


def _object_rules(settings: Settings) -> list[tuple[str, Any]]:
    """The object rules the settings enable, as (code, rule), in the registry's order."""
    found: list[tuple[str, Any]] | None = settings.memo.get(_OBJECT_RULES)
    if found is None:
        found = settings.memo[_OBJECT_RULES] = [
            (code, rule) for code, rule in RULES.items() if rule.SCOPE == OBJECT and settings.enabled(code)
        ]
    return found


def _kinds(settings: Settings, code: str, rule: Any) -> Any:
    """An object rule's KINDS, or None for a rule of every kind; read once per settings (their memo), when
    a kind is first met: a rule without KINDS asked again would go through the registry's __getattr__
    and its AttributeError each time (every file of a large tree, for each kind it holds)."""
    known: dict[str, Any] = settings.memo.setdefault(_RULE_KINDS, {})
    if code not in known:
        known[code] = getattr(rule, "KINDS", None)
    return known[code]


def _input_finding(display: str, code: str, line: int, column: int, message: str) -> Finding:
    return Finding(display, line, column, code, RULES[code].SEVERITY, "", "", message, "")


def _label_without_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    generate = meta.get("generateName") if isinstance(meta, dict) else None
    return f"{obj['kind']}/{generate}*" if isinstance(generate, str) else f"{obj['kind']}/(unnamed)"


# Where a node stands: in the full loader's node tree, or in the compiled reader's table (plainload.py).
Where = Node | Spot


def _objects(node: Where, data: Any) -> Iterable[tuple[FieldPath, Where, dict[str, Any]]]:
    """Kubernetes objects of a document; the items of a `kind: List` each count."""
    if not is_kubernetes_object(data):
        return
    if data["kind"].endswith("List") and isinstance(data.get("items"), list):
        items_node = node.keys(data, _ITEMS)["items"][1] if isinstance(node, Spot) else _child(node, "items")
        for index, (item, place) in enumerate(zip(data["items"], _items(items_node, len(data["items"])))):
            if is_kubernetes_object(item) and place is not None:
                yield ("items", index), place, item
        return
    yield (), node, data


_ITEMS = frozenset({"items"})


def _child(node: Node, key: str) -> Node | None:
    """The value of a mapping node's first `key` (a repeated key is a FW002 already)."""
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.value == key:
                return value_node if isinstance(value_node, Node) else None
    return None


def _locate(node: Where, data: Any, path: FieldPath) -> tuple[int, int]:
    """loader.locate(), for either kind of place."""
    return node.locate(data, path) if isinstance(node, Spot) else locate(node, path)


def _line(node: Where) -> int:
    """The 1-based line a node starts on."""
    return node.line if isinstance(node, Spot) else node.start_mark.line + 1


def _keys(node: Where | None, mapping: dict[str, Any], wanted: Any) -> dict[str, tuple[tuple[int, int], Where | None]]:
    """The keys of `mapping` in `wanted`, each with its key's position and its value's place (the last one of
    a repeated key wins, as in the data)."""
    if isinstance(node, Spot):
        return node.keys(mapping, wanted)  # type: ignore[return-value]
    found: dict[str, tuple[tuple[int, int], Where | None]] = {}
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            if key_node.__class__ is ScalarNode and key_node.value in wanted:
                mark = key_node.start_mark
                found[key_node.value] = ((mark.line + 1, mark.column + 1), value_node if isinstance(value_node, Node) else None)
    return found


def _items(node: Where | None, count: int) -> list[Where | None]:
    """The places of a sequence's first `count` items (fewer where the node has fewer)."""
    if isinstance(node, Spot):
        return node.items(count)  # type: ignore[return-value]
    return list(node.value[:count]) if isinstance(node, SequenceNode) else []


def _project(obj: Any, node: Where, tree: PathTree, locations: Locations) -> dict[str, Any]:
    """Copy only the fields in `tree` of `obj` and record where each step stands in `node`."""
    if isinstance(node, Spot):
        projected = project(obj, node, tree, locations, _PATHS, _PATHS_MAX)
        if projected is not None:
            return projected
    out: dict[str, Any] = {}
    _take(obj, out, node, tree, (), locations)
    return out


def _take(src: Any, dst: Any, node: Where | None, tree: PathTree, done: FieldPath, locations: Locations) -> None:
    """Copy the steps of `tree` from `src` into `dst` (a partial copy of `src` being built)."""
    if isinstance(src, list):
        star = tree.get("*")
        if star is None:
            return
        ends, deeper = star
        items = _items(node, len(src)) if node is not None else []
        for index, item in enumerate(src):
            item_node = items[index] if index < len(items) else None
            here = _path(done + (index,))
            if item_node is not None:
                locations[here] = (_line(item_node), _column(item_node))
            if ends:
                dst[index] = item
            if not deeper:
                continue
            if dst[index] is None:
                dst[index] = {} if isinstance(item, dict) else ([None] * len(item) if isinstance(item, list) else item)
            if isinstance(item, (dict, list)):
                # an item copied whole is walked only for the positions of the deeper steps
                _take(item, _scratch(item) if ends else dst[index], item_node, deeper, here, locations)
        return
    if not isinstance(src, dict):
        return
    places = _keys(node, src, tree) if node is not None else {}
    for part, (ends, deeper) in tree.items():
        if part == "*" or part not in src:
            continue
        value = src[part]
        here = _path(done + (part,))
        found = places.get(part)
        value_node = None
        if found is not None:
            locations[here] = found[0]
            value_node = found[1]
        if ends:
            dst[part] = value
            if deeper and isinstance(value, (dict, list)):
                _take(value, _scratch(value), value_node, deeper, here, locations)
        elif isinstance(value, dict):
            _take(value, dst.setdefault(part, {}), value_node, deeper, here, locations)
        elif isinstance(value, list):
            existing = dst.get(part)
            if not isinstance(existing, list):
                existing = dst[part] = [None] * len(value)
            _take(value, existing, value_node, deeper, here, locations)
        else:
            dst[part] = value


def _column(node: Where) -> int:
    """The 1-based column a node starts at."""
    return node.column if isinstance(node, Spot) else node.start_mark.column + 1


# Every object records the same few paths: one tuple each, shared, so that results pickled by a
# worker (see engine._analyse_loaded) write each path once per task, and memory holds it once.
_PATHS: dict[FieldPath, FieldPath] = {}
_PATHS_MAX = 20_000


def _path(path: FieldPath) -> FieldPath:
    shared = _PATHS.get(path)
    if shared is not None:
        return shared
    if len(_PATHS) < _PATHS_MAX:
        _PATHS[path] = path
    return path


def _scratch(value: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
    return {} if isinstance(value, dict) else [None] * len(value)


def locate_in_record(record: ObjectRecord, path: FieldPath) -> tuple[int, int]:
    """Position of a set rule's field path: the deepest recorded step of it."""
    for length in range(len(path), 0, -1):
        found = record.locations.get(tuple(path[:length]))
        if found:
            return found
    first = next(iter(record.locations.values()), None)
    return first if first else (int(record.origin.rsplit(":", 1)[1]), 1)
