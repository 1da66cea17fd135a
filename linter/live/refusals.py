"""Refusals that name no field, reworded as server-side apply words them: a field path, then the error.

What client-side `kubectl apply` sends (with `fieldValidation=Strict`, as kubectl does) is
refused, when the API server cannot decode it, in words that name no field (v1.32):

- a strategic merge patch: one cause on `patch` quoting the whole patch as Go prints a map,
  `patch: Invalid value: "map[metadata:map[...] spec:map[replicas:two]]": unrecognized type: int32`,
  or `...: strict decoding error: unknown field "spec.bogus", unknown field "spec.other"`;
- a create (a new object), 400 BadRequest without causes: `Deployment in version "v1" cannot be
  handled as a Deployment: strict decoding error: unknown field "spec.bogus"`, or `json: cannot
  unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort
  of type int32`.

`readable_refusal` turns each into causes with a field, as the server-side mode's are
(`.spec.replicas: expected numeric ...`): the unknown field as the server named it; for a wrong
type, the first field of the manifest whose value has the wrong JSON type for its schema (the
API's own OpenAPI, as client_apply.py reads it) or, for a create, the one the message names,
its value shown as JSON. The patch dump is dropped; the rest stays in the API server's words.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

from ...policies.live import LiveCase, show_at, ssa_text, status_message, value_at
from ...policies.model import FieldPath
from .client_apply import BUILTIN_GROUPS, Schema, root_schema

_PATCH_DUMP = re.compile(r'Invalid value: "(?:[^"\\]|\\.)*": (.*)$', re.S)
_UNDECODABLE = re.compile(r" cannot be handled as an? [\w.]+: (.*)$", re.S)
_STRICT = re.compile(r"strict decoding error: (.*)$", re.S)
_UNKNOWN = re.compile(r'(?:unknown|duplicate) field "((?:[^"\\]|\\.)*)"')
_UNRECOGNIZED = re.compile(r"unrecognized type: (\w+)$")
_UNMARSHAL = re.compile(r"json: cannot unmarshal (\w+) into Go struct field \w+\.([\w.]+) of type (\w+)")

# a Go type the decoder wanted -> the OpenAPI type of such a field
_GO_TYPES = {"int32": "integer", "int64": "integer", "int": "integer", "float64": "number", "bool": "boolean",
             "string": "string"}
# the JSON type the decoder found -> Python types of a manifest value
_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "number": (int, float), "bool": (bool,),
                                            "object": (dict,), "array": (list,)}


def schema_for(api_version: str, kind: str, documents: Mapping[str, Mapping[str, Any]]) -> Schema | None:
    """The schema of a built-in kind from the cluster's OpenAPI v3 documents (None: none read)."""
    group, _, version = api_version.rpartition("/")
    document = documents.get(api_version) if group in BUILTIN_GROUPS else None
    return root_schema(document, group, version, kind) if document is not None else None


def readable_refusal(status: Mapping[str, Any], manifest: Mapping[str, Any], schema: Schema | None,
                     sensitive: tuple[str, ...] = ()) -> dict[str, Any]:
    """`status` with a patch dump or a decoding error reworded as causes with fields (else unchanged); values of
    a Secret's data and of `sensitive` fields (KIND:PATH, cluster.sensitive-fields) are shown as <redacted>."""
    hidden = LiveCase(manifest=manifest, live=None, result=None, refusal=None, sensitive=sensitive)
    said = _said(status)
    if said is None:
        return dict(status)
    found = []
    strict = _STRICT.search(said)
    if strict:
        for part in re.split(r", (?=(?:unknown|duplicate) field )", strict.group(1)):
            named = _UNKNOWN.fullmatch(part.strip())
            found.append((named.group(1) if named else "", f"strict decoding error: {part.strip()}"))
    elif _UNRECOGNIZED.search(said):
        wanted = _GO_TYPES.get(_UNRECOGNIZED.search(said).group(1), "")  # type: ignore[union-attr]
        path = mistyped(manifest, schema, wanted) if schema is not None and wanted else None
        found.append(_typed(hidden, path, said))
    elif _UNMARSHAL.search(said):
        match = _UNMARSHAL.search(said)
        assert match is not None
        path = _named_leaf(manifest, match.group(2).split("."), _JSON_TYPES.get(match.group(1), ()))
        found.append(_typed(hidden, path, said))
    else:
        found.append(("", said))
    causes = [{"reason": "FieldValueInvalid", "message": message, "field": field} for field, message in found]
    reworded = {key: value for key, value in status.items() if key not in ("message", "details")}
    reworded.update(code=422, reason="Invalid", message="; ".join(f"{f}: {m}" if f else m for f, m in found),
                    details={**(status.get("details") or {}), "causes": causes})
    return reworded


def _said(status: Mapping[str, Any]) -> str | None:
    """The error of a refusal that quotes the patch or cannot decode the object (None: another refusal)."""
    details = status.get("details")
    for cause in (details.get("causes") or []) if isinstance(details, Mapping) else []:
        if isinstance(cause, Mapping) and cause.get("field") == "patch":
            dumped = _PATCH_DUMP.match(str(cause.get("message") or ""))
            if dumped:
                return dumped.group(1)
    undecodable = _UNDECODABLE.search(status_message(status))
    if undecodable and status.get("code") == 400:
        return undecodable.group(1)
    return None


def _typed(case: LiveCase, path: FieldPath | None, said: str) -> tuple[str, str]:
    """(field, message) of a wrong type: the field in server-side apply's spelling, and its value."""
    if path is None:
        return "", said
    return ssa_text(case.manifest, path), f"Invalid value: {show_at(case, path, value_at(case.manifest, path))}: {said}"


def mistyped(manifest: Mapping[str, Any], schema: Schema, wanted: str) -> FieldPath | None:
    """The first field of the manifest (in its order) whose schema type is `wanted` and whose value is not of it."""
    return _walk(manifest, schema, (), wanted)


def _walk(value: Any, schema: Schema, path: FieldPath, wanted: str) -> FieldPath | None:
    node = schema.node
    if isinstance(value, Mapping):
        for key, inner in value.items():
            sub = schema.field(str(key))
            found = _walk(inner, sub, path + (key,), wanted) if sub is not None else None
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        items = schema.items()
        for index, inner in enumerate(value):
            found = _walk(inner, items, path + (index,), wanted) if items is not None else None
            if found is not None:
                return found
        return None
    if node.get("type") != wanted or node.get("x-kubernetes-int-or-string") or value is None:
        return None
    fits = {"integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool),
            "boolean": isinstance(value, bool), "string": isinstance(value, str)}
    return None if fits.get(wanted, True) else path


def _named_leaf(manifest: Mapping[str, Any], names: list[str], types: tuple[type, ...]) -> FieldPath | None:
    """The first field of the manifest at the dotted path a decoding error names (list indices left out)
    whose value has the JSON type it found."""
    for path, value in _fields(manifest):
        if [step for step in path if isinstance(step, str)] == names and isinstance(value, types):
            if not (isinstance(value, bool) and bool not in types):
                return path
    return None


def _fields(obj: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any]]:
    """Every field of a value with its path, parents before their children (lists of scalars too)."""
    if path:
        yield path, obj
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _fields(value, path + (key,))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _fields(value, path + (index,))

