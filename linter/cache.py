"""The context cache: what set rules need from each unchanged file, keyed by its content.

Entries are keyed by a hash of the file's bytes, so an edited file is always parsed
again and a deleted file simply drops out; nothing is trusted from timestamps.

The cache lives in the project being linted, where a pull request can plant files
(`git add -f`), so what is read from there is treated as hostile:

- it holds plain data only (lists, str-keyed dicts, strings, numbers, booleans, None; no
  pickle: unpickling runs code), in `marshal`'s format, read only once its digest (below)
  shows this user's fieldwarden wrote it, then decoded field by field into the engine's
  types; anything unexpected (garbage, truncated, too large, wrong types, another version)
  is "no cache", and the run parses the files again. marshal, not JSON: it is built in,
  where importing json and decoding with it would cost a one-file run ~1.5 ms more;
- its first line is a keyed BLAKE2 digest of the rest, under a per-user secret kept outside
  the project (user_key.py: `$XDG_CACHE_HOME/fieldwarden/cache-key`), so a cache this user's fieldwarden
  did not write (committed, copied from elsewhere) is never believed: it could otherwise
  claim any content for a context file and hide or invent findings;
- a cache folder or file that is a symlink is neither read nor written through, and new
  files are created exclusively (never through an existing name), so a planted link cannot
  make a CI job overwrite files outside the project.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any

    StrPath = str | PathLike[str]  # a file's name: pathlib is not imported for a lint (render_cache.py passes Paths)

from .. import __version__
from ..policies.model import FieldPath, ObjectKey
from .analyse import FileResult, Locations, ObjectRecord
# (cli.py, engine.py and units/render_cache.py take these from here: units/ reads through cache.py)
from .user_key import create_file as create_file, digest as digest, is_plain_folder as is_plain_folder
from .user_key import make_cache_folder as make_cache_folder, read_authentic as read_authentic
from .user_key import keyed_digest as keyed_digest, write_authentic as write_authentic

CACHE_DIR = ".fieldwarden_cache"
CACHE_FILE = "context.cache"  # not *.json: a committed cache must not become a context manifest
FORMAT = 3  # 1 was context.pickle, 2 JSON: neither is read again


class ContextCache:
    """{relative path: (content digest, FileResult)}, in the project's cache folder.

    Only results as the engine keeps them for context files are stored: their objects, with
    projections made of YAML's plain types. A result holding anything else is not cached;
    that file is parsed every run.
    """

    def __init__(self, root: StrPath, signature: tuple[Any, ...]) -> None:
        self.folder = os.path.join(root, CACHE_DIR)
        self.file = os.path.join(self.folder, CACHE_FILE)
        # what the entries were made under (the engine's context paths and record fields), by its digest:
        # itself, it would be read back and compared on every run (~0.6 M instructions of a one-file lint).
        # marshal's version 2 writes a value the same whatever its objects' sharing and interning (no refs).
        self.signature = (FORMAT, __version__, marshal.version, digest(marshal.dumps(signature, 2)))
        self.entries: dict[str, tuple[bytes, FileResult]] = {}
        self.dirty = False
        try:
            self.entries = _decode(marshal.loads(read_authentic(self.file)), self.signature)
        except (OSError, ValueError, TypeError, EOFError, RecursionError):  # marshal's and _decode's errors
            self.entries = {}

    def get(self, name: str, key: bytes) -> FileResult | None:
        """The stored result for this file content, or None."""
        entry = self.entries.get(name)
        return entry[1] if entry is not None and entry[0] == key else None

    def put(self, name: str, key: bytes, value: FileResult) -> None:
        """Remember a result (unless it holds something other than plain data)."""
        try:
            plain = all(_plain(record.projection) for record in value.objects)
        except RecursionError:
            plain = False
        if plain:
            self.entries[name] = (key, value)
            self.dirty = True
        elif self.entries.pop(name, None) is not None:
            self.dirty = True

    def keep_only(self, names: set[str]) -> None:
        """Forget files that are gone."""
        for name in list(self.entries):
            if name not in names:
                del self.entries[name]
                self.dirty = True

    def save(self) -> None:
        """Write atomically; a read-only project (or a planted symlink) just goes without a cache."""
        if not self.dirty:
            return
        entries = {name: [key, [_encode(o) for o in result.objects]] for name, (key, result) in self.entries.items()}
        try:
            body = marshal.dumps({"signature": self.signature, "entries": entries})
        except (ValueError, TypeError, RecursionError):  # put() lets none through; never a traceback
            return
        write_authentic(self.file, body, b"context-cache")


def _plain(value: Any) -> bool:
    """Whether `value` is plain data: str-keyed dicts, lists, str, int, float, bool, None."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(item) for item in value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def _encode(record: ObjectRecord) -> list[Any]:
    """An ObjectRecord as a list (tuples become lists; position tables become lists)."""
    locations = [[list(path), line, column] for path, (line, column) in record.locations.items()]
    ignore = list(record.ignore) if isinstance(record.ignore, tuple) else record.ignore
    return [None if record.key is None else list(record.key), record.label, record.projection, locations,
            record.origin, record.document, list(record.prefix), ignore, list(record.ignore_at)]


def _decode(data: Any, signature: object) -> dict[str, tuple[bytes, FileResult]]:
    """The entries of a parsed cache file; ValueError unless every part has the expected type."""
    if type(data) is not dict or data.get("signature") != signature or type(data.get("entries")) is not dict:
        raise ValueError("another version, or not a cache")
    entries: dict[str, tuple[bytes, FileResult]] = {}
    for name, entry in data["entries"].items():
        if type(name) is not str or type(entry) is not list or len(entry) != 2 or type(entry[0]) is not bytes or type(entry[1]) is not list:
            raise ValueError(f"malformed entry {name!r}")
        key = entry[0]
        if len(key) != 16:
            raise ValueError(f"malformed digest for {name!r}")
        entries[name] = (key, FileResult(name, [], [_decode_record(raw) for raw in entry[1]], [], [], ""))
    return entries


_KEY_TYPES = [str, str, str, str]
_PAIR_TYPES = [int, int]


def _decode_record(raw: Any) -> ObjectRecord:
    """One object record; a warm run decodes 20,000 of them, so the common shapes go first."""
    if type(raw) is not list or len(raw) != 9:
        raise ValueError("malformed object record")
    key, label, projection, locations, origin, document, prefix, ignore, ignore_at = raw
    if key is not None:
        if type(key) is not list or list(map(type, key)) != _KEY_TYPES:
            raise ValueError("malformed object key")
        key = ObjectKey(*key)
    if (
        type(label) is not str or type(projection) is not dict or type(origin) is not str
        or type(document) is not int or type(locations) is not list or type(ignore_at) is not list
        or list(map(type, ignore_at)) != _PAIR_TYPES
        or type(projection.get("apiVersion")) is not str or type(projection.get("kind")) is not str
    ):
        raise ValueError("malformed object record")
    positions: Locations = {}
    for location in locations:
        if type(location) is not list or len(location) != 3 or list(map(type, location[1:])) != _PAIR_TYPES:
            raise ValueError("malformed position")
        positions[_path(location[0])] = (location[1], location[2])
    if ignore is not False and ignore is not None and ignore is not True:
        if type(ignore) is not list or not all(type(code) is str for code in ignore):
            raise ValueError("malformed ignore annotation")
        ignore = tuple(ignore)
    return ObjectRecord(key, label, projection, positions, origin, document, _path(prefix) if prefix != [] else (),
                        ignore, (ignore_at[0], ignore_at[1]))


def _path(raw: Any) -> FieldPath:
    if type(raw) is not list or not all(type(part) is str or type(part) is int for part in raw):
        raise ValueError("malformed field path")
    return tuple(raw)
