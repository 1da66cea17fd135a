"""A chart's values.schema.json, screened before Helm sees it: used only when provably self-contained.

Helm validates values against the schema with a JSON Schema library that loads what a `$ref`
(or an unknown `$schema`) names: files of the machine (`file:///...`, or a relative name
resolved against `file:///values.schema.json`) and URLs, loopback services included (Go does
not send loopback through a proxy). A screen that reads the schema differently from Go is a
way round it (an invalid UTF-8 byte, a duplicate key, an `$id` that only the screen takes for
an embedded schema), so the screen fails closed:

- the file must be strict UTF-8 JSON: no duplicate keys, no NaN/Infinity, no lone surrogates;
- every `$ref`, `$dynamicRef` and `$recursiveRef`, wherever it stands, is a fragment of this
  file (`#...`);
- every `$schema` is one of the meta-schemas built into Helm's library (drafts 4 to 2020-12);
- an `$id` (a draft-04 `id`) that names a resource stands only where a schema stands: the
  root, or below it through the applicator keywords (`properties`, `$defs`, `items`, `allOf`...),
  which is where the library looks for embedded schemas; one in data (`examples`, `default`,
  an unknown keyword) is refused rather than guessed about.

What passes is written for Helm as fieldwarden serialised it (ASCII JSON), so Helm reads
exactly what was screened; anything else is left out and the chart renders without its schema.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 200  # nesting of a schema Python parses (Go's decoder allows 10,000; deeper is no real schema)
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_META = frozenset(
    f"{scheme}://json-schema.org/{path}{hash_}"
    for scheme in ("http", "https")
    for path in ("schema", "draft-04/schema", "draft-06/schema", "draft-07/schema",
                 "draft/2019-09/schema", "draft/2020-12/schema")
    for hash_ in ("", "#")
)


class Unsafe(ValueError):
    """Why a schema cannot be proven self-contained."""


def screen(data: bytes) -> bytes:
    """The schema as Helm should read it, or Unsafe saying why it is not used."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unsafe(f"it is not UTF-8 text (byte {exc.start + 1})") from None
    try:
        schema = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except Unsafe:
        raise
    except RecursionError:
        raise Unsafe("it is nested too deeply") from None
    except ValueError as exc:
        raise Unsafe(f"it is not valid JSON ({exc})") from None
    _check(schema)
    return json.dumps(schema, ensure_ascii=True).encode("ascii")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise Unsafe(f"key {key!r} appears twice in one object")
        found[key] = value
    return found


def _no_constant(name: str) -> Any:
    raise Unsafe(f"{name} is not JSON")


def _check(schema: Any) -> None:
    """Raise Unsafe at the first thing that could make Helm's validator load something."""
    draft4 = False
    stack: list[tuple[Any, int]] = [(schema, 0)]
    objects: list[tuple[dict[str, Any], int]] = []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Unsafe("it is nested too deeply")
        if isinstance(item, str):
            _text(item)
        elif isinstance(item, list):
            stack.extend((each, depth + 1) for each in item)
        elif isinstance(item, dict):
            objects.append((item, depth))
            for key, value in item.items():
                _text(key)
                stack.append((value, depth + 1))
                if key == "$schema":
                    if value not in _META:
                        raise Unsafe(f"$schema {_shown(value)} is not a JSON Schema meta-schema Helm has built in")
                    draft4 = draft4 or "draft-04" in value
                elif key in _REFERENCES and not (isinstance(value, str) and value.startswith("#")):
                    raise Unsafe(f"{key} {_shown(value)} leads outside the file")
    schemas = _schema_positions(schema)
    for item, _ in objects:
        for key in ("$id", "id") if draft4 else ("$id",):
            value = item.get(key)
            if id(item) not in schemas and isinstance(value, str) and not value.startswith("#"):
                raise Unsafe(f"{key} {_shown(value)} stands where no schema does (in data or an unknown keyword)")


_ONE = ("additionalProperties", "additionalItems", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


def _schema_positions(root: Any) -> set[int]:
    """The ids of the objects that stand where a schema does: the root and its applicators' schemas."""
    found: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict) or id(item) in found:
            continue
        found.add(id(item))
        stack.extend(item.get(key) for key in _ONE)
        for key in _MAPS:
            if isinstance(item.get(key), dict):
                stack.extend(item[key].values())
        for key in _LISTS:
            if isinstance(item.get(key), list):
                stack.extend(item[key])
    return found


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> None:
    if _SURROGATE.search(value):
        raise Unsafe("it holds a lone UTF-16 surrogate (\\ud800-\\udfff), which Go reads differently")


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:117] + "..."
