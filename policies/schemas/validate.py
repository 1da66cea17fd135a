"""Validate an object against a compiled schema (policies/schemas/form.py): pure, no I/O.

`validate(compiled, obj)` returns one Problem per fault, each with the path of the field a finding
stands on (an unknown field's key; the key of a value of the wrong type or outside its enum; the
parent that lacks a required field) and the field's name as the API server spells it
(`spec.template.spec.containers[0].ports[0].containerPort`; a map key in brackets,
`metadata.labels[app]`).

Why a structural walk in Python over the compiled form, not a compiled JSON Schema validator:
the walk visits each field of the object once, with one dict lookup per key, and builds a path
only where a problem is found. Measured (CPU time, this machine, 1.32 schemas): 0.054 ms per
Deployment, against 1.08 ms for `jsonschema` (already a dependency; Draft 2020-12 with its
referencing registry); over the 20,000-object corpus (bench/.corpus) 0.27 s, against 1.70 s to
only compose its YAML; in the lint (bench/lint_speed.py row b, at 9415aed) 3.56 s against 2.97 s
without FW601/FW602, 1.19x, custom resources' CRD lookups included. `fastjsonschema` (PyPI) generates Python source from the schema and execs it:
a CRD's schema comes from the linted tree, and nothing from there may become code.
`jsonschema-rs` (PyPI) is a compiled wheel per platform; like `jsonschema`, it reports an
object's unknown fields as one error (`additionalProperties`) and paths as JSON pointers, so a
second walk would still be needed for one finding per field in the API server's spelling, and
the walk is not where a lint's time goes.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from .form import Compiled
else:
    from ..records import NamedTuple

# The compiled form's node layout (form.py compiles to it, and imports these from here).
OBJECT, ARRAY, STRING, INTEGER, NUMBER, BOOLEAN, NULL = 1, 2, 4, 8, 16, 32, 64  # type bits
ANY, DENY = -1, -2  # a node index standing for "anything goes" / "nothing may be here"
TYPES, PROPERTIES, REQUIRED, ITEMS, MORE, ENUM, FLAGS = range(7)  # the slots of a node
EMBEDDED = 1  # FLAGS bit: an x-kubernetes-embedded-resource
EMBEDDED_FIELDS = ("apiVersion", "kind", "metadata")  # what EMBEDDED allows undeclared

UNKNOWN, TYPE, REQUIRED_FIELD, ENUM_VALUE = "unknown", "type", "required", "enum"
MAX_PROBLEMS = 100  # per object: a file of another format read as a manifest stops here


class Problem(NamedTuple):
    """One way an object does not fit its schema."""

    path: tuple[str | int, ...]  # where the finding stands (see the module docstring)
    kind: str  # UNKNOWN, TYPE, REQUIRED_FIELD or ENUM_VALUE
    field: str  # the field concerned, as the API server names it (a missing field: its own path)
    expected: str  # what the schema wants: "integer", "string or integer", the enum values...
    got: str  # what the object has: a type name ("string"), or the value for an enum problem


try:  # the common case, an object with no problem, settled in C (built where a compiler is: setup.py)
    from ._fits import fits as _fits  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    _fits = None


def compiled_fit() -> bool:
    """Whether the C check (_fits.c) is there."""
    return _fits is not None


def validate(compiled: Compiled, obj: Any, limit: int = MAX_PROBLEMS) -> list[Problem]:
    """The problems of `obj` against `compiled` (form.compile_schema's), at most `limit`."""
    if _fits is not None and compiled.__class__ is list and _fits(compiled, obj):
        return []  # (where it says no, the walk below finds the problems and their paths)
    problems: list[Problem] = []
    _walk(compiled, 0, obj, (), problems, limit)
    return problems


def describe(problem: Problem) -> str:
    """A sentence in the API server's words where it has them."""
    if problem.kind == UNKNOWN:
        return f'unknown field "{problem.field}"'
    if problem.kind == REQUIRED_FIELD:
        return f"{problem.field}: Required value"
    if problem.kind == ENUM_VALUE:
        return f"{problem.field}: Unsupported value: {problem.got}: supported values: {problem.expected}"
    return f"{problem.field}: expected {problem.expected}, got {problem.got}"


_NAMES = ((OBJECT, "object"), (ARRAY, "array"), (STRING, "string"), (INTEGER, "integer"), (NUMBER, "number"),
          (BOOLEAN, "boolean"))


def type_names(bits: int) -> str:
    """`string or integer` for a bit set (null left out: it is never what a person means to write)."""
    names = [name for bit, name in _NAMES if bits & bit and not (bit == INTEGER and bits & NUMBER)]
    return " or ".join(names) if names else "null"


def _bits(value: Any) -> int:
    """The type bits a value satisfies (an integer is a number too; YAML's timestamps are strings to
    kubectl, which converts YAML to JSON before sending it)."""
    cls = value.__class__
    if cls is str:
        return STRING
    if cls is dict:
        return OBJECT
    if cls is list:
        return ARRAY
    if cls is bool:
        return BOOLEAN
    if cls is int:
        return INTEGER | NUMBER
    if cls is float:
        return INTEGER | NUMBER if value.is_integer() else NUMBER
    if value is None:
        return NULL
    return STRING  # datetime/date from a YAML timestamp: a string in JSON


_SCALARS = {str: STRING, int: INTEGER | NUMBER, bool: BOOLEAN}  # (the classes _bits answers at once)


def _got(bits: int) -> str:
    for bit, name in ((NULL, "null"), (BOOLEAN, "boolean"), (INTEGER, "integer"), (NUMBER, "number"),
                      (STRING, "string"), (OBJECT, "object"), (ARRAY, "array")):
        if bits & bit:
            return name
    return "?"


def _walk(compiled: Compiled, index: int, value: Any, path: tuple[str | int, ...], problems: list[Problem],
          limit: int) -> None:
    node = compiled[index]
    types = node[TYPES]
    if types:
        bits = _bits(value)
        if not bits & types:
            problems.append(Problem(path, TYPE, api_path(compiled, path), type_names(types), _got(bits)))
            return
    if value is None:
        return
    enum = node[ENUM]
    if enum is not None and value not in enum:
        problems.append(Problem(path, ENUM_VALUE, api_path(compiled, path), ", ".join(_quote(v) for v in enum), _quote(value)))
    cls = value.__class__
    if cls is dict:
        properties = node[PROPERTIES]
        more = node[MORE]
        for key, sub in value.items():
            if len(problems) >= limit:
                return
            child = properties.get(key)
            if child is None:
                child = more
                if child == DENY:
                    if node[FLAGS] & EMBEDDED and key in EMBEDDED_FIELDS:
                        continue
                    problems.append(Problem(path + (key,), UNKNOWN, api_path(compiled, path + (key,)), "", ""))
                    continue
                if child == ANY:
                    continue
            scalar = _SCALARS.get(sub.__class__)
            if scalar is not None:  # most values: a string or a number that fits, settled without a call
                target = compiled[child]
                if (not target[TYPES] or scalar & target[TYPES]) and target[ENUM] is None:
                    continue
            _walk(compiled, child, sub, path + (key,), problems, limit)
        for name in node[REQUIRED]:
            if name not in value:
                problems.append(Problem(path, REQUIRED_FIELD, api_path(compiled, path + (name,)), "", ""))
    elif cls is list:
        items = node[ITEMS]
        if items != ANY:
            target = compiled[items]
            for position, item in enumerate(value):
                if len(problems) >= limit:
                    return
                scalar = _SCALARS.get(item.__class__)
                if scalar is not None and (not target[TYPES] or scalar & target[TYPES]) and target[ENUM] is None:
                    continue
                _walk(compiled, items, item, path + (position,), problems, limit)


def _quote(value: Any) -> str:
    text = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def known_fields(compiled: Compiled, path: tuple[str | int, ...]) -> list[str]:
    """The fields the schema declares at `path` (an object's), for "did you mean" hints."""
    index = 0
    for part in path:
        if index < 0:
            return []
        node = compiled[index]
        if isinstance(part, int):
            index = node[ITEMS]
        else:
            child = node[PROPERTIES].get(part)
            index = child if child is not None else node[MORE]
    return sorted(compiled[index][PROPERTIES]) if index >= 0 else []


def api_path(compiled: Compiled, path: tuple[str | int, ...]) -> str:
    """`spec.containers[0].image`, `metadata.labels[app]`: a path as the API server's field errors spell
    it (a map's key in brackets: the schema, walked along the path, tells a map from a field)."""
    out: list[str] = []
    index = 0
    for part in path:
        node = compiled[index] if index >= 0 else None
        if isinstance(part, int):
            out.append(f"[{part}]")
            index = node[ITEMS] if node is not None else ANY
            continue
        child = node[PROPERTIES].get(part) if node is not None else None
        if child is None and node is not None and node[MORE] >= 0:
            out.append(f"[{part}]")
            index = node[MORE]
            continue
        out.append(f".{part}" if out else part)
        index = child if child is not None else ANY
    return "".join(out)
