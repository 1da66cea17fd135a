"""The render cache: a unit's render, kept until any file that fed it changes.

One file per render job in the project's cache folder (`render-<digest>.cache`), stored as
the context cache is (cache.py): marshal behind a keyed MAC, so a cache this user's
fieldwarden did not write is never believed. An entry holds the render and what it was made
from: the digest of every input file (or that it was absent), and for a chart the listing of
its folder (a new template is an input no render has read yet). A lookup hashes those files
again: one changed byte, a file appearing or going, a link re-pointed (each file's key holds
where it resolves to: the renderers refuse links out of the project or chart, and a cached
render must not outlive that), or another renderer makes it a miss, so an entry is never stale. What renders a unit is part of the key: the job (folder, values
files, namespace, release name, inline values), the tool (its path, size and time), fieldwarden's version and
the renderer's modules (for Helm, helm.SOURCES: the engine's driver and the line mapping).

Failed and empty renders are kept as well (their FW006/FW007 findings come back the same, and a
warm run re-renders nothing that did not change), under the same key; `lasting` leaves out what
another run may not repeat: a time or memory limit, a renderer that could not start, a render
with no inputs (its key would cover nothing).

Of the lint core it imports only ../cache.py (the cache folder, the digest and the MAC'd
read and write), the one module of units/ that does besides the readers of ../loader.py.
"""

from __future__ import annotations

import marshal
import os
from itertools import chain
from pathlib import Path
from typing import Any, Sequence

from ... import __version__
from ..cache import CACHE_DIR, digest, read_authentic, write_authentic
from .not_linted import NotLinted
from .rendered import NAME_PATHS, Recipe, Render, RenderedObject, RenderProblem
from .plan import RenderJob

FORMAT = 8  # 3: an input's key holds where it resolves to; 4: failed renders, with why not linted; 5: objects marshalled apart, paths by parent; 6: recipes of objects not placed; 7: of Helm's too, large objects kept apart; 8: kind and apiVersion placed with the names
SHARED = 64 << 10  # an object encoded larger than this is kept in a file of its own, shared by the entries that hold it
_PURPOSE = b"render-cache"


def entry_path(root: Path, job: RenderJob, tool: str) -> Path:
    """Where the render of this job by this tool is kept."""
    name = digest(repr((job, tool)).encode("utf-8", "surrogateescape")).hex()
    return root / CACHE_DIR / f"render-{name}.cache"


def file_digest(root: Path, path: str, folders: dict[str, str] | None = None) -> bytes | None:
    """The key of a project file, or None when it cannot be read (absent): its content and where
    it resolves to (relative to the project's real folder), so that a link re-pointed out of the
    project (or out of a chart) at the same text is a miss and the renderer refuses it again.

    `folders` keeps the real paths of folders for the digests of one moment (one render's inputs
    before or after it ran): each folder is resolved once, not once per file in it.
    """
    try:
        with open(root / path, "rb") as handle:
            content = handle.read()
        real = os.path.relpath(_real_path(root, path, {} if folders is None else folders), _real_folder(root, "", folders))
    except (OSError, ValueError):
        return None
    return digest(real.encode("utf-8", "surrogateescape") + b"\0" + content)


def _real_folder(root: Path, folder: str, folders: dict[str, str] | None) -> str:
    known = folders.get(folder) if folders is not None else None
    if known is None:
        known = os.path.realpath(root / folder if folder else root)
        if folders is not None:
            folders[folder] = known
    return known


def _real_path(root: Path, path: str, folders: dict[str, str]) -> str:
    """os.path.realpath(root / path), its folder resolved once per `folders` (the file itself may be a link)."""
    folder, _, name = path.replace(os.sep, "/").rpartition("/")
    if not name or name in (".", ".."):
        return os.path.realpath(root / path)
    joined = os.path.join(_real_folder(root, folder, folders), name)
    return os.path.realpath(joined) if os.path.islink(joined) else joined


def listing(root: Path, folder: str) -> list[str]:
    """Every file below a folder (project-relative, sorted), not following symlinked folders: each
    of those is listed as `link/ -> where it resolves` (a link appearing or re-pointed is a miss)."""
    base = root / folder if folder != "." else root
    real_root = os.path.realpath(root)
    found: list[str] = []
    for current, folders, files in os.walk(base):
        relative = os.path.relpath(current, root).replace(os.sep, "/")
        links = [f for f in folders if os.path.islink(os.path.join(current, f))]
        folders[:] = [f for f in folders if f not in links]
        found.extend(f if relative == "." else f"{relative}/{f}" for f in files)
        found.extend(f"{f if relative == '.' else f'{relative}/{f}'}/ -> "
                     f"{os.path.relpath(os.path.realpath(os.path.join(current, f)), real_root)}" for f in links)
    return sorted(found)


def load(root: Path, job: RenderJob, tool: str, watched: Sequence[str],
         known: dict[str, bytes | None] | None = None) -> Render | None:
    """The cached render of `job`, if every file it was made from is unchanged; else None.

    `watched` is the listing the render depended on (see `listing`), or () when none. `known`
    holds the digests this run took already (renders.py passes one per run: units share bases).
    """
    digests = {} if known is None else known
    folders: dict[str, str] = {}
    try:
        raw = marshal.loads(read_authentic(entry_path(root, job, tool), _PURPOSE))
        if type(raw) is not dict or raw.get("signature") != _signature(job, tool):
            return None
        if raw.get("listing") != digest("\0".join(watched).encode("utf-8", "surrogateescape")):
            return None
        inputs = raw.get("inputs")
        if type(inputs) is not list:
            return None
        for entry in inputs:
            if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not str:
                return None
            key = digests[entry[0]] if entry[0] in digests else digests.setdefault(entry[0], file_digest(root, entry[0], folders))
            if key != entry[1]:
                return None
        return _decode(raw.get("render"), root)
    except (OSError, ValueError, TypeError, EOFError, RecursionError, IndexError):
        return None


def snapshot(root: Path, paths: Sequence[str]) -> dict[str, bytes | None]:
    """Digests of files before a render reads them (see `save`)."""
    return {path: file_digest(root, path) for path in paths}


def save(root: Path, job: RenderJob, tool: str, watched: Sequence[str], render: Render,
         before: dict[str, bytes | None], after: dict[str, bytes | None] | None = None,
         encoded: Encoded | None = None) -> None:
    """Remember a render with the digests of the files it was made from.

    `before` holds digests taken before rendering: a file that changed while the render ran
    may have been read in either state, so then nothing is stored. `after`, digests taken
    since the render ended, is filled in and shared by the renders of one batch (a chart's
    value sets read the same files). `encoded`, shared the same way, holds the objects encoded
    so far: a chart's value sets render most objects alike (Helm's mapping hands them the same
    text and places), each encoded once.
    """
    after = {} if after is None else after
    folders: dict[str, str] = {}
    for path in render.inputs:
        if path not in after:
            after[path] = file_digest(root, path, folders)
    inputs = [[path, after[path]] for path in sorted(set(render.inputs))]
    if any(path in before and before[path] != key for path, key in inputs):
        return
    body = {
        "signature": _signature(job, tool),
        "listing": digest("\0".join(watched).encode("utf-8", "surrogateescape")),
        "inputs": inputs,
        "render": _encode(render, {} if encoded is None else encoded),
    }
    render_part = body["render"]
    assert isinstance(render_part, list)
    render_part[0] = [_shared(root, item) if len(item.data) > SHARED else item.data for item in render_part[0]]
    try:
        data = marshal.dumps(body)
    except (ValueError, TypeError, RecursionError):
        return
    entry = entry_path(root, job, tool)
    held = _names_held(entry)
    write_authentic(entry, data, _PURPOSE)
    _forget(root, held.difference(item for item in render_part[0] if type(item) is str))


def lasting(render: Render) -> bool:
    """Whether a render is worth keeping: it read some input, and nothing in it depends on the run.

    What another run may not repeat (a time budget, a memory limit, a renderer that could not start
    or died) is flagged by the renderer that met it (Render.passing), never read from the wording."""
    return not render.passing and bool(render.inputs)  # no inputs: a renderer that raised (renders.py's last line)


def _signature(job: RenderJob, tool: str) -> list[Any]:
    return [FORMAT, __version__, marshal.version, list(job[:2]), list(job.values), job.namespace, job.release,
            repr(job.inline), tool]


class _Encoded:
    """A rendered object encoded (held beside its bytes: the ids that key it stay its parts' meanwhile), and
    the name of its own file once `_shared` has named it (the digest of a CRD's bytes taken once, not per set)."""

    __slots__ = ("obj", "data", "name")

    def __init__(self, obj: RenderedObject, data: bytes) -> None:
        self.obj = obj
        self.data = data
        self.name = ""


Encoded = dict[tuple[int, int, tuple[str, int, int], frozenset[Any]], _Encoded]  # an object's parts -> it, encoded


def _encode(render: Render, encoded: Encoded) -> list[Any]:
    """The render as the cache keeps it, each object as its `_Encoded` (save() makes them bytes or names)."""
    objects = []
    for obj in render.objects:
        key = (id(obj.text), id(obj.table), obj.anchor, obj.approximate)
        known = encoded.get(key)  # the object is held beside its bytes: the ids stay its parts' meanwhile
        if known is None:
            known = encoded[key] = _Encoded(obj, marshal.dumps(_encode_object(obj)))
        objects.append(known)
    not_linted = list(render.not_linted) if render.not_linted is not None else None
    return [objects, list(render.inputs), [list(problem) for problem in render.problems], not_linted]


def _encode_object(obj: RenderedObject) -> list[Any]:
    """[text, parents, parts, files, lines, columns, anchor, approximate, recipe]: a rendered object's field
    paths run 20 deep in a CRD, so each is kept as the index of its parent path (an earlier entry;
    -1 for none) and the parts after it (its last, when its parent is placed). An object whose
    positions were not worked out (rendered.py) keeps those of its name and its recipe instead."""
    recipe = list(obj.recipe) if obj.recipe is not None else None
    table = obj.table
    index: dict[tuple[Any, ...], int] = {}
    parents: list[int] = []
    parts: list[list[Any]] = []
    for number, path in enumerate(table):
        parent = index.get(path[:-1], -1) if path else -1
        parents.append(parent)
        parts.append([path[-1]] if parent >= 0 else list(path))
        index[path] = number
    places = table.values()
    return [obj.text, parents, parts, [place[0] for place in places], [place[1] for place in places],
            [place[2] for place in places], list(obj.anchor), [list(path) for path in sorted(obj.approximate, key=repr)], recipe]


def _shared(root: Path, item: _Encoded) -> str:
    """Keep an encoded object in its own file (a chart's CRDs, alike in every value set's entry: written
    once, not once per set), named by its digest; the entry holds the name."""
    if not item.name:
        item.name = digest(item.data).hex()
    path = root / CACHE_DIR / f"render-object-{item.name}.cache"
    if not path.is_file():  # asked each time: another entry written meanwhile may have removed it (_forget)
        write_authentic(path, item.data, _PURPOSE)
    return item.name


def _names_held(entry: Path) -> set[str]:
    """The shared objects an entry on disk names (none when it is absent or unreadable)."""
    try:
        items = marshal.loads(read_authentic(entry, _PURPOSE))["render"][0]
    except (OSError, ValueError, TypeError, EOFError, KeyError, IndexError, RecursionError):
        return set()
    return {item for item in items if type(item) is str} if type(items) is list else set()


def _forget(root: Path, names: set[str]) -> None:
    """Remove shared objects an entry named before it was written again (a changed CRD's old copy):
    the cache does not grow with every edit. An entry of another unit naming one too misses and renders
    again."""
    for name in names:
        if len(name) == 32 and not name.strip("0123456789abcdef"):
            try:
                (root / CACHE_DIR / f"render-object-{name}.cache").unlink()
            except OSError:
                pass
            _READ.pop(name, None)


_READ: dict[str, bytes] = {}  # shared objects read this run, by name (the entries of a chart's sets hold the same)


def _unshared(root: Path | None, item: Any) -> Any:
    """An object's encoding, read back from its own file when the entry names it (its digest checked)."""
    if type(item) is not str or root is None:
        return item
    if len(item) != 32 or item.strip("0123456789abcdef"):
        raise ValueError("malformed shared object name")
    data = _READ.get(item)
    if data is None:
        data = read_authentic(root / CACHE_DIR / f"render-object-{item}.cache", _PURPOSE)
        if digest(data).hex() != item:
            raise ValueError("a shared object does not match its name")
        if len(_READ) > 64:
            _READ.clear()
        _READ[item] = data
    return data


def _decode(raw: Any, root: Path | None = None) -> Render:
    """A Render from its cached form; ValueError unless every part has the expected type."""
    if type(raw) is not list or len(raw) != 4 or not all(type(part) is list for part in raw[:3]):
        raise ValueError("malformed render")
    items = [_unshared(root, item) for item in raw[0]]
    objects = [_decode_object(marshal.loads(item) if type(item) is bytes else None) for item in items]
    inputs = raw[1]
    if not all(type(path) is str for path in inputs):
        raise ValueError("malformed inputs")
    problems = []
    for entry in raw[2]:
        if type(entry) is not list or len(entry) != 4:
            raise ValueError("malformed problem")
        file, line, column = _place(entry[:3])
        if type(entry[3]) is not str:
            raise ValueError("malformed problem")
        problems.append(RenderProblem(file, line, column, entry[3]))
    return Render(objects, list(inputs), problems, _not_linted(raw[3]))


def _decode_object(item: Any) -> RenderedObject:
    """The types checked a column at a time (a warm run reads 100,000s of places)."""
    if type(item) is not list or len(item) != 9 or type(item[0]) is not str or not all(type(part) is list for part in item[1:6]) \
            or type(item[7]) is not list:
        raise ValueError("malformed rendered object")
    text, parents, parts, files, lines, columns = item[:6]
    if not len(parents) == len(parts) == len(files) == len(lines) == len(columns):
        raise ValueError("malformed positions")
    if not set(map(type, parents)) <= {int} or not set(map(type, parts)) <= {list} \
            or not set(map(type, chain.from_iterable(parts))) <= _PARTS or not set(map(type, files)) <= {str} \
            or not set(map(type, lines)) | set(map(type, columns)) <= {int}:
        raise ValueError("malformed field path")
    paths: list[tuple[Any, ...]] = []
    for number, (parent, tail) in enumerate(zip(parents, parts)):
        if parent < 0:
            paths.append(tuple(tail))
        elif parent < number:
            paths.append(paths[parent] + tuple(tail))
        else:
            raise ValueError("malformed field path")
    positions = dict(zip(paths, zip(files, lines, columns)))
    approximate = []
    for path in item[7]:
        if type(path) is not list or not all(type(part) in (str, int) for part in path):
            raise ValueError("malformed field path")
        approximate.append(tuple(path))
    recipe = item[8]
    if recipe is None:
        return RenderedObject(text, positions, _place(item[6]), frozenset(approximate))
    if type(recipe) is not list or len(recipe) != 3 or type(recipe[0]) is not str or type(recipe[1]) is not str \
            or type(recipe[2]) is not int:
        raise ValueError("malformed recipe")
    kept: Recipe = (recipe[0], recipe[1], recipe[2])
    return RenderedObject(text, positions, _place(item[6]), frozenset(approximate), place=_unbound, settled=NAME_PATHS,
                          recipe=kept)


def _unbound() -> dict[Any, Any]:
    raise LookupError("a cached object's positions asked for before its renderer was given them (RenderedObject.defer)")


def _not_linted(raw: Any) -> NotLinted | None:
    if raw is None:
        return None
    if type(raw) is not list or len(raw) != 5 or not all(type(part) is str for part in raw[:3]):
        raise ValueError("malformed not-linted reason")
    file, line, column = _place(raw[2:])
    return NotLinted(raw[0], raw[1], file, line, column)


_PARTS = {str, int}


def _place(raw: Any) -> tuple[str, int, int]:
    if type(raw) is not list or len(raw) != 3 or type(raw[0]) is not str or type(raw[1]) is not int or type(raw[2]) is not int:
        raise ValueError("malformed place")
    return raw[0], raw[1], raw[2]
