"""Go test data: what a package's `*_test.go` files name by a relative path inside the package folder.

`go test` runs a package's tests in the package's own folder, so its tests read their data by
paths relative to it (`"./testdata2/out-of-bounds-chart"`, `"fixtures/app.yaml"`). A file or
folder that a `*_test.go` names by such a string literal, that lies inside the package folder
(not the folder itself) and that holds no `.go` file (not a package of its own), is test data:
a fixture, whatever its folder is called (`testdata/` is only the convention). A path that
leaves the package folder (`"../../manifests/base"`, `"../../notifications_catalog/install.yaml"`)
names the project's own deliverables, which a test reads to check them: those stay linted.

Cheap by construction: only `*_test.go` files in folders holding manifests (or above them, up to
the project's root) are read, each up to MAX_TEST_BYTES, and their string literals matched by a
regular expression (no Go parsing).
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Iterable, Iterator, Sequence

from .reading import small_text

MAX_TEST_BYTES = 1 << 20
GO_TEST_SUFFIX = "_test.go"
_CONVENTION = frozenset({"testdata", "_testdata"})  # folders of fixtures already (plan.FIXTURE_FOLDERS): not looked at
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# a Go string literal: interpreted ("...", one line) or raw (`...`); compiled on first use (re's cache)
_LITERAL = r'"((?:[^"\\\n]|\\.)*)"|`([^`]*)`'


def packages(manifests: Iterable[str]) -> set[str]:
    """The folders whose tests could name these manifests: each manifest's folder and those above it ('' the root)."""
    found: set[str] = set()
    for path in manifests:
        folder = path.rpartition("/")[0]
        while folder not in found:
            found.add(folder)
            if not folder:
                break
            folder = folder.rpartition("/")[0]
    return found


def literals(source: str) -> Iterator[str]:
    """The string literals of Go source that look like relative paths.

    A path has a `/` or a manifest's suffix (a bare word such as `"config"` is more often a name
    than a folder); no escapes, no spaces, no URL, not absolute.
    """
    for match in re.finditer(_LITERAL, source):
        text = match.group(1) if match.group(1) is not None else match.group(2)
        if text and len(text) < 1024 and "\\" not in text and "://" not in text and not text.startswith("/") \
                and not any(char.isspace() for char in text) \
                and ("/" in text or text.lower().endswith(_MANIFEST_SUFFIXES)):
            yield text


def named(package: str, source: str) -> set[str]:
    """Project-relative paths inside `package` (not the package itself) that one test file's literals name."""
    found = set()
    for text in literals(source):
        path = posixpath.normpath(posixpath.join(package, text)) if package else posixpath.normpath(text)
        inside = path.startswith(package + "/") if package else not (path == ".." or path.startswith("../") or path == ".")
        if inside:
            found.add(path)
    return found


def data_among(manifests: Sequence[str], paths: Iterable[str], go_files: Iterable[str]) -> frozenset[str]:
    """The manifests that are test data: below a named folder, or a named file in a folder, that holds no `.go` file."""
    holds_go: set[str] = set()
    for go_file in go_files:
        folder = go_file.rpartition("/")[0]
        while folder and folder not in holds_go:
            holds_go.add(folder)
            folder = folder.rpartition("/")[0]
    data = {path for path in paths if path not in holds_go}
    if not data:
        return frozenset()
    found = set()
    for manifest in manifests:
        if manifest in data and manifest.rpartition("/")[0] in holds_go:
            continue  # a file of a Go package's own folder: maybe what the package ships, not data
        part = manifest
        while part:
            if part in data:
                found.add(manifest)
                break
            part = part.rpartition("/")[0]
    return frozenset(found)


def read(root: Path, manifests: Sequence[str], go_files: Sequence[str] | None = None) -> frozenset[str]:
    """The manifests (project-relative) that the project's Go tests name as test data.

    `go_files`: the project's `.go` files as its listing gave them; None scans the folders
    concerned instead (a project outside git).
    """
    manifests = [path for path in manifests if _CONVENTION.isdisjoint(path.split("/")[:-1])]
    folders = packages(manifests)
    listed = _scanned(root, folders) if go_files is None else list(go_files)
    paths: set[str] = set()
    for go_file in listed:
        folder, _, name = go_file.rpartition("/")
        if name.endswith(GO_TEST_SUFFIX) and folder in folders:
            paths |= named(folder, _source(root / go_file))
    if not paths:
        return frozenset()
    if go_files is None:
        listed += _go_below(root, paths)
    return data_among(manifests, paths, listed)


def _scanned(root: Path, folders: Iterable[str]) -> list[str]:
    """The `.go` files directly in these folders."""
    found: list[str] = []
    for folder in sorted(folders):
        try:
            with os.scandir(root / folder if folder else root) as entries:
                found.extend(f"{folder}/{entry.name}" if folder else entry.name for entry in entries
                             if entry.name.endswith(".go") and entry.is_file())
        except OSError:
            continue
    return found


def _go_below(root: Path, paths: Iterable[str]) -> list[str]:
    """`.go` files below the named folders (scanned: a project outside git)."""
    found: list[str] = []
    for path in paths:
        for current, folders, files in os.walk(root / path):
            folders[:] = [name for name in folders if not name.startswith(".")]
            relative = os.path.relpath(current, root).replace(os.sep, "/")
            found.extend(f"{relative}/{name}" for name in files if name.endswith(".go"))
    return found


def _source(path: Path) -> str:
    return small_text(path, MAX_TEST_BYTES)
