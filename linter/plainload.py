"""Plain YAML read by the compiled reader (_plainyaml.c): data, and where each key and item stands.

A plain manifest (no anchors, aliases, tags, merge keys, duplicate or complex keys, no syntax error,
nesting and documents within loader.py's limits) is read to exactly the data loader.load() makes,
without the node tree: positions come from a flat table instead (a Spot points into it). Anything
else, or an interpreter the reader was not built for, gets None and goes through loader.load().
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ..policies.records import NamedTuple

import yaml
from yaml.nodes import ScalarNode

from .loader import _IMPLICIT_FIRST, _STR, MAX_DEPTH, MAX_DOCUMENTS, _scalar

try:
    from . import _plainyaml  # type: ignore[attr-defined]
except ImportError:  # not built (no compiler or no libyaml headers where it was installed)
    _plainyaml = None
if not getattr(yaml, "__with_libyaml__", False):
    _plainyaml = None  # the full loader is PyYAML's Python parser then: the reader answers as libyaml does

_RESOLVER = yaml.resolver.Resolver()  # the implicit resolvers of the full loader's CSafeLoader
_IMPLICIT = "".join(sorted(first for first in _IMPLICIT_FIRST if first))
_VALUES: dict[str, Any] = {}  # plain text -> its value; the reader bounds it (count and text length)


def available() -> bool:
    """Whether the compiled reader is there."""
    return _plainyaml is not None


class Spot:
    """A node's place in a text's position table: its own start, and where its keys' or items' entries begin."""

    __slots__ = ("cells", "first", "line", "column")

    def __init__(self, cells: memoryview, first: int, line: int, column: int) -> None:
        self.cells = cells
        self.first = first  # the entry of its first key or item
        self.line = line  # 1-based
        self.column = column

    def keys(self, mapping: dict[str, Any], wanted: Any) -> dict[str, tuple[tuple[int, int], Spot | None]]:
        """The keys of `mapping` (the data this spot's node made) that are in `wanted`: each key's
        position and its value's spot (None for a scalar: nothing is below it). A mapping's data keeps
        its keys in the text's order."""
        cells = self.cells
        entry = self.first
        found: dict[str, tuple[tuple[int, int], Spot | None]] = {}
        for key in mapping:
            at = 3 * entry
            if key in wanted:
                position = (cells[at] + 1, cells[at + 1] + 1)
                found[key] = (position, Spot(cells, entry + 1, *position) if cells[at + 2] else None)
            entry += 1 + cells[at + 2]
        return found

    def items(self, count: int) -> list[Spot]:
        """The spots of a sequence's `count` items (its start is each item's position)."""
        cells = self.cells
        entry = self.first
        spots = []
        for _ in range(count):
            at = 3 * entry
            spots.append(Spot(cells, entry + 1, cells[at] + 1, cells[at + 1] + 1))
            entry += 1 + cells[at + 2]
        return spots

    def locate(self, data: Any, path: tuple[str | int, ...]) -> tuple[int, int]:
        """1-based (line, column) of the field at `path` of `data` (this spot's node): its key,
        or its nearest present parent; what loader.locate() answers on the node tree."""
        cells = self.cells
        entry = self.first
        line, column = self.line, self.column
        for part in path:
            if isinstance(data, dict):
                wanted = str(part)
                if wanted not in data:
                    break
                for key in data:
                    if key == wanted:
                        break
                    entry += 1 + cells[3 * entry + 2]
                data = data[wanted]
            elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
                for _ in range(part):
                    entry += 1 + cells[3 * entry + 2]
                data = data[part]
            else:
                break
            line, column = cells[3 * entry] + 1, cells[3 * entry + 1] + 1
            entry += 1
        return line, column


def project(obj: Any, spot: Spot, tree: Any, locations: dict[Any, tuple[int, int]], paths: dict[Any, Any],
            paths_max: int) -> dict[str, Any] | None:
    """analyse._project() of data this module read, in C: the fields of `obj` that `tree` names, their
    positions added to `locations` (each path shared through `paths` while it holds fewer than `paths_max`).
    None where it cannot (the table does not fit the data, say): `locations` is left empty then."""
    assert _plainyaml is not None  # (a Spot exists only where the reader does)
    try:
        projected: dict[str, Any] = _plainyaml.project(obj, spot.cells, spot.first, tree, locations, paths, paths_max)
    except ValueError:
        locations.clear()
        return None
    return projected


class PlainDocument(NamedTuple):
    """One document read by the compiled reader: its spot, its data and the lines it spans (1-based)."""

    index: int  # type: ignore[assignment]  # (shadows tuple.index, which nothing here calls)
    node: Spot
    data: Any
    start_line: int
    end_line: int


def _plain_value(text: str) -> Any:
    """A plain scalar's value, as the full loader makes it (loader._Loader.resolve, then _scalar)."""
    tag = _RESOLVER.resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return text if tag == _STR else _scalar(ScalarNode(tag, text))


def load_plain(text: str) -> list[PlainDocument] | None:
    """The documents of a plain text; None where loader.load() must read it (see the module's docstring)."""
    if _plainyaml is None:
        return None
    read = _plainyaml.load(text, _plain_value, _VALUES, _IMPLICIT, MAX_DEPTH, MAX_DOCUMENTS)
    if read is None:
        return None
    documents, table = read
    cells = memoryview(table).cast("I")
    found = []
    for index, (data, first, line, column, end_line, end_column) in enumerate(documents):
        last = end_line if end_column == 0 and end_line > line else end_line + 1
        found.append(PlainDocument(index, Spot(cells, first, line + 1, column + 1), data, line + 1, last))
    return found
