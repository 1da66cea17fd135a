"""What a renderer (kustomize, Helm) hands the linter: objects, and where the user wrote them.

A rendered object is linted like any other, but a finding on it is reported where the user
edits: `positions` maps field paths of the rendered object to the place in a project file
that sets them (a resource, a patch, a template line); a path that is not in the table is
reported at its nearest enclosing path that is, and failing that at `anchor`, the object's
own start in its source, and the finding then says the place is approximate; so does one on a
path of `approximate` (placed on a line that holds it, not on its own: an inline values text
whose lines cannot be told apart, say).

Everything here is plain data (strings, ints, tuples, dicts): renders are cached by the
content of their inputs and must survive the trip through the cache unchanged.
"""

from __future__ import annotations

from typing import NamedTuple

from .not_linted import NotLinted

FieldPath = tuple[str | int, ...]
Place = tuple[str, int, int]  # (project-relative file, 1-based line, 1-based column)


class RenderedObject(NamedTuple):
    """One object of a render."""

    text: str  # the object as one YAML document, with the renderer's own bookkeeping removed
    positions: dict[FieldPath, Place]  # rendered field path -> where the user sets it
    anchor: Place  # where the object starts in its source (the fallback for unmapped paths)
    approximate: frozenset[FieldPath] = frozenset()  # paths of `positions` placed near, not on, their line


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


def locate(obj: RenderedObject, path: FieldPath) -> tuple[Place, bool]:
    """Where a finding on `path` of the rendered object goes, and whether that place is exact."""
    for length in range(len(path), -1, -1):
        place = obj.positions.get(path[:length])
        if place is not None:
            return place, length == len(path) and path not in obj.approximate
    return obj.anchor, False
