"""The built-in kinds' schemas for one Kubernetes version, compiled per kind and cached.

The source is the `kubernetes-validate` package's data (`fieldwarden[schemas]`; Apache-2.0):
per Kubernetes version a `vX.Y.0-local-strict/_definitions.json`, the API server's OpenAPI
definitions as JSON Schema. The package is never imported (it would import jsonschema): its
folder is found along sys.path and only read. Those definitions come from OpenAPI v2, which has no
enums for the built-in types: the enum table of enums.py (from the API server's /openapi/v3) is
written into them before they are compiled.

Loading one kind must cost next to nothing (a one-file lint, bench/lint_speed.py row a): the first
use of a version reads its definitions once (~1.3 MB of JSON; ~60 ms with the compiling), compiles every kind
(form.compile_schema) and writes, in the user's cache folder (`$XDG_CACHE_HOME/fieldwarden/schemas`,
else `~/.cache/...`), an index and one marshal file per kind; later runs read the index and the
kinds they meet (~0.1 ms each). The cache is the user's own, not the linted project's; what is
read back is plain data (marshal: lists, dicts, strings, numbers) behind a CRC-32 of it, and a file
whose digest does not match (cut short, damaged) is compiled again. Without a cache folder that can be written, the compiled forms stay in memory.

This module and the package data are the only files the policy core reads besides its own
configuration schema; no network, ever.
"""

from __future__ import annotations

import marshal
import os

from binascii import crc32  # (imported by PyYAML already: nothing to load for a one-file lint)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any

    from .form import Compiled

from ..config import DEFAULT_KUBERNETES_VERSION
from . import enums

DEFAULT_VERSION = DEFAULT_KUBERNETES_VERSION  # (for the rules: a conf without the key)
_DIGEST = 4  # bytes of CRC-32 before each cached file's marshal data: a file cut short or damaged is compiled again
# (the cache is the user's own folder, not the linted project's: what it guards against is damage, not forgery)
FORMAT = 4  # of the cached files: bump when form.py's node layout changes
_SUFFIX = "-local-strict"
_INDEX = "index.marshal"

# Per process: the schema folder, the versions, each version's index and compiled kinds.
_ROOT: list[str | None] = []
_VERSIONS: list[list[str]] = []
_INDEXES: dict[str, dict[str, dict[str, str]]] = {}
_KINDS: dict[tuple[str, str], Compiled | None] = {}
_GROUPS: dict[str, frozenset[str]] = {}


class SchemasMissing(Exception):
    """kubernetes-validate (the schemas) is not installed."""


def schema_root() -> str | None:
    """The folder holding `vX.Y.0-local-strict/` folders, or None without kubernetes-validate.

    Looked for along sys.path as the import system would find the package, without importlib.util
    (~3 ms of a one-file lint with the contextlib it imports) and without importing the package."""
    if not _ROOT:
        import sys

        found = None
        for entry in sys.path:
            folder = os.path.join(entry or ".", "kubernetes_validate", "kubernetes-json-schema")
            if os.path.isdir(folder):
                found = folder
                break
        _ROOT.append(found)
    return _ROOT[0]


def normalize(text: str) -> str | None:
    """`1.32` for `1.32`, `v1.32`, `1.32.4`, `v1.32.4-gke.1` (what `fieldwarden export --k8s-version` takes); None
    for what is no version."""
    import re

    found = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", text.strip())
    return f"{int(found.group(1))}.{int(found.group(2))}" if found else None


def versions() -> list[str]:
    """The Kubernetes versions the installed schemas carry, oldest first (`1.25`, ..., `1.37`)."""
    if _VERSIONS:
        return _VERSIONS[0]
    root = schema_root()
    if root is None:
        return []
    found = []
    for name in os.listdir(root):
        if name.startswith("v") and name.endswith(".0" + _SUFFIX):
            parts = name[1:-len(".0" + _SUFFIX)].split(".")
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                found.append((int(parts[0]), int(parts[1])))
    _VERSIONS.append([f"{major}.{minor}" for major, minor in sorted(found)])
    return _VERSIONS[0]


def groups(version: str) -> frozenset[str]:
    """The built-in API groups of `version` ("" for the core group); raises as index() does."""
    found = _GROUPS.get(version)
    if found is None:
        found = _GROUPS[version] = frozenset(api_version.rpartition("/")[0] for api_version in index(version))
    return found


def index(version: str) -> dict[str, dict[str, str]]:
    """{apiVersion: {kind: definition name}} of the built-in kinds of `version` (`1.32`).

    Raises SchemasMissing without kubernetes-validate, KeyError for a version it does not carry.
    """
    known = _INDEXES.get(version)
    if known is not None:
        return known
    folder = _folder(version)
    cache = _cache_folder(folder)
    data: Any = _read(os.path.join(cache, _INDEX)) if cache else None
    found: dict[str, dict[str, str]] = data if _is_index(data) else _compile_version(folder, cache)
    _INDEXES[version] = found
    return found


def compiled(version: str, api_version: str, kind: str) -> Compiled | None:
    """The compiled schema of a built-in kind, or None if `version` has no such kind."""
    key = (version, f"{api_version}/{kind}")
    if key in _KINDS:
        return _KINDS[key]
    name = index(version).get(api_version, {}).get(kind)
    result: Compiled | None = None
    if name is not None:
        cache = _cache_folder(_folder(version))
        data = _read(os.path.join(cache, name + ".marshal")) if cache else None
        if not _is_compiled(data):
            _compile_version(_folder(version), cache)
            data = _KINDS.get(key)
        result = data
    _KINDS[key] = result
    return result


def _folder(version: str) -> str:
    root = schema_root()
    if root is None:
        raise SchemasMissing("the Kubernetes schemas are not installed (pip install 'fieldwarden[schemas]')")
    folder = os.path.join(root, f"v{version}.0{_SUFFIX}")
    if not os.path.isfile(os.path.join(folder, "_definitions.json")):
        raise KeyError(version)
    return folder


def _compile_version(folder: str, cache: str | None) -> dict[str, dict[str, str]]:
    """Compile every kind of one version; write the cache if there is one. Returns the index."""
    import json

    from .form import compile_schema

    with open(os.path.join(folder, "_definitions.json"), "rb") as handle:
        definitions = json.load(handle).get("$defs", {})
    version = os.path.basename(folder)[1:-len(".0" + _SUFFIX)]
    enums.apply(definitions, enums.load())  # (the built-in enums the v2-derived definitions lack)
    kinds: dict[str, dict[str, str]] = {}
    for name, schema in definitions.items():
        gvks = schema.get("x-kubernetes-group-version-kind")
        properties = schema.get("properties") or {}
        if not isinstance(gvks, list) or len(gvks) != 1 or "kind" not in properties:
            continue  # (DeleteOptions, WatchEvent...: one definition for every group)
        gvk = gvks[0]
        group, api, kind = gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")
        api_version = f"{group}/{api}" if group else api
        kinds.setdefault(api_version, {})[kind] = name
        form = compile_schema(schema, definitions)
        _KINDS[(version, f"{api_version}/{kind}")] = form
        if cache:
            _write(os.path.join(cache, name + ".marshal"), form)
    if cache:
        _write(os.path.join(cache, _INDEX), kinds)
    return kinds


def _cache_folder(folder: str) -> str | None:
    """The cache folder of one schema folder, made if need be (cache_name says what it is keyed by)."""
    key = ("cache", folder)
    if key in _CACHE_FOLDERS:
        return _CACHE_FOLDERS[key]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        path = os.path.join(base, "fieldwarden", "schemas", cache_name(os.path.join(folder, "_definitions.json"), enums.TABLE))
        if not os.path.isdir(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
        result: str | None = path if not os.path.islink(path) else None
    except OSError:
        result = None
    _CACHE_FOLDERS[key] = result
    return result


_CACHE_FOLDERS: dict[tuple[str, str], str | None] = {}


def cache_name(definitions: str, table: str) -> str:
    """The name of a version's cache folder: the definitions file's folder, size and time (another
    kubernetes-validate release is compiled again), the enum table's size and time (so is a changed
    table; one that is missing counts as empty) with the fields it leaves out (enums.DROPPED), and the
    compiled form's FORMAT. Raises OSError without the definitions."""
    status = os.stat(definitions)
    try:
        extra = os.stat(table)
        enum_stamp = f"{extra.st_size}.{extra.st_mtime_ns}"
    except OSError:
        enum_stamp = "0"
    enum_stamp += f".{crc32(repr(sorted(enums.DROPPED.items())).encode()):08x}"
    return (f"{os.path.basename(os.path.dirname(definitions))}-{status.st_size}-{int(status.st_mtime)}-{enum_stamp}"
            f"-{FORMAT}")


def _read(path: str) -> Any:
    """What _write wrote, or None: a file whose checksum does not match (cut short, damaged) is not read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if data[:_DIGEST] != _check(data[_DIGEST:]):
            return None
        return marshal.loads(data[_DIGEST:])
    except (OSError, ValueError, EOFError, TypeError):
        return None


def _check(body: bytes) -> bytes:
    return crc32(body).to_bytes(_DIGEST, "big")


def _write(path: str, data: Any) -> None:
    """Write through a fresh temporary name, then rename: a reader never sees half a file."""
    temporary = f"{path}.{os.getpid()}.tmp"
    body = marshal.dumps(data)
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with open(descriptor, "wb") as handle:
            handle.write(_check(body) + body)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def _is_index(data: Any) -> bool:
    return isinstance(data, dict) and all(
        isinstance(k, str) and isinstance(v, dict) and all(isinstance(a, str) and isinstance(b, str) for a, b in v.items())
        for k, v in data.items())


def _is_compiled(data: Any) -> bool:
    """The outline of form.compile_schema's output (the checksum vouches for the rest)."""
    return isinstance(data, list) and bool(data) and isinstance(data[0], list) and len(data[0]) == 7
