"""Values written inline in a GitOps object, read with the places they are written at.

A Flux HelmRelease's `spec.values` and an Argo CD Application's `helm.valuesObject` are
mappings inside the object: Helm gets them as JSON (what the API server stores of them), and
each value is placed on its own line of the GitOps file. An Application's `helm.values` is a
YAML text in a string, which Helm gets as it is: a literal block (`values: |`) keeps its lines
as written, so each value is placed on its line of the file (the text's own line, moved down
below the `|` and right by the block's indentation, after checking that every line of the text
is that line of the file); any other string (folded, quoted, or a block that fails the check)
places every value on the `values:` key, marked approximate.

Pure: the GitOps file's text in, the values out (helm.py reads the file).
"""

from __future__ import annotations

import json
from typing import Any, Iterator, NamedTuple

from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..loader import load
from .rendered import Place, RenderProblem
from .plan import InlineValues


class Inline(NamedTuple):
    """Inline values, ready to layer over a chart's values files."""

    file: str  # the GitOps file (project-relative)
    text: str  # what Helm reads
    node: MappingNode | None  # the values, their marks lines and columns of `file` (None: no values)
    approximate: Place | None  # where every value is placed when their own lines are not known


def parse(text: str, ref: InlineValues) -> tuple[Inline | None, RenderProblem | None]:
    """The inline values `ref` names in the GitOps file's `text`, or the problem that keeps them from Helm."""
    file, index, path = ref
    loaded = load(text)
    broken = next((p for p in loaded.problems if p.code in ("FW001", "FW005")), None)
    if broken is not None:
        return None, RenderProblem(file, broken.line, broken.column, broken.message)
    if index >= len(loaded.documents):
        return None, RenderProblem(file, 1, 1, "the inline values are no longer in this file")
    found = _walk(loaded.documents[index].node, loaded.documents[index].data, path)
    if found is None:
        return None, RenderProblem(file, 1, 1, f"the inline values ({'.'.join(map(str, path))}) are no longer in this file")
    key, node, data = found
    at: Place = (file, key.start_mark.line + 1, key.start_mark.column + 1)
    if isinstance(node, ScalarNode) and isinstance(data, str):
        return _from_text(file, text, key, node, data, at)
    if data is None:
        return Inline(file, "", None, None), None
    if not isinstance(node, MappingNode) or not isinstance(data, dict):
        return None, RenderProblem(*at, "inline values must be a mapping of keys to values")
    try:
        as_json = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return None, RenderProblem(*at, f"inline values Helm cannot read: {exc}")
    return Inline(file, as_json, node, None), None


def place_of(text: str, ref: InlineValues) -> tuple[int, int] | None:
    """(line, column) of what `ref` names in the GitOps file's `text`: a key, a list entry, or the
    object itself (its path in the document); None when it is not there (or the file does not load)."""
    _, index, path = ref
    loaded = load(text)
    if index >= len(loaded.documents):
        return None
    found = _walk(loaded.documents[index].node, loaded.documents[index].data, path)
    if found is None:
        return None
    return found[0].start_mark.line + 1, found[0].start_mark.column + 1


def _walk(node: Node, data: Any, path: tuple[str | int, ...]) -> tuple[Node, Node, Any] | None:
    """(the key node of the path's last step, its value node, its value), or None when it is not there."""
    key: Node = node
    for part in path:
        if isinstance(node, MappingNode) and isinstance(data, dict) and isinstance(part, str):
            hit = next(((k, v) for k, v in reversed(node.value) if isinstance(k, ScalarNode) and k.value == part), None)
            if hit is None or part not in data:
                return None
            (key, node), data = hit, data[part]
        elif isinstance(node, SequenceNode) and isinstance(data, list) and isinstance(part, int) \
                and 0 <= part < min(len(node.value), len(data)):
            node, data = node.value[part], data[part]
            key = node
        else:
            return None
    return key, node, data


def _from_text(file: str, source: str, key: Node, node: ScalarNode, text: str,
               at: Place) -> tuple[Inline | None, RenderProblem | None]:
    """`helm.values`: a YAML text inside a string of the GitOps file."""
    loaded = load(text)
    shift = _literal_shift(source, node, text)
    broken = next((p for p in loaded.problems if p.code in ("FW001", "FW005")), None)
    if broken is not None:
        line, column = (broken.line + shift[0], broken.column + shift[1]) if shift else at[1:]
        return None, RenderProblem(file, line, column, f"Helm cannot read these values: {broken.message}")
    values = loaded.documents[0] if loaded.documents else None
    if values is None or values.data is None:
        return Inline(file, text, None, None), None
    if not isinstance(values.node, MappingNode):
        return None, RenderProblem(*at, "inline values must be a mapping of keys to values")
    for each in _nodes(values.node):
        if shift is None:
            each.start_mark = key.start_mark
        else:
            mark = each.start_mark
            each.start_mark = Mark(file, -1, mark.line + shift[0], mark.column + shift[1], None, 0)
    return Inline(file, text, values.node, None if shift else at), None


def _literal_shift(source: str, node: ScalarNode, text: str) -> tuple[int, int] | None:
    """(lines, columns) from the text's places to the file's, for a literal block whose every line
    is the file's line below its `|`, indented alike; None when not so."""
    if node.style != "|":
        return None
    lines = source.splitlines()
    first = node.start_mark.line + 1  # the block's first line (0-based) in the file
    content = [line for line in text.split("\n")]
    if content and content[-1] == "":
        content.pop()  # the final line break
    written = [line for line in lines[first:first + len(content)] if line.strip()]
    if len(lines) < first + len(content) or not written:
        return None
    indent = min(len(line) - len(line.lstrip(" ")) for line in written)
    for offset, line in enumerate(content):
        in_file = lines[first + offset]
        if (in_file[indent:] if line else in_file.strip()) != line:
            return None
    return first, indent


def _nodes(node: Node) -> Iterator[Node]:
    """Every node below and including `node` (keys too), each once."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, MappingNode):
            for k, v in current.value:
                stack.extend((k, v))
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)
