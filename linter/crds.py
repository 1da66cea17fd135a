"""The CustomResourceDefinitions of a lint run, for the schema rules (FW601-FW603; policies/schemas/crd.py).

Object rules run per file, possibly in forked worker processes (engine._Workers), so the CRDs are
found first, once per run: every file of the project (targets and context) whose bytes hold the
word `CustomResourceDefinition` is read, less its schemas until one is needed (skeletons), the rest
are not parsed at all; the catalog is then handed to analyse() with the files (and inherited by the
workers at their fork). A render's
own CRDs (a chart's `crds/`, a kustomization's resources) count for the objects of that render
(unitrun.py). The alternative, validating custom resources in the set-rule pass where a unit's
objects all meet, would keep every object's full content and every file's node tree until then.
"""

from __future__ import annotations

import re
from functools import partial

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Sequence

    from ..policies.config import Settings
    from ..policies.schemas.crd import Catalog, Skeleton
    from .analyse import Finding
    from .units.rendered import RenderedObject

MARK = "CustomResourceDefinition"
_MARK_BYTES = MARK.encode()
NOT_VALIDATED = "FW603"


def catalog(sources: Iterable[tuple[str, str | None, bytes | None]], settings_for: Callable[[str], Settings],
            context: Iterable[tuple[str, str | None, bytes | None]] = ()) -> Catalog | None:
    """The CRDs among (display, path, bytes or None: read it) files; None when they hold none, or when
    no file's configuration runs a rule that reads them (`--select FW1`: nothing read), or without the schemas.

    The `context` files (the rest of the project) are read for their CRDs only when the `sources` (the
    targets) may hold a custom resource (custom_resource_in): a pre-commit run of one Deployment does
    not read the whole repository a second time (bench/lint_speed.py row c: ~60 ms of 20,000 objects).
    """
    from .analyse import READS_CRDS, read_source

    from ..policies.schemas.builtin import schema_root

    sources, context = list(sources), list(context)
    if not any(settings_for(display).enabled(code) for display, _, _ in (*sources, *context) for code in READS_CRDS):
        return None
    if schema_root() is None:
        return None  # without fieldwarden[schemas] no schema rule runs
    found: list[Skeleton | dict[str, Any]] = []
    built_in = _built_in_groups()
    custom = False
    for files in (sources, context):
        if files is context and not custom:
            break
        for display, path, data in files:
            if data is None and path is not None:
                data, _ = read_source(path, settings_for(display))  # (unreadable: analyse reports it)
            if not data:
                continue
            if _MARK_BYTES in data:
                found.extend(skeletons(data.decode("utf-8", "replace")))
            custom = custom or custom_resource_in(data, built_in)
    return _made(found)


def custom_resource_in(data: bytes, built_in: frozenset[str] | None) -> bool:
    """Whether a file may hold a custom resource: an apiVersion whose group has a dot and is none of
    `built_in` (None: not known), or one a template writes (`apiVersion: {{ ... }}`). Over-approximate:
    a yes only costs reading the context. (String methods: a one-file lint compiles no pattern.)"""
    start = data.find(b"apiVersion")
    while start >= 0:
        end = data.find(b"\n", start)
        line = data[start + len(b"apiVersion"):end if end >= 0 else len(data)]
        _, colon, value = line.partition(b":")
        value = value.strip(b" \t\r\"'")
        if colon and value.startswith(b"{{"):
            return True
        value = value.strip(b" \t\r\"',{}[]")  # (JSON: `"apiVersion": "x/v1"},`)
        group = value.partition(b"/")[0].decode("utf-8", "replace") if colon and b"/" in value else ""
        if "." in group and (built_in is None or group not in built_in):
            return True
        start = data.find(b"apiVersion", start + 1)
    return False


def _built_in_groups() -> frozenset[str] | None:
    from ..policies.schemas.builtin import DEFAULT_VERSION, SchemasMissing, groups

    try:
        return groups(DEFAULT_VERSION)
    except (KeyError, SchemasMissing):
        return None


class RenderCRDs:
    """The catalog for each render's objects: the render's own CRDs first, then the project's (`project`).

    A chart renders its CRDs alike for each value set: each distinct CRD text is read once in a run,
    and the catalogs share their compiled forms (policies/schemas/crd.py).
    """

    def __init__(self, project: Catalog | None = None) -> None:
        self.project = project
        self._read: dict[str, list[Skeleton | dict[str, Any]]] = {}

    def of(self, objects: Iterable[RenderedObject]) -> Catalog | None:
        found: list[Skeleton | dict[str, Any]] = []
        for obj in objects:
            if MARK in obj.text:
                known = self._read.get(obj.text)
                if known is None:
                    known = self._read[obj.text] = skeletons(obj.text)
                found.extend(known)
        if not found:
            return self.project
        if self.project is None:
            return _made(found)
        return self.project.with_crds(found)


def skeletons(text: str) -> list[Skeleton | dict[str, Any]]:
    """The CRDs of a text, their schemas read only when a custom resource needs one (crd.Skeleton).

    The schemas are nearly all of a CRD's text (prometheus-operator's 8 CRDs: 4.3 MB, of which a run
    uses two or three), and the catalog is made before the renders start: each `openAPIV3Schema`
    block is left out of a first, small read; the whole text is read when one of them is needed.
    A text whose schemas are not block-style YAML (JSON, flow style) is read whole at once.
    """
    from ..policies.schemas.crd import Skeleton

    cut = _without_schemas(text)
    crds, clean = _read(cut) if cut is not None else ([], False)
    if not clean:  # (a cut that left something unreadable: read as it is)
        return list(in_text(text))
    whole = _Whole(text)
    return [Skeleton(crd, partial(whole.crd, _kind_of(crd))) for crd in crds]


class _Whole:
    """A text's CRDs read whole, once, when a schema of one of them is first needed."""

    __slots__ = ("text", "crds")

    def __init__(self, text: str) -> None:
        self.text = text
        self.crds: dict[tuple[Any, Any], dict[str, Any]] | None = None

    def crd(self, kind: tuple[Any, Any]) -> dict[str, Any] | None:
        if self.crds is None:
            self.crds = {}
            for crd in in_text(self.text):
                self.crds.setdefault(_kind_of(crd), crd)
            self.text = ""
        return self.crds.get(kind)


def _kind_of(crd: dict[str, Any]) -> tuple[Any, Any]:
    spec = crd.get("spec")
    names = spec.get("names") if isinstance(spec, dict) else None
    return (spec.get("group") if isinstance(spec, dict) else None, names.get("kind") if isinstance(names, dict) else None)


_SCHEMA_KEY = "openAPIV3Schema:"
_BLOCK_ENDS: dict[int, re.Pattern[str]] = {}


def _without_schemas(text: str) -> str | None:
    """The text with each `openAPIV3Schema:` block's value left out (`openAPIV3Schema: {}`), or None
    where there is none, or one is not a block below its key (a value on the key's line: JSON, flow style)."""
    at = text.find(_SCHEMA_KEY)
    if at < 0:
        return None
    parts: list[str] = []
    start = 0
    while at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        indent = at - line_start
        line_end = text.find("\n", at)
        if line_end < 0 or text[line_start:at].strip(" ") or text[at + len(_SCHEMA_KEY):line_end].strip(" \t\r")[:1] not in ("", "#"):
            return None
        ends = _BLOCK_ENDS.get(indent)
        if ends is None:  # the next line indented no deeper than the key that is not blank or a comment
            ends = _BLOCK_ENDS[indent] = re.compile(r"\n {0,%d}(?=[^ \t\r\n#])" % indent)
        end = ends.search(text, line_end)
        parts.append(text[start:at + len(_SCHEMA_KEY)])
        parts.append(" {}")
        start = end.start() if end is not None else len(text)
        at = text.find(_SCHEMA_KEY, start)
    parts.append(text[start:])
    return "".join(parts)


def in_text(text: str) -> list[dict[str, Any]]:
    """The CRDs of a YAML/JSON text (a `kind: List`'s items too), read with the linter's own loader."""
    return _read(text)[0]


def _read(text: str) -> tuple[list[dict[str, Any]], bool]:
    """(the CRDs of a text, whether all of it read without a problem)."""
    from ..policies.schemas.crd import is_crd
    from .loader import load

    loaded = load(text)
    found: list[dict[str, Any]] = []
    for document in loaded.documents:
        data = document.data
        items = data.get("items") if isinstance(data, dict) and str(data.get("kind", "")).endswith("List") else None
        found.extend(obj for obj in (items if isinstance(items, list) else [data]) if isinstance(obj, dict) and is_crd(obj))
    return found, not loaded.problems


def _made(crds: Sequence[Skeleton | dict[str, Any]]) -> Catalog | None:
    if not crds:
        return None
    from ..policies.schemas.crd import Catalog

    made = Catalog(crds)
    return made if made else None


def once_per_kind(findings: Sequence[Finding]) -> list[Finding]:
    """FW603 (kind not validated) once per kind and apiVersion in a run: its first place (findings sorted)."""
    seen: set[str] = set()
    out: list[Finding] = []
    for finding in findings:
        if finding.code == NOT_VALIDATED:
            if finding.message in seen:
                continue
            seen.add(finding.message)
        out.append(finding)
    return out
