"""In-place removal of fields from YAML/JSON manifests for ``fieldwarden lint --fix``.

:func:`remove_fields_from_bytes` is what the CLI calls, for a file or for stdin.

:func:`remove_fields` deletes mapping entries (e.g. ``status`` or
``metadata.managedFields`` of an exported live object) by cutting text spans
computed from PyYAML node marks (line/column; libyaml's ``index`` skips a BOM)
out of the original text. Nothing is re-serialised, so comments, quoting,
indentation, CRLF line endings and a leading UTF-8 BOM of everything that is
kept stay byte for byte. In block mappings the key's whole lines go, through
the value's last line and any following comment lines indented deeper than
the key; in flow mappings/JSON the entry goes with exactly one adjacent comma
(whole lines when the entry has lines of its own).

Documents are numbered as ``yaml.compose_all(text, Loader=yaml.CSafeLoader)``
yields them: every document of the stream, including explicitly empty ones
(``---`` directly followed by ``---`` yields a null document); an empty or
comment-only stream has none, and ``...`` markers add none.

Every result is re-parsed and compared with the original data minus the
requested fields; if anything else differs, :class:`FixError` is raised (e.g.
for a key that only exists through a ``<<`` merge). Edits are refused outright
for paths through anchored/aliased nodes, keys next to a merge key, values
whose end lies in an anchor/alias, duplicate keys, and paths that do not end
in a mapping key.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Collection, Mapping
from typing import Any

import yaml
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

FieldPath = tuple[str | int, ...]

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")  # YAML 1.1 line breaks, as libyaml counts lines
_FLOW_TAIL = re.compile(r"[ \t]*(,[ \t]*)?(#.*)?")
_BREAKS = "\r\n\x85\u2028\u2029"
_FINAL_BREAK = re.compile(r"(?:\r\n|[\r\n\x85\u2028\u2029])\Z")
_SPACE = re.compile(r"[ \t\r\n\x85\u2028\u2029]*")
_GAP = re.compile(r"(?:\s|#[^\r\n]*)*")
_Edit = tuple[int, int, str]  # (start, end, replacement)
_Chain = tuple[tuple[Node, int], ...]  # (container, entry/item index) from the root down


class FixError(Exception):
    """An edit cannot be made safely; the caller must leave the file untouched."""


class _Source:
    """Original text plus a line table mapping node marks to string offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        bom = 1 if text.startswith("\ufeff") else 0  # libyaml marks do not count the BOM
        self.starts = [bom] + [m.end() for m in _BREAK.finditer(text)]

    def off(self, mark: Mark) -> int:
        """Return the string offset of a node mark."""
        return int(self.starts[mark.line] + mark.column)

    def next_start(self, line: int) -> int:
        """Return the offset just after the line break ending ``line``."""
        return self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)

    def line(self, line: int) -> str:
        """Return the text of ``line`` without its line break."""
        return _BREAK.sub("", self.text[self.starts[line]:self.next_start(line)])

    def line_end(self, line: int) -> int:
        """Return the offset of the line break ending ``line`` (or of the end of the text)."""
        return self.starts[line] + len(self.line(line))


def remove_fields(text: str, removals: Mapping[int, Collection[FieldPath]]) -> str:
    """Return ``text`` with the given paths deleted from the given documents.

    ``removals`` maps a document index (see the module docstring) to paths;
    paths (and document indexes) that do not exist are ignored. A mapping
    emptied by the removals is deleted from its parent mapping too,
    recursively, but the document root and sequence items stay (as ``{}``).
    """
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError as exc:
        raise FixError(f"cannot parse the file: {exc}") from exc
    src = _Source(text)
    edits: list[_Edit] = []
    for index, paths in removals.items():
        if 0 <= index < len(docs):
            edits += _document_edits(src, docs[index], paths)
    new = _apply(text, edits)
    _verify(text, new, removals)
    return new


def remove_fields_from_bytes(data: bytes, removals: Mapping[int, Collection[FieldPath]]) -> bytes:
    """:func:`remove_fields` over a file's bytes (UTF-8; a leading BOM is kept).

    Raises :class:`FixError` for bytes that are not UTF-8.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FixError(f"not UTF-8: {exc}") from exc
    new = remove_fields(text, removals)
    if data.startswith(b"\xef\xbb\xbf") and not new.startswith("\ufeff"):
        new = "\ufeff" + new
    return new.encode("utf-8")


def unified_diff(name: str, old: bytes, new: bytes) -> str:
    """What ``--diff`` prints for one file: a unified diff from ``old`` to ``new``.

    Both sides are labelled ``name`` (as ruff does: ``patch -p0`` applies it). Lines are
    split at line feeds only, so a CRLF line keeps its carriage return; a last line without
    a line break gets the "No newline at end of file" marker that ``patch`` and ``git apply``
    expect.
    """
    import difflib

    def lines(data: bytes) -> list[str]:
        return re.findall(r"[^\n]*\n|[^\n]+\Z", data.decode("utf-8", "replace"))

    out = []
    for line in difflib.unified_diff(lines(old), lines(new), fromfile=name, tofile=name):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _shared(root: Node) -> set[int]:
    """Return ids of nodes reachable more than once (anchored and aliased)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            shared.add(id(node))
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            stack += [n for pair in node.value for n in pair]
        elif isinstance(node, SequenceNode):
            stack += node.value
    return shared


def _index(node: Node, seg: str | int) -> int | None:
    """Return the entry/item index of ``seg`` in ``node``, or None if absent."""
    if isinstance(node, MappingNode) and isinstance(seg, str):
        hits = [i for i, (k, _) in enumerate(node.value)
                if isinstance(k, ScalarNode) and k.tag == _STR and k.value == seg]
        if len(hits) > 1:
            raise FixError(f"duplicate key {seg!r}")
        if hits and any(k.tag == _MERGE for k, _ in node.value):
            raise FixError(f"key {seg!r} is in a mapping with a merge key (<<)")
        return hits[0] if hits else None  # a key only merged in makes _verify fail
    if isinstance(node, SequenceNode) and type(seg) is int and 0 <= seg < len(node.value):
        return seg
    return None


def _document_edits(src: _Source, root: Node, paths: Collection[FieldPath]) -> list[_Edit]:
    """Compute the text edits that delete ``paths`` from one document."""
    shared = _shared(root)
    records: dict[int, tuple[MappingNode, set[int], _Chain]] = {}  # id(mapping) -> entries to drop

    def add(node: Node, index: int, chain: _Chain) -> None:
        assert isinstance(node, MappingNode)
        records.setdefault(id(node), (node, set(), chain))[1].add(index)

    for path in paths:
        if not path or not isinstance(path[-1], str):
            raise FixError(f"path {path!r} does not end in a mapping key")
        node, chain = root, _Chain()
        for seg in path[:-1]:
            index = _index(node, seg)
            if index is None:
                break
            chain += ((node, index),)
            node = node.value[index][1] if isinstance(node, MappingNode) else node.value[index]
        else:
            index = _index(node, path[-1])
            if index is not None:
                if any(id(n) in shared for n in (node, *(c for c, _ in chain))):
                    raise FixError(f"path {path!r} goes through an anchor/alias")
                add(node, index, chain)
    for depth in range(max((len(r[2]) for r in records.values()), default=0), 0, -1):
        for node, removed, chain in [r for r in records.values() if len(r[2]) == depth]:
            if len(removed) == len(node.value) and isinstance(chain[-1][0], MappingNode):
                del records[id(node)]  # emptied: drop its key from the parent mapping instead
                add(chain[-1][0], chain[-1][1], chain[:-1])
    edits: list[_Edit] = []
    for node, removed, chain in records.values():
        if any(id(c) in records and i in records[id(c)][1] for c, i in chain):
            continue  # an ancestor entry is removed as a whole
        runs: list[list[int]] = []  # consecutive removed entries, edited together
        for i in sorted(removed):
            if runs and runs[-1][1] == i - 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        make = _flow_edits if node.flow_style else _block_edits
        edits += make(src, node, runs, shared)
    return edits


def _end(node: Node, shared: set[int]) -> Mark:
    """Return the end mark of the last character belonging to ``node``."""
    if id(node) in shared:
        raise FixError("cannot locate the end of a value that is an anchor or alias")
    if isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        return _end(last[1] if isinstance(node, MappingNode) else last, shared)
    return node.end_mark  # block collections' own end marks lie past trailing comments


def _block_edits(src: _Source, node: MappingNode, runs: list[list[int]], shared: set[int]) -> list[_Edit]:
    """Edits removing runs of entries of a block mapping, as whole lines."""
    edits: list[_Edit] = []
    for i, j in runs:
        key = node.value[i][0].start_mark
        ks, col = src.off(key), key.column
        end = _end(node.value[j][1], shared)
        last = end.line - 1 if end.column == 0 and end.line > key.line else end.line
        for k in range(last + 1, len(src.starts)):  # comment lines still inside the value
            line = src.line(k)
            body = line.lstrip(" \t")
            if body.startswith("#") and len(line) - len(body) > col:
                last = k
            elif body:
                break
        b = src.next_start(last)
        ls = src.starts[key.line]
        brk = src.text[src.line_end(last):b]
        if i == 0 and j == len(node.value) - 1:  # emptied root or sequence item
            edits.append((ks, b, "{}" + brk))
        elif src.text[ls:ks].strip(" \t"):
            if i != 0:
                raise FixError(f"unexpected text before the key on line {key.line + 1}")
            m = _SPACE.match(src.text, b)  # "- status: x\n  a: 1" -> "- a: 1"
            edits.append((ks, m.end() if m else b, ""))
        else:
            edits.append((ls, b, ""))
    return edits


def _flow_edits(src: _Source, node: MappingNode, runs: list[list[int]], shared: set[int]) -> list[_Edit]:
    """Edits removing runs of entries of a flow mapping (or JSON object) plus one comma."""
    edits: list[_Edit] = []
    pairs = node.value
    for i, j in runs:
        key = pairs[i][0].start_mark
        ks, ls = src.off(key), src.starts[key.line]
        end = _end(pairs[j][1], shared)
        ve = src.off(end)
        tail = src.text[ve:src.line_end(end.line)]
        tail_match = _FLOW_TAIL.fullmatch(tail)
        if not src.text[ls:ks].strip(" \t") and tail_match:  # entry on lines of its own
            edits.append((ls, src.next_start(end.line), ""))
            if j == len(pairs) - 1 and i > 0 and not tail_match.group(1):
                comma = _comma_after(src.text, src.off(_end(pairs[i - 1][1], shared)))
                edits.append((comma, comma + 1, ""))
        elif j < len(pairs) - 1:
            edits.append((ks, src.off(pairs[j + 1][0].start_mark), ""))
        elif i > 0:
            edits.append((src.off(_end(pairs[i - 1][1], shared)), ve, ""))
        else:
            edits.append((ks, ve, ""))
    return edits


def _comma_after(text: str, pos: int) -> int:
    """Return the offset of the comma following a flow entry that ends at ``pos``."""
    m = _GAP.match(text, pos)
    pos = m.end() if m else pos
    if text[pos:pos + 1] != ",":
        raise FixError("cannot find the comma after a flow mapping entry")
    return pos


def _apply(text: str, edits: list[_Edit]) -> str:
    """Apply non-overlapping edits (overlapping deletions are merged)."""
    merged: list[list[Any]] = []
    for start, end, repl in sorted(edits):
        if merged and start < merged[-1][1]:
            if repl or merged[-1][2]:
                raise FixError("overlapping edits")
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, repl])
    out, pos = [], 0
    for start, end, repl in merged:
        out += [text[pos:start], repl]
        pos = end
    new = "".join(out) + text[pos:]
    if merged and merged[-1][1] == len(text) and text and text[-1] not in _BREAKS:
        new = _FINAL_BREAK.sub("", new)  # the file had no final newline: keep it that way
    return new


def _delete(doc: Any, path: FieldPath) -> None:
    """Delete ``path`` from loaded data, pruning mappings it empties (the reference result)."""
    chain = [doc]
    for seg in path[:-1]:
        cur = chain[-1]
        if isinstance(cur, dict) and isinstance(seg, str) and seg in cur:
            chain.append(cur[seg])
        elif isinstance(cur, list) and type(seg) is int and 0 <= seg < len(cur):
            chain.append(cur[seg])
        else:
            return
    if not isinstance(chain[-1], dict) or path[-1] not in chain[-1]:
        return
    del chain[-1][path[-1]]
    for k in range(len(chain) - 1, 0, -1):
        if chain[k] or not isinstance(chain[k], dict) or not isinstance(chain[k - 1], dict):
            break
        del chain[k - 1][path[k - 1]]


def _same(a: Any, b: Any) -> bool:
    """Compare loaded data strictly: equal values of identical types (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b or (a != a and b != b))


def _verify(old: str, new: str, removals: Mapping[int, Collection[FieldPath]]) -> None:
    """Raise FixError unless ``new`` loads as ``old`` minus exactly the removals."""
    try:
        expected = copy.deepcopy(list(yaml.load_all(old, Loader=yaml.CSafeLoader)))
        actual = list(yaml.load_all(new, Loader=yaml.CSafeLoader))
    except yaml.YAMLError as exc:
        raise FixError(f"the edited text does not parse: {exc}") from exc
    for index, paths in removals.items():
        for path in paths:
            if 0 <= index < len(expected):
                _delete(expected[index], path)
    if not _same(actual, expected):
        raise FixError("the edited text does not load as the original minus the removed fields")
