"""What a renderer (kustomize, Helm) hands the linter: objects, and where the user wrote them.

A rendered object is linted like any other, but a finding on it is reported where the user
edits: `positions` maps field paths of the rendered object to the place in a project file
that sets them (a resource, a patch, a template line); a path that is not in the table is
reported at its nearest enclosing path that is, and failing that at `anchor`, the object's
own start in its source, and the finding then says the place is approximate; so does one on a
path of `approximate` (placed on a line that holds it, not on its own: an inline values text
whose lines cannot be told apart, say).

Everything here is plain data (strings, ints, tuples, dicts): renders are cached by the
content of their inputs and must survive the trip through the cache unchanged. The one
exception, positions not yet worked out, goes through it as their recipe (render_cache.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

from .not_linted import NotLinted

if TYPE_CHECKING:
    from ..loader import Loaded

FieldPath = tuple[str | int, ...]
Place = tuple[str, int, int]  # (project-relative file, 1-based line, 1-based column)


class RenderedObject:
    """One object of a render.

    `positions` may be worked out on first use (kustomize.py: most objects have no finding, and
    placing every field of every object was most of a render's own cost): `place` then makes
    them, and until it has run `positions` holds the places of `settled` only (the paths under
    which an object's name is placed: what every object needs, see unitrun._origin); `recipe`
    is what kustomize.py needs to place the object again from its inputs (the render cache
    keeps it instead of the positions of an object never placed). `loaded` is `text` as the
    loader read it, when the renderer did (kustomize.py), handed to the linter once so that the
    text is not read again; never cached, not part of the object's value.
    """

    __slots__ = ("text", "anchor", "approximate", "recipe", "settled", "loaded", "_positions", "_place")

    def __init__(self, text: str, positions: dict[FieldPath, Place], anchor: Place,
                 approximate: frozenset[FieldPath] = frozenset(), *, place: Callable[[], dict[FieldPath, Place]] | None = None,
                 settled: frozenset[FieldPath] = frozenset(), recipe: Recipe | None = None,
                 loaded: Loaded | None = None) -> None:
        self.text = text  # the object as one YAML document, with the renderer's own bookkeeping removed
        self._positions = positions  # rendered field path -> where the user sets it
        self.anchor = anchor  # where the object starts in its source (the fallback for unmapped paths)
        self.approximate = approximate  # paths of `positions` placed near, not on, their line
        self._place = place
        self.settled = settled if place is not None else frozenset()
        self.recipe = recipe if place is not None else None
        self.loaded = loaded

    @property
    def positions(self) -> dict[FieldPath, Place]:
        place = self._place
        if place is not None:
            self._positions = place()
            self._place = None
            self.settled = frozenset()
            self.recipe = None
        return self._positions

    @property
    def table(self) -> dict[FieldPath, Place]:
        """`positions` as far as they are worked out (those of `settled` until `place` has run)."""
        return self._positions

    def defer(self, place: Callable[[], dict[FieldPath, Place]]) -> None:
        """Work the positions out with `place` when they are first asked for (a cached object's, see `recipe`)."""
        if self._place is not None:
            self._place = place

    def known(self, path: FieldPath) -> dict[FieldPath, Place]:
        """A table holding the final places of `path` and its parents, without placing the rest if it need not."""
        return self._positions if self._place is None or path in self.settled else self.positions

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RenderedObject):
            return NotImplemented
        return (self.text, self.positions, self.anchor, self.approximate) == (
            other.text, other.positions, other.anchor, other.approximate)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RenderedObject({self.text!r}, {self.positions!r}, {self.anchor!r}, {self.approximate!r})"


# What every rendered object's placement needs at once: where its name is written (unitrun._origin
# shows it in other objects' messages), that is its own place and its parents'; metadata.labels,
# whose place decides whether the labels a kustomization adds place `metadata` (kustomize.py's _labels);
# and its kind and apiVersion, where the schema rules' findings go (FW601, FW603: most of a chart's
# findings where its custom resources have no CRD at hand, each of which placed the whole object).
NAME_PATHS: frozenset[FieldPath] = frozenset({(), ("metadata",), ("metadata", "name"), ("metadata", "labels"),
                                              ("kind",), ("apiVersion",)})
Recipe = tuple[str, str, int]  # kustomize.py: an object's origin and transformations annotations, its ordinal among its file's


class RenderProblem(NamedTuple):
    """A render that failed or warned, placed on the file to fix (a kustomization, a template)."""

    file: str
    line: int
    column: int
    message: str


class Render(NamedTuple):
    """The outcome of rendering one unit."""

    objects: list[RenderedObject]
    inputs: list[str]  # project-relative files the render read: its cache key, and the unit's members
    problems: list[RenderProblem]
    not_linted: NotLinted | None = None  # set when the unit could not be rendered for a reason the repository need not fix (FW007)
    passing: bool = False  # stopped by a limit of this run (time, memory, output) or its renderer could not start: not cached


def locate(obj: RenderedObject, path: FieldPath) -> tuple[Place, bool]:
    """Where a finding on `path` of the rendered object goes, and whether that place is exact."""
    positions = obj.known(path)
    for length in range(len(path), -1, -1):
        place = positions.get(path[:length])
        if place is not None:
            return place, length == len(path) and path not in obj.approximate
    return obj.anchor, False
