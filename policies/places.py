"""Where a live finding lands, and the API server's Go value dumps made readable (pure, plain dicts).

The API server names the field it checked (`spec.selector`), often a parent of what the manifest
changed (`matchLabels: {app: web2}`). A live finding goes on the changed value's own line: under
the error's path, the deepest field whose manifest value differs from the live object's (the
first in the manifest's order when several do); the path itself when nothing under it differs,
when the manifest has only a parent of it, or for a new object.

Validation messages quote the value they refused as Go prints it (`Invalid value:
v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}, ...}`); `readable` puts the JSON of
that value in its place: the manifest's value at the error's path, else the Go literal itself
read as JSON where it is a plain map or list of strings and numbers (else the dump stays). The
rest of the message stays in the API server's words.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .live import MISSING, covered, follow, manifest_path, show_at, value_at
from .model import FieldPath

if TYPE_CHECKING:
    from .live import LiveCase

SHOWN = 200  # characters of a value put in place of a Go dump
QUOTED_MIN = 4  # a shorter value ("web", "80") a denial mentions is no evidence of the field it is about


# --- the changed field --------------------------------------------------------------------------

def changed_field(manifest: Mapping[str, Any], live: Mapping[str, Any] | None, path: FieldPath) -> FieldPath:
    """Under `path` (a path of the manifest), the deepest field whose value differs from `live`'s.

    The first in the manifest's order when several differ; `path` itself when none does, when the
    manifest has no value there, or when `live` has no such field (a new object, a new field).
    Values the server adds around the manifest's (defaults) are no difference.
    """
    wanted = value_at(manifest, path)
    if live is None or wanted is MISSING:
        return path
    live_path = follow(live, path, manifest)
    if live_path is None:
        return path
    found = _differs(wanted, value_at(live, live_path), path)
    return path if found is None else found


def _differs(wanted: Any, actual: Any, path: FieldPath) -> FieldPath | None:
    """The deepest path under `path` where `wanted` is not in `actual` (None: it all is)."""
    if covered(wanted, actual):
        return None
    if isinstance(wanted, Mapping) and isinstance(actual, Mapping):
        for key, value in wanted.items():
            if value is None:
                continue
            if key not in actual:
                return path + (key,)
            found = _differs(value, actual[key], path + (key,))
            if found is not None:
                return found
        return path
    if isinstance(wanted, list) and isinstance(actual, list) and all(isinstance(item, Mapping) for item in wanted):
        for index, item in enumerate(wanted):
            other = follow(actual, (index,), wanted)  # by merge key (`name`, ...), else by position
            if other is None:
                return path + (index,)
            found = _differs(item, actual[int(other[0])], path + (index,))
            if found is not None:
                return found
    return path


def field_steps(field: str) -> list[Any]:
    """An error's field path as steps, in either spelling: validation's (`spec.containers[0].image`,
    `metadata.labels[app]`) or server-side apply's (`.spec.containers[name="web"].ports[containerPort=80]`,
    a key selector given as a dict of its keys)."""
    steps: list[Any] = []
    for name, bracket in re.findall(r"([^.\[\]]+)|\[((?:[^\]\"]|\"(?:[^\"\\]|\\.)*\")*)\]", field.strip().lstrip(".")):
        if name:
            steps.append(name)
        elif re.fullmatch(r"\d+", bracket):
            steps.append(int(bracket))
        elif re.match(r"[\w.-]+=", bracket):
            selector = {}
            for key, value in re.findall(r"([\w.-]+)=(\"(?:[^\"\\]|\\.)*\"|[^,]*)", bracket):
                try:
                    selector[key] = json.loads(value)
                except ValueError:
                    selector[key] = value
            steps.append(selector)
        else:
            steps.append(bracket)
    return steps


def _select(items: Sequence[Any], selector: Mapping[str, Any]) -> int | None:
    """The index of the list item a server-side-apply key selector names (keys the item lacks are defaults)."""
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        shared = [key for key in selector if key in item]
        if shared and all(str(item[key]) == str(selector[key]) for key in shared):
            return index
    return None


def resolved(manifest: Any, steps: Sequence[Any]) -> FieldPath:
    """The longest prefix of `steps` (key selectors resolved) that the manifest has, as its path."""
    out: list[str | int] = []
    node = manifest
    for step in steps:
        if isinstance(step, dict):
            index = _select(node, step) if isinstance(node, list) else None
            if index is None:
                break
            out.append(index)
            node = node[index]
        elif isinstance(step, int):
            if not isinstance(node, list) or not 0 <= step < len(node):
                break
            out.append(step)
            node = node[step]
        else:
            if not isinstance(node, Mapping) or step not in node:
                break
            out.append(step)
            node = node[step]
    return tuple(out)


def error_path(case: LiveCase, field: str) -> tuple[FieldPath, bool]:
    """An error's field as a path of the manifest, and whether the manifest has the whole of it."""
    steps = field_steps(field)
    if any(isinstance(step, dict) for step in steps):
        path = resolved(case.manifest, steps)
    else:
        path = manifest_path(case, field)
    return path, len(path) == len(steps) and value_at(case.manifest, path) is not MISSING


def cause_place(case: LiveCase, field: str, changed: bool = True) -> FieldPath:
    """Where a finding about an error on `field` goes: the changed field under it (see the module's docstring);
    with `changed` False (an error about the field's presence: Forbidden, Required) the field itself."""
    if not field:
        return ()
    path, whole = error_path(case, field)
    return changed_field(case.manifest, case.live, path) if whole and changed else path


def place_under(case: LiveCase, path: FieldPath, field: str | FieldPath) -> FieldPath:
    """`cause_place` for `path`, the manifest's own path to the error's `field` (a text, or a path of the
    live object) or to the nearest parent of it that the manifest has (then `path` stays)."""
    steps = field_steps(field) if isinstance(field, str) else field
    whole = len(path) == len(steps) and value_at(case.manifest, path) is not MISSING
    return changed_field(case.manifest, case.live, path) if whole else path


# --- the field an admission denial quotes ------------------------------------------------------------

_IDENTITY: tuple[FieldPath, ...] = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))
_DENIAL = re.compile(r"denied (?:the )?request: ")


def quoted_field(manifest: Mapping[str, Any], message: str) -> FieldPath:
    """The field of the manifest whose value a denial's own words quote (the longest such value, the first in
    the manifest's order among equals; its identity fields aside); () when none is quoted."""
    from .live import leaves

    said = _DENIAL.split(message, maxsplit=1)[-1]
    best: tuple[int, FieldPath] = (0, ())
    for path, value in leaves(manifest):
        if path in _IDENTITY or not isinstance(value, str) or len(value) < QUOTED_MIN or len(value) <= best[0]:
            continue
        if re.search(rf"(?<![\w./:-]){re.escape(value)}(?![\w./:-])", said):
            best = (len(value), path)
    return best[1]


# --- Go values made readable ---------------------------------------------------------------------

_GO_LITERAL = re.compile(r"(?:\(\*[\w.]+\)\(nil\)|&?(?:\[\]|map\[[^\]\s]*\]|\*)*[\w.]*\{)")
_INVALID = "Invalid value: "


def go_literal_end(text: str, start: int) -> int:
    """The end of the Go composite literal (`T{...}`) that starts at `start` (-1: it does not close)."""
    depth, index, quoted = 0, start, False
    while index < len(text):
        char = text[index]
        if quoted:
            if char == "\\":
                index += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return -1


def readable(case: LiveCase, field: str, message: str) -> str:
    """`message` (a cause's, about `field`) with a Go dump after `Invalid value: ` replaced by JSON."""
    at = message.find(_INVALID)
    if at < 0:
        return message
    start = at + len(_INVALID)
    head = _GO_LITERAL.match(message, start)
    if head is None or head.group(0).endswith(")"):
        return message
    end = go_literal_end(message, start)
    if end < 0:
        return message
    shown = _value_text(case, field, message[start:end])
    return message if shown is None else message[:start] + shown + message[end:]


def _value_text(case: LiveCase, field: str, literal: str) -> str | None:
    """The refused value as JSON: the manifest's, else the literal's own (None: neither is known)."""
    if field:
        path, whole = error_path(case, field)
        if whole:
            return show_at(case, path, value_at(case.manifest, path), SHOWN)
    plain = go_plain_value(literal)
    if plain is MISSING:
        return None
    return show_at(case, tuple(field_steps(field)) if field else (), plain, SHOWN)


_SCALAR = r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false'


def go_plain_value(literal: str) -> Any:
    """A Go literal of a map or slice of strings, numbers and booleans as a JSON value (MISSING: not one)."""
    found = re.fullmatch(r"(map\[\w+\]\w+|\[\]\w+)\{(.*)\}", literal, re.S)
    if found is None:
        return MISSING
    body = found.group(2).strip()
    if found.group(1).startswith("map"):
        pairs = re.findall(rf"({_SCALAR}):({_SCALAR})(?:, |$)", body)
        rebuilt = ", ".join(f"{k}:{v}" for k, v in pairs)
        if rebuilt != body:
            return MISSING
        return {str(_scalar(k)): _scalar(v) for k, v in pairs}
    items = re.findall(rf"({_SCALAR})(?:, |$)", body)
    if ", ".join(items) != body:
        return MISSING
    return [_scalar(item) for item in items]


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
