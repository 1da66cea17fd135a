"""What test runners' own manifests say about the files beside them: chainsaw and kyverno CLI tests.

A chainsaw test (`chainsaw-test.yaml`, kind `Test` of chainsaw.kyverno.io) names each file it
uses and what it does with it, step by step (`spec.steps[].try|catch|finally|cleanup[]`):

- `apply`, `create`, `update` send a file's objects to the cluster, one operation after another
  (a later one updating what an earlier one made): each operation's files are a unit of their
  own, never joined with the rest of the folder;
- a `script` that runs `kubectl apply|create|replace -f FILE` applies that file the same way;
- `assert`, `error` describe what the cluster should (not) hold, partially; `patch` sends a
  partial object; `delete` names what to remove: a file only these name is a test fixture,
  never applied whole; so are the test file itself and the step templates it uses (chainsaw's
  objects, not the cluster's).

A step may `use` a `StepTemplate` (a file, relative to the test) whose operations name their
file through a binding (`file: ($file)` with `use.with.bindings: [{name: file, value: policy.yaml}]`).
A `file` may be a glob. Paths are relative to the test's folder; what names no file of the
project (a URL, an expression left unresolved) is ignored. Chainsaw never applies a folder: the
test folder's other files that the test mentions anyway (a script that pipes one through
`envsubst`) are units of their own; those it never mentions (a copy of another test's assert
file, kyverno's `new-deployment-exists.yaml`) are not used by it: fixtures.

A kyverno CLI test (`kyverno-test.yaml`: `kyverno test`) names the policies, resources, values
and expected results it runs offline: every project file it names is a test fixture (resources
there are often wrong on purpose), and so is every other file of its folder (test data no test
uses any more: see `left_over`).

`read` does the reading (each manifest, bounded like a kustomization); the rest is pure.
"""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase
from pathlib import Path

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence
else:
    from ...policies.records import NamedTuple

from .reading import small_bytes

CHAINSAW_GROUP = "chainsaw.kyverno.io"
CHAINSAW_TEST_FILES = ("chainsaw-test.yaml", "chainsaw-test.yml")
KYVERNO_TEST_FILES = ("kyverno-test.yaml", "kyverno-test.yml")
APPLIES = ("apply", "create", "update")  # a file's objects reach the cluster whole
CHECKS = ("assert", "error", "patch", "delete", "template")  # partial objects (compared, merged in, removed), templates
BLOCKS = ("try", "catch", "finally", "cleanup")
MAX_MANIFEST_BYTES = 1 << 20

# (operation, project-relative path or glob)
Operation = tuple[str, str]


class TestFiles(NamedTuple):
    """What the project's test manifests say about its files."""

    fixtures: frozenset[str]  # never applied whole: not linted unless --include-fixtures
    alone: dict[str, str]  # applied by a test operation: file -> the operation (a unit of its own)


NOTHING = TestFiles(frozenset(), {})


def has_manifests(files: Iterable[str]) -> bool:
    """Whether a file list holds a chainsaw or kyverno CLI test manifest (a cheap look before reading)."""
    names = (*CHAINSAW_TEST_FILES, *KYVERNO_TEST_FILES)
    return any(path.rpartition("/")[2] in names for path in files)


def chainsaw_operations(documents: Iterable[Any], folder: str,
                        template: Callable[[str], Sequence[Any]] = lambda _path: ()) -> list[Operation]:
    """The file operations of the chainsaw tests in one `chainsaw-test.yaml` (its parsed documents).

    `template(path)` gives the parsed documents of a step template (project-relative path).
    """
    found: list[Operation] = []
    for document in documents:
        if not _is_chainsaw(document, "Test"):
            continue
        for step in _list(_get(document, "spec", "steps")):
            if not isinstance(step, dict):
                continue
            found.extend(_operations(step, folder, {}))
            used = _get(step, "use", "template")
            if isinstance(used, str) and not used.startswith("/") and "://" not in used:
                path = posixpath.normpath(posixpath.join(folder, used))
                bindings = _bindings(_get(step, "use", "with", "bindings"))
                found.append(("template", path))  # chainsaw's own object, never applied
                for part in template(path):
                    if _is_chainsaw(part, "StepTemplate"):
                        found.extend(_operations(_get(part, "spec"), folder, bindings))
    return found


class Listing(NamedTuple):
    """The project's files, looked up by path and by folder (built once for all tests)."""

    paths: tuple[str, ...]  # sorted
    present: frozenset[str]
    by_folder: dict[str, list[str]]


def listing(files: Iterable[str]) -> Listing:
    paths = tuple(sorted(set(files)))
    by_folder: dict[str, list[str]] = {}
    for path in paths:
        by_folder.setdefault(path.rpartition("/")[0] or ".", []).append(path)
    return Listing(paths, frozenset(paths), by_folder)


def classify(operations: Iterable[Operation], files: Iterable[str] | Listing, folder: str | None = None,
             texts: Sequence[str] | None = None) -> TestFiles:
    """Fixtures (only checked, patched or deleted) and applied files (each operation a unit) among `files`.

    `folder`: the test's folder; its files that no operation names are units of their own too, or,
    given the test's `texts` (every string it holds), only those whose name one of them mentions
    (the others are fixtures: the test does not use them).
    """
    listed = files if isinstance(files, Listing) else listing(files)
    applied: dict[str, str] = {}
    checked: set[str] = set()
    for operation, pattern in operations:
        matched = _matching(pattern, listed)
        if operation in APPLIES:
            label = f"chainsaw {operation} {posixpath.basename(pattern)}"
            for path in matched:
                applied.setdefault(path, label)
        elif operation in CHECKS:
            checked.update(matched)
    if folder is not None:
        for path in listed.by_folder.get(folder, ()):
            name = path.rpartition("/")[2]
            if path in applied or path in checked or name in CHAINSAW_TEST_FILES:
                continue
            if texts is None or any(name in text for text in texts):
                applied[path] = f"chainsaw {name}"
            else:
                checked.add(path)
    return TestFiles(frozenset(checked - set(applied)), applied)


def kyverno_test_files(documents: Iterable[Any], folder: str, files: Iterable[str]) -> frozenset[str]:
    """The project files a kyverno CLI test names (policies, resources, values, expected results)."""
    listed = set(files)
    named = set()
    for document in documents:
        for text in _strings(document):
            if "://" in text or text.startswith("/"):
                continue
            path = posixpath.normpath(posixpath.join(folder, text.strip()))
            if path in listed:
                named.add(path)
    return frozenset(named)


def left_over(folder: str, listed: Listing) -> frozenset[str]:
    """The files of a kyverno CLI test's folder: what the test names is its input, the rest is not used by it.

    `kyverno test` reads only the files its kyverno-test.yaml names; another file of its folder is
    test data it left behind (kyverno's test/cli/test-mutate/patchedResource5.yaml, an expected
    result no test names any more), never applied. A kustomization or chart there is applied
    through kustomize or Helm: it stays a unit.
    """
    return frozenset(path for path in listed.by_folder.get(folder, ())
                     if path.rpartition("/")[2] not in _APPLIED_THROUGH)


_APPLIED_THROUGH = ("kustomization.yaml", "kustomization.yml", "Kustomization", "Chart.yaml")


def merge(parts: Iterable[TestFiles]) -> TestFiles:
    """Several manifests' findings as one: applied anywhere wins over checked elsewhere."""
    alone: dict[str, str] = {}
    fixtures: set[str] = set()
    for part in parts:
        for path, label in part.alone.items():
            alone.setdefault(path, label)
        fixtures.update(part.fixtures)
    return TestFiles(frozenset(fixtures - set(alone)), alone)


def read(root: Path, files: Sequence[str], go_files: Sequence[str] | None = None) -> TestFiles:
    """What the test manifests among `files` (project-relative) and the project's Go tests say (gotests.py),
    and which files its documentation shows as examples, each alone (docexamples.py).

    A manifest that cannot be read says nothing. `go_files`: the project's `.go` files as its
    listing gave them (None: the folders concerned are scanned).
    """
    from .docexamples import read as doc_examples
    from .gotests import read as go_test_data

    manifests = _manifests(root, files)
    data = go_test_data(root, files, go_files)
    examples = doc_examples(root, files)  # not tests, but shown alone as they are: a unit each
    return merge([manifests, TestFiles(data, examples)]) if data or examples else manifests


def _manifests(root: Path, files: Sequence[str]) -> TestFiles:
    if not has_manifests(files):
        return NOTHING
    parts = []
    listed = listing(files)
    templates: dict[str, list[Any]] = {}  # a step template is read once however many tests use it

    def template(used: str) -> list[Any]:
        if used not in templates:
            templates[used] = _documents(root, used)
        return templates[used]

    for path in files:
        folder, _, name = path.rpartition("/")
        folder = folder or "."
        if name in CHAINSAW_TEST_FILES:
            documents = _documents(root, path)
            operations = chainsaw_operations(documents, folder, template)
            parts.append(classify(operations, listed, folder, list(_strings(documents))))
            parts.append(TestFiles(frozenset({path}), {}))  # the test itself: chainsaw's object, never applied
        elif name in KYVERNO_TEST_FILES:
            named = kyverno_test_files(_documents(root, path), folder, listed.present)
            parts.append(TestFiles(named | {path} | left_over(folder, listed), {}))
    return merge(parts)


def _documents(root: Path, path: str) -> list[Any]:
    from ..loader import decode, load

    if path.startswith("/") or path == ".." or path.startswith("../"):
        return []
    raw = small_bytes(root / path, MAX_MANIFEST_BYTES)
    if raw is None:
        return []
    text, _problem = decode(raw)
    if text is None:
        return []
    return [document.data for document in load(text).documents if document.data is not None]


def _is_chainsaw(document: Any, kind: str) -> bool:
    return (isinstance(document, dict) and document.get("kind") == kind
            and str(document.get("apiVersion", "")).partition("/")[0] == CHAINSAW_GROUP)


def _operations(holder: Any, folder: str, bindings: Mapping[str, str]) -> Iterator[Operation]:
    for block in BLOCKS:
        for entry in _list(_get(holder, block)):
            if not isinstance(entry, dict):
                continue
            for operation, body in entry.items():
                if operation == "script" and isinstance(_get(body, "content"), str):
                    for file in re.findall(_KUBECTL_FILE, body["content"]):
                        if "$" not in file and "://" not in file and not file.startswith("/"):
                            yield "apply", posixpath.normpath(posixpath.join(folder, file))
                    continue
                file = _get(body, "file")
                if not isinstance(file, str):
                    continue
                file = file.strip()
                if file.startswith("(") and file.endswith(")"):  # a binding: `($file)`
                    file = bindings.get(file[1:-1].strip().lstrip("$"), "")
                if file and "://" not in file and not file.startswith(("/", "(")):
                    yield operation, posixpath.normpath(posixpath.join(folder, file))


# `kubectl apply -f FILE`, `kubectl create --filename=FILE` in a script (not `-f -`, not a variable); compiled on
# first use (re's cache)
_KUBECTL_FILE = r"\bkubectl\s+(?:apply|create|replace)\b[^|;&\n]*?(?:-f|--filename)[= ]\s*([\w./-]+\.(?:ya?ml|json))"


def _bindings(entries: Any) -> dict[str, str]:
    return {entry["name"]: entry["value"].strip() for entry in _list(entries)
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str)}


def _matching(pattern: str, listed: Listing) -> list[str]:
    if not any(char in pattern for char in "*?["):
        return [pattern] if pattern in listed.present else []
    return [path for path in listed.paths if fnmatchcase(path, pattern)]


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


def _get(data: Any, *path: str) -> Any:
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
