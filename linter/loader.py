"""Bytes to documents: YAML/JSON text -> node trees (for positions) and plain data.

Uses PyYAML's C composer for speed and converts nodes to plain Python data itself,
so that duplicate keys, alias bombs and absurd nesting become findings, not crashes.

Limits (each a FW005 finding where it is crossed, and parsing of that file stops there):
MAX_DEPTH levels of nesting (recent PyYAML builds stop at 1,000 levels themselves: that error
is FW005 too, so every PyYAML release reports the same finding); MAX_ALIAS_NODES nodes made by
aliases in one document; MAX_DOCUMENTS documents in one stream, empty ones included, so that a
file of `---` lines costs no more memory than its first MAX_DOCUMENTS documents.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ..policies.records import NamedTuple

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

MAX_DEPTH = 256
MAX_ALIAS_NODES = 100_000
MAX_DOCUMENTS = 10_000

_STR = "tag:yaml.org,2002:str"
_MAP = yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG
_SEQ = yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG
_MERGE = "tag:yaml.org,2002:merge"
_CONSTRUCT = {
    "tag:yaml.org,2002:int": yaml.constructor.SafeConstructor.construct_yaml_int,
    "tag:yaml.org,2002:float": yaml.constructor.SafeConstructor.construct_yaml_float,
    "tag:yaml.org,2002:bool": yaml.constructor.SafeConstructor.construct_yaml_bool,
}
_SCALARS = yaml.constructor.SafeConstructor()
# A line starting with 200 indents, dashes, `?` or `:`: the first line, or one after a newline (a
# search for "\n" first is several times faster than `^` with re.M, which is tried at every character).
# The first line's test is a str method, the rarely used patterns are compiled where they are used (re
# keeps them): compiling them at import was ~0.3 ms of a one-file lint (issue 23 row a).
_DEEP = " \t-?:"
_DEEP_BLOCK = re.compile(r"\n[ \t\-?:]{200}")
_BRACKETS = r"[\[\]{}]"
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_SAFE_OPENERS = 1_000  # libyaml's composer survives this much nesting even on a 1 MB stack
_PLAIN_TAGS: dict[str, str] = {}  # plain scalar text -> its resolved tag (see _Loader.resolve)
_PLAIN_TAGS_MAX = 100_000
_PLAIN_TAG_TEXT_MAX = 64


class _Loader(_BaseLoader):
    """libyaml's composer with PyYAML's safe tag resolution, memoised.

    The composer calls back into Python for every node: `resolve()` for its tag, and
    `descend_resolver()` / `ascend_resolver()` for path resolvers, which fieldwarden never
    registers. A plain scalar's tag depends on its text alone, and manifests repeat the
    same texts (keys, `true`, `80`, `RollingUpdate`) again and again: each is resolved
    once per process. About a fifth of the composing time.
    """

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type, value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode:  # without path resolvers, a collection's tag is the default one
            return _MAP if kind is MappingNode else _SEQ
        if not implicit[0]:  # quoted or explicitly tagged `!`: a string
            return _STR
        if value and value[0] not in _IMPLICIT_FIRST:  # no implicit resolver starts so: a string
            return _STR
        tag = _PLAIN_TAGS.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call,unused-ignore]
            if len(value) <= _PLAIN_TAG_TEXT_MAX and len(_PLAIN_TAGS) < _PLAIN_TAGS_MAX:
                _PLAIN_TAGS[value] = tag
        return tag


_IMPLICIT_FIRST = frozenset(_Loader.yaml_implicit_resolvers)  # first characters of ints, bools, nulls...


class InputProblem(NamedTuple):
    """A problem with the input itself, reported under an input rule code."""

    code: str
    line: int
    column: int
    message: str


class Document(NamedTuple):
    """One YAML document: its node tree, its data, and the lines it spans (1-based)."""

    index: int  # type: ignore[assignment]  # (shadows tuple.index, which nothing here calls)
    node: Node
    data: Any
    start_line: int
    end_line: int


class Loaded(NamedTuple):
    """What came out of one text."""

    documents: list[Document]
    problems: list[InputProblem]
    template_like: bool  # structure that only makes sense as a Go/Helm template


class _TooComplex(Exception):
    def __init__(self, message: str, node: Node) -> None:
        super().__init__(message)
        self.node = node


class _Builder:
    """Node tree -> plain data, counting what aliases expand to and noting duplicate keys."""

    __slots__ = ("seen", "in_alias", "alias_root", "aliased", "duplicates", "complex_keys")

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.in_alias = 0
        self.alias_root: Node | None = None
        self.aliased = 0
        self.duplicates: list[tuple[ScalarNode, ScalarNode]] = []
        self.complex_keys: list[Node] = []

    def build(self, node: Node, depth: int) -> Any:
        if node.__class__ is ScalarNode:
            if self.in_alias:
                self._count()
            if node.tag == _STR:
                return node.value
            return _scalar(node)
        if depth > MAX_DEPTH:
            raise _TooComplex(f"document nests deeper than {MAX_DEPTH} levels", node)
        aliased = id(node) in self.seen
        if aliased:
            if not self.in_alias:
                self.alias_root = node
            self.in_alias += 1
        else:
            self.seen.add(id(node))
        try:
            if self.in_alias:
                self._count()
            if node.__class__ is MappingNode:
                return self._mapping(node, depth)
            if self.in_alias:
                return [self.build(item, depth + 1) for item in node.value]
            return [  # (strings inlined, as in _mapping)
                item.value if item.__class__ is ScalarNode and item.tag == _STR else self.build(item, depth + 1)
                for item in node.value
            ]
        finally:
            if aliased:
                self.in_alias -= 1
                if not self.in_alias:
                    self.alias_root = None

    def plain(self, node: Node, depth: int) -> Any:
        """build() for a text without anchors (no `&`, so no aliases): no node is met twice.

        The same data and the same findings, in the same order, without the alias bookkeeping
        (a set of the node ids met, a count per node): about a third of build()'s time.
        """
        if node.__class__ is ScalarNode:
            return node.value if node.tag == _STR else _scalar(node)
        if depth > MAX_DEPTH:
            raise _TooComplex(f"document nests deeper than {MAX_DEPTH} levels", node)
        plain = self.plain
        if node.__class__ is not MappingNode:
            return [
                (item.value if item.tag == _STR else _scalar(item)) if item.__class__ is ScalarNode
                else plain(item, depth + 1)
                for item in node.value
            ]
        result: dict[str, Any] = {}
        merges: list[Node] | None = None
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode:
                self.complex_keys.append(key_node)
                continue
            if key_node.tag == _MERGE:
                if merges is None:
                    merges = []
                merges.append(value_node)
                continue
            key = key_node.value
            if key in result:
                self.duplicates.append((_previous_key(node, key_node), key_node))
            if value_node.__class__ is ScalarNode:
                result[key] = value_node.value if value_node.tag == _STR else _scalar(value_node)
            else:
                result[key] = plain(value_node, depth + 1)
        if merges is not None:
            for merge in merges:
                for source in merge.value if merge.__class__ is SequenceNode else [merge]:
                    merged = plain(source, depth + 1)
                    if isinstance(merged, dict):
                        for key, value in merged.items():
                            result.setdefault(key, value)
        return result

    def _count(self) -> None:
        self.aliased += 1
        if self.aliased > MAX_ALIAS_NODES:
            raise _TooComplex(
                f"aliases of the anchor defined here expand to more than {MAX_ALIAS_NODES:,} nodes (an alias bomb?)",
                self.alias_root or Node("", "", None, None),
            )

    def _mapping(self, node: MappingNode, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merges: list[Node] = []
        inline = not self.in_alias  # (a child's build() restores it before it returns)
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode:
                self.complex_keys.append(key_node)
                continue
            if key_node.tag == _MERGE:
                merges.append(value_node)
                continue
            key = key_node.value
            if key in result:  # (merged keys join only after the loop: here only this mapping's own keys)
                self.duplicates.append((_previous_key(node, key_node), key_node))
            if value_node.__class__ is ScalarNode and inline:  # build()'s scalar case, inlined
                result[key] = value_node.value if value_node.tag == _STR else _scalar(value_node)
            else:
                result[key] = self.build(value_node, depth + 1)
        for merge in merges:
            sources = merge.value if merge.__class__ is SequenceNode else [merge]
            for source in sources:
                merged = self.build(source, depth + 1)
                if isinstance(merged, dict):
                    for key, value in merged.items():
                        result.setdefault(key, value)
        return result


def _previous_key(node: MappingNode, key_node: ScalarNode) -> ScalarNode:
    """The key before `key_node` in `node` that it repeats (a duplicate key: rare, so looked up then)."""
    previous = key_node
    for other, _ in node.value:
        if other is key_node:
            break
        if other.__class__ is ScalarNode and other.tag != _MERGE and other.value == key_node.value:
            previous = other
    return previous


def _scalar(node: ScalarNode) -> Any:
    construct = _CONSTRUCT.get(node.tag)
    if construct is not None:
        try:
            return construct(_SCALARS, node)
        except (ValueError, yaml.YAMLError):
            return node.value
    if node.tag == "tag:yaml.org,2002:null":
        return None
    # Timestamps, binary and application tags stay text, as Kubernetes' YAML-to-JSON does.
    return node.value


def deep_first_line(text: str) -> bool:
    """Whether the first 200 characters are all indents, dashes, `?` or `:` (what `[ \\t\\-?:]{200}` matches)."""
    return len(text) >= 200 and not text[:200].strip(_DEEP)


def _nesting_depth_exceeds(text: str, limit: int) -> tuple[int, int] | None:
    """Where (1-based line, column) `text` nests deeper than `limit`; None when it does not.

    Cheap textual screen, then an exact event count: libyaml's composer recurses in C.
    """
    suspicious = deep_first_line(text) or _DEEP_BLOCK.search(text) is not None
    openers = text.count("[") + text.count("{")
    if not suspicious and openers > limit:
        suspicious = _bracket_depth_exceeds(text, limit) is not None
        if not suspicious and openers > _SAFE_OPENERS:
            # Closers inside strings or comments fool the count (`"]]]"`, then `[[[`) and
            # this many openers could overflow the C stack: trust only exact lexing.
            import json  # rare: only here, so that startup does without it

            try:
                json.loads(text)
            except (ValueError, RecursionError):
                suspicious = True  # not JSON (or absurdly deep): the parser's events decide
            else:  # valid JSON: with its strings blanked out, brackets are the structure
                return _bracket_depth_exceeds(re.compile(_JSON_STRING).sub(_blank, text), limit)
    if not suspicious:
        return None
    return _event_depth_exceeds(text, limit)


_OPENS = frozenset({yaml.MappingStartEvent, yaml.SequenceStartEvent})
_CLOSES = frozenset({yaml.MappingEndEvent, yaml.SequenceEndEvent})


def _event_depth_exceeds(text: str, limit: int) -> tuple[int, int] | None:
    """The exact count: the parser's collection events (libyaml's parser keeps its own stack, no C recursion).

    A loop over `get_event()` with the events' classes looked up in sets, not `yaml.parse()`'s
    generator with two `isinstance` checks per event (kubeflow's four CRD-heavy files: ~12% less CPU;
    creating the event objects is most of the rest).
    """
    depth = 0
    loader = _Loader(text)
    get_event = loader.get_event
    try:
        while True:
            event = get_event()
            if event is None:  # after the stream's end
                return None
            kind = event.__class__
            if kind in _OPENS:
                depth += 1
                if depth > limit:
                    return _position(event.start_mark)
            elif kind in _CLOSES:
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        if _is_nesting_error(exc):  # PyYAML's own limit, met while it looked ahead
            return _position(exc.problem_mark or exc.context_mark)
        return None  # the composer will report the syntax error itself
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _is_nesting_error(exc: yaml.MarkedYAMLError) -> bool:
    """PyYAML's own nesting limit (libyaml 0.2.5 and later, as in PyYAML 6.0.4's wheels)."""
    return "maximum nesting depth" in (exc.problem or "")


def _position(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _bracket_depth_exceeds(text: str, limit: int) -> tuple[int, int] | None:
    depth = 0
    for match in re.compile(_BRACKETS).finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                offset = match.start()
                return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)
        elif depth:
            depth -= 1
    return None


def _blank(match: re.Match[str]) -> str:
    """A JSON string as a string of as many characters without brackets (positions stay)."""
    return '"' + " " * (len(match.group()) - 2) + '"'


def decode(data: bytes) -> tuple[str | None, InputProblem | None]:
    """Bytes to text: UTF-8 (with or without BOM) or UTF-16/32 with a BOM, nothing else."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        encoding = "utf-32" if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")) else "utf-16"
        try:
            return data.decode(encoding), None
        except UnicodeDecodeError as exc:
            return None, InputProblem("FW004", 1, 1, f"not valid {encoding.upper()}: {exc.reason}")
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        return None, InputProblem("FW004", line, 1, "binary file (contains NUL bytes), not YAML")
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # (the utf-8-sig codec would cost an import)
    try:
        return data[bom:].decode("utf-8"), None
    except UnicodeDecodeError as exc:
        start = exc.start + bom
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        return None, InputProblem(
            "FW004", line, column, f"not valid UTF-8 (byte 0x{data[start]:02x}); save the file as UTF-8"
        )


def load(text: str, max_documents: int = MAX_DOCUMENTS) -> Loaded:
    """Parse every document of a YAML (or JSON) stream; problems instead of exceptions.

    At most `max_documents` documents are read: one more is a FW005 where it starts.
    """
    problems: list[InputProblem] = []
    documents: list[Document] = []
    deep = _nesting_depth_exceeds(text, MAX_DEPTH)
    if deep is not None:
        return Loaded([], [InputProblem("FW005", *deep, f"document nests deeper than {MAX_DEPTH} levels")], False)
    template_like = False
    anchors = "&" in text  # without one, no node is met twice: the builder skips the alias bookkeeping
    loader = _Loader(text)
    try:
        index = 0
        while True:
            if index == max_documents:  # (the next event: the start of one more document, or the end)
                event = loader.peek_event()
                if event is not None and not isinstance(event, yaml.StreamEndEvent):
                    problems.append(InputProblem(
                        "FW005", *_position(event.start_mark),
                        f"more than {max_documents:,} documents in one file (empty ones count): the rest is not read"))
                break
            if not loader.check_node():
                break
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            builder = _Builder()
            try:
                data = builder.build(node, 0) if anchors else builder.plain(node, 0)
            except _TooComplex as exc:
                mark = exc.node.start_mark or node.start_mark
                problems.append(InputProblem("FW005", mark.line + 1, mark.column + 1, str(exc)))
                data = None
            except RecursionError:
                mark = node.start_mark
                problems.append(InputProblem("FW005", mark.line + 1, mark.column + 1, "document nests too deeply"))
                data = None
            for first, again in builder.duplicates:
                problems.append(
                    InputProblem(
                        "FW002",
                        again.start_mark.line + 1,
                        again.start_mark.column + 1,
                        f'duplicate key "{again.value}" (first at line {first.start_mark.line + 1}); '
                        "Kubernetes rejects the manifest",
                    )
                )
            if builder.complex_keys:
                template_like = True
            end = node.end_mark
            end_line = end.line if end.column == 0 and end.line > node.start_mark.line else end.line + 1
            documents.append(Document(index, node, data, node.start_mark.line + 1, end_line))
            index += 1
    except yaml.MarkedYAMLError as exc:
        line, column = _position(exc.problem_mark or exc.context_mark)
        if _is_nesting_error(exc):  # PyYAML's own limit (the screen above normally stops first)
            problems.append(InputProblem("FW005", line, column, f"document nests deeper than {MAX_DEPTH} levels"))
        else:
            problems.append(InputProblem("FW001", line, column, _syntax_message(exc)))
    except yaml.YAMLError as exc:
        problems.append(InputProblem("FW001", 1, 1, str(exc).replace("\n", " ")))
    finally:
        loader.dispose()
    return Loaded(documents, problems, template_like)


_MANIFEST_KEY = r"""\b(apiVersion|kind)["']?\s*:"""  # (compiled when used: rarely)


def json_non_manifest(name: str, text: str) -> bool:
    """A `.json` file whose text does not look like a Kubernetes object: its input problems are not reported.

    JSON with comments (`.devcontainer/devcontainer.json`, `tsconfig.json`), JSON lines and
    JSON with repeated keys are no Kubernetes manifests: a file that parses and is not an
    object is ignored quietly, so one that does not parse is too, unless its text has both an
    `apiVersion` and a `kind` key (a broken manifest keeps its FW001). YAML files keep theirs.
    """
    return name.lower().endswith(".json") and set(re.compile(_MANIFEST_KEY).findall(text)) != {"apiVersion", "kind"}


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    parts = [exc.context or "", exc.problem or ""]
    return "YAML syntax error: " + " ".join(p for p in parts if p).strip()


def locate(root: Node, path: tuple[str | int, ...]) -> tuple[int, int]:
    """1-based (line, column) of the field at `path`: its key, or its nearest present parent."""
    node: Node = root
    mark = root.start_mark
    for part in path:
        found: Node | None = None
        if node.__class__ is MappingNode:
            wanted = str(part)
            found_key: Node | None = None
            for key_node, value_node in node.value:
                if key_node.__class__ is ScalarNode and key_node.value == wanted:
                    found_key, found = key_node, value_node
            if found_key is None:
                found_key, found = _find_merged(node, wanted)
            if found_key is not None:
                mark = found_key.start_mark
        elif node.__class__ is SequenceNode and isinstance(part, int) and 0 <= part < len(node.value):
            found = node.value[part]
            mark = found.start_mark
        if found is None:
            break
        node = found
    return mark.line + 1, mark.column + 1


def _find_merged(node: MappingNode, wanted: str) -> tuple[Node | None, Node | None]:
    for key_node, value_node in node.value:
        if key_node.__class__ is ScalarNode and key_node.tag == _MERGE:
            sources = value_node.value if value_node.__class__ is SequenceNode else [value_node]
            for source in sources:
                if source.__class__ is MappingNode:
                    for inner_key, inner_value in source.value:
                        if inner_key.__class__ is ScalarNode and inner_key.value == wanted:
                            return inner_key, inner_value
    return None, None
