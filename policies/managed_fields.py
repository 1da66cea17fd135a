"""Server-side-apply field ownership: reading `metadata.managedFields`.

This module owns the interpretation of FieldsV1 tries (`f:`, `k:`, `v:`, `i:`, `.`)
against a concrete object: which existing leaf fields each manager owns, and which
of them an apply by another field manager would conflict on. Paths come back twice:
as a `FieldPath` into the object (for line lookup) and as the text the API server
prints in conflict messages (`.spec.template.spec.containers[name="web"].image`).

Rendering follows structured-merge-diff's `PathElement.String()`:
- a field is `.` + name, verbatim: keys holding `.` or `/` are NOT escaped, exactly as
  the server prints them (`.metadata.annotations.example.com/owner`), so the text is
  ambiguous; use the `FieldPath` when you need structure;
- key fields are sorted by name, values printed like Go's `value.ToString`: strings as
  Go `%q`, and numbers as Go `%v` of a float64 (the server decodes `k:`/`v:` JSON
  numbers as float64, so `80` prints `80` but `1000000` prints `1e+06`);
- map values inside `k:`/`v:` print as concatenated `name=value` with names sorted
  (the server iterates a Go map there, so its order is not fixed).

Live-object bookkeeping (`status`, `metadata.managedFields`, `resourceVersion`, `uid`,
`creationTimestamp`, `generation`) is left out of `conflicts`; another rule reports it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from .model import FieldPath

OwnedField = tuple[FieldPath, str]

_SKIPPED_METADATA = frozenset(
    {"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"}
)
_GO_ESCAPES = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
    "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\",
}
_MISSING = object()


class ManagedFieldsError(ValueError):
    """`metadata.managedFields` or a FieldsV1 trie is malformed."""


class ManagerEntry(NamedTuple):
    """One managedFields entry with the leaf fields it owns that exist in the object."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    fields: list[OwnedField]


class Conflict(NamedTuple):
    """A field an apply by another field manager would conflict on."""

    path: FieldPath
    ssa_path: str
    manager: str
    operation: str
    api_version: str
    subresource: str


def _parse_key(key: Any) -> tuple[str, Any]:
    """Split a FieldsV1 key into (kind, argument); kind is one of `f k v i .`."""
    if key == ".":
        return ".", None
    if not isinstance(key, str) or len(key) < 2 or key[1] != ":" or key[0] not in "fkvi":
        raise ManagedFieldsError(f"unknown FieldsV1 key {key!r}")
    kind, rest = key[0], key[2:]
    if kind == "f":
        return kind, rest
    if kind == "i":
        if not rest.isdigit() or not rest.isascii():
            raise ManagedFieldsError(f"bad list index in FieldsV1 key {key!r}")
        return kind, int(rest)
    import json  # here, not at the top: `fieldwarden lint` starts without json and decimal

    try:
        arg = json.loads(rest)
    except ValueError as exc:
        raise ManagedFieldsError(f"bad JSON in FieldsV1 key {key!r}: {exc}") from None
    if kind == "k" and (not isinstance(arg, dict) or not arg):
        raise ManagedFieldsError(f"FieldsV1 key {key!r} needs a non-empty JSON object")
    return kind, arg


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: booleans never equal numbers, 80 equals 80.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    return type(a) is type(b) and a == b


def _go_float(x: float) -> str:
    """Go's `%v` of a float64: shortest digits, exponent form outside 1e-4 <= |x| < 1e6."""
    if not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("+Inf" if x > 0 else "-Inf")
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    from decimal import Decimal

    shortest = Decimal(repr(x)).normalize()
    sign, digits, exponent = shortest.as_tuple()
    mantissa = "".join(map(str, digits))
    exp10 = len(mantissa) + int(exponent) - 1
    if -4 <= exp10 < 6:
        return format(shortest, "f")
    head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{head}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"


def go_quote(text: str) -> str:
    """Go's `%q` of a string."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _value_text(value: Any) -> str:
    """A `k:`/`v:` value as structured-merge-diff's `value.ToString` prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        try:
            return _go_float(float(value))
        except OverflowError:
            return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_value_text(v) for v in value) + "]"
    return "".join(f"{k}={_value_text(value[k])}" for k in sorted(value))


def _select(kind: str, arg: Any, node: Any) -> tuple[Any, str | int, str]:
    """Resolve one path element in `node`: (child or _MISSING, FieldPath step, ssa text)."""
    if kind == "f":
        found = isinstance(node, Mapping) and arg in node
        return (node[arg] if found else _MISSING), arg, "." + arg
    items = node if isinstance(node, list) else []
    if kind == "i":
        index, text = arg, f"[{arg}]"
    elif kind == "k":
        text = "[" + ",".join(f"{k}={_value_text(arg[k])}" for k in sorted(arg)) + "]"
        index = next(
            (n for n, item in enumerate(items) if isinstance(item, Mapping)
             and all(k in item and _json_equal(item[k], v) for k, v in arg.items())),
            -1,
        )
    else:
        text = f"[={_value_text(arg)}]"
        index = next((n for n, item in enumerate(items) if _json_equal(item, arg)), -1)
    if 0 <= index < len(items):
        return items[index], index, text
    return _MISSING, index, text


def _walk(trie: Any, node: Any, path: FieldPath, text: str, out: list[OwnedField]) -> None:
    if not isinstance(trie, Mapping):
        raise ManagedFieldsError(f"FieldsV1 at {text or '<root>'!r} is not an object")
    for key, sub in trie.items():
        kind, arg = _parse_key(key)
        if not isinstance(sub, Mapping):
            raise ManagedFieldsError(f"FieldsV1 key {key!r} must map to an object")
        if kind == ".":
            continue
        child, step, label = _select(kind, arg, node)
        if sub:
            _walk(sub, child, path + (step,), text + label, out)
        elif child is not _MISSING:
            out.append((path + (step,), text + label))


def owned_fields(fields_v1: Mapping[str, Any], obj: Mapping[str, Any]) -> list[OwnedField]:
    """Owned leaves of a FieldsV1 trie that exist in `obj`, as (path, ssa text), in trie order.

    `.` entries (the item or map itself) are not reported; malformed keys anywhere
    in the trie raise ManagedFieldsError, even under items absent from `obj`.
    """
    out: list[OwnedField] = []
    _walk(fields_v1, obj, (), "", out)
    return out


def _text_field(entry: Mapping[str, Any], name: str, where: str) -> str:
    value = entry.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ManagedFieldsError(f"{where}.{name} must be a string, got {value!r}")
    return value


def field_managers(obj: Mapping[str, Any]) -> list[ManagerEntry]:
    """The FieldsV1 entries of `obj`'s metadata.managedFields, in document order.

    Entries whose fieldsType is not `FieldsV1` (including a missing one) or
    that have no fieldsV1 are skipped.
    """
    metadata = obj.get("metadata")
    entries = metadata.get("managedFields") if isinstance(metadata, Mapping) else None
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ManagedFieldsError("metadata.managedFields must be a list")
    result = []
    for n, entry in enumerate(entries):
        where = f"metadata.managedFields[{n}]"
        if not isinstance(entry, Mapping):
            raise ManagedFieldsError(f"{where} must be an object")
        if entry.get("fieldsType") != "FieldsV1" or entry.get("fieldsV1") is None:
            continue
        manager, operation, api_version, subresource = (
            _text_field(entry, k, where)
            for k in ("manager", "operation", "apiVersion", "subresource")
        )
        try:
            fields = owned_fields(entry["fieldsV1"], obj)
        except ManagedFieldsError as exc:
            raise ManagedFieldsError(f"{where} ({manager!r}): {exc}") from None
        result.append(ManagerEntry(manager, operation, api_version, subresource, fields))
    return result


def _reported_elsewhere(path: FieldPath) -> bool:
    if path[:1] == ("status",):
        return True
    return len(path) > 1 and path[0] == "metadata" and path[1] in _SKIPPED_METADATA


def conflicts(obj: Mapping[str, Any], own_managers: Collection[str]) -> list[Conflict]:
    """Fields of `obj` owned by managers not named in `own_managers`.

    Ordered by managedFields entry, then trie order. A field also owned by one of
    `own_managers` is still reported: an apply changing it would conflict. A bare
    string for `own_managers` is taken as one manager name, not as characters.
    """
    mine = frozenset([own_managers] if isinstance(own_managers, str) else own_managers)
    return [
        Conflict(path, text, e.manager, e.operation, e.api_version, e.subresource)
        for e in field_managers(obj)
        if e.manager not in mine
        for path, text in e.fields
        if not _reported_elsewhere(path)
    ]
