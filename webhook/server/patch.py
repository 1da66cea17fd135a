"""The one place JSON patches are made: an RFC 6902 diff of two plain JSON values.

Rules never write patch operations; they change a copy of the object and the webhook
diffs the copy against the request's object once. The diff:

- walks mappings key by key (`remove`, `add`, or a walk into a kept key), escaping
  `~` and `/` in keys as JSON Pointer requires (`~0`, `~1`);
- turns items appended to a list into `add` operations at `/-`, leaving the existing
  items alone (another webhook or controller may have written them; and an append is
  what a reader of the patch expects), and walks lists of unchanged length item by
  item; any other list change replaces the list (and so does any change to a mapping
  with a key `-`, which some implementations misread);
- compares with JSON's types, not Python's: `true` is not `1`, `1` is not `1.0`;
- never meets Python's recursion limit: a walk recurses at most 64 levels and leaves
  deeper pairs for a walk of their own, and the comparisons use a stack, so a value
  nested as deep as orjson parses (1024 levels), or deeper, is diffed like any other.

Applying the operations to the source gives the target (tests/webhook/server/test_patch.py
checks it with `jsonpatch` over generated values).
"""

from __future__ import annotations

from typing import Any

import orjson

Operation = dict[str, Any]


def escape(key: str) -> str:
    """A mapping key as one JSON Pointer reference token."""
    return key.replace("~", "~0").replace("/", "~1")


def diff(source: Any, target: Any) -> list[Operation]:
    """RFC 6902 operations that turn `source` into `target` (empty when they are equal)."""
    ops: list[Operation] = []
    if not _equal(source, target):
        deeper: _Pending = []
        _diff_unequal(source, target, "", ops, deeper, 0)
        while deeper:
            old, new, path = deeper.pop()
            _diff_unequal(old, new, path, ops, deeper, 0)
    return ops


def same(a: Any, b: Any) -> bool:
    """JSON equality: like `==`, but booleans, integers and floats are told apart."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is not dict and kind is not list:
        return bool(a == b)
    pending = [(a, b)]  # (a stack, not recursion: values may nest deeper than Python recurses)
    while pending:
        a, b = pending.pop()
        if len(a) != len(b):
            return False
        if type(a) is dict:
            if a.keys() != b.keys():
                return False
            pairs = zip(a.values(), map(b.__getitem__, a))
        else:
            pairs = zip(a, b)
        for value, other in pairs:
            if value is other:
                continue
            kind = type(value)
            if kind is not type(other):
                return False
            if kind is dict or kind is list:
                pending.append((value, other))
            elif value != other:
                return False
    return True


_ABSENT = object()
# How deep one walk recurses; pairs below wait in a list for a walk of their own, so
# nesting as deep as orjson parses (1024 levels) never meets Python's recursion limit.
_MAX_RECURSION = 64

_Pending = list[tuple[Any, Any, str]]


def _equal(a: Any, b: Any) -> bool:
    """A fast filter: True when `a` and `b` are equal JSON values; False if not, or maybe not.

    `==` (in C) finds most differences; for values it finds equal, serialising both (in
    C) tells `true` from `1` and `1` from `1.0` without walking them in Python. Equal
    bytes mean equal JSON values. The rest (unequal bytes of equal values, keys in
    another order; a value nested too deep for `==` or orjson) only sends the caller into
    the values, whose walk finds the equal parts equal (no operation).
    """
    if a is b:
        return True
    try:
        if a != b:
            return False
    except RecursionError:
        return False
    kind = type(a)
    if kind is not dict and kind is not list:
        return kind is type(b)
    try:
        return bool(orjson.dumps(a) == orjson.dumps(b))
    except TypeError:  # integers beyond 64 bits, nesting beyond orjson's 254 levels
        return False


def _diff_unequal(
    source: Any, target: Any, path: str, ops: list[Operation], deeper: _Pending, depth: int
) -> None:
    """The operations for two values `_equal` found different; pairs past `_MAX_RECURSION` go to `deeper`."""
    if isinstance(source, dict) and isinstance(target, dict):
        if "-" in source or "-" in target:
            # `/-` reads as "after the last item" to some implementations (python-jsonpatch)
            # even in an object; replacing the whole mapping means the same everywhere.
            if not same(source, target):
                ops.append({"op": "replace", "path": path, "value": target})
            return
        if not source.keys() <= target.keys():
            for key in source:
                if key not in target:
                    ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        for key, value in target.items():
            old = source.get(key, _ABSENT)
            if old is value:
                continue  # (a part a Draft never wrote to: the same object)
            if old is _ABSENT:
                ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})
                continue
            kind = type(old)
            if kind is type(value) and kind is not dict and kind is not list:
                if old == value:
                    continue  # (what `_equal` says, without the call: most keys hold equal scalars)
            elif _equal(old, value):
                continue
            _descend(old, value, f"{path}/{escape(key)}", ops, deeper, depth)
    elif isinstance(source, list) and isinstance(target, list):
        _diff_list(source, target, path, ops, deeper, depth)
    elif not same(source, target):
        ops.append({"op": "replace", "path": path, "value": target})


def _descend(source: Any, target: Any, path: str, ops: list[Operation], deeper: _Pending, depth: int) -> None:
    """Diff two unequal children now, or queue them in `deeper` past `_MAX_RECURSION`."""
    if depth < _MAX_RECURSION:
        _diff_unequal(source, target, path, ops, deeper, depth + 1)
    else:
        deeper.append((source, target, path))


def _diff_list(
    source: list[Any], target: list[Any], path: str, ops: list[Operation], deeper: _Pending, depth: int
) -> None:
    if len(source) == len(target):
        for index, (old, new) in enumerate(zip(source, target)):
            if _equal(old, new):
                continue
            _descend(old, new, f"{path}/{index}", ops, deeper, depth)
    elif len(source) < len(target) and all(a is b or same(a, b) for a, b in zip(source, target)):
        ops.extend({"op": "add", "path": f"{path}/-", "value": item} for item in target[len(source) :])
    else:
        ops.append({"op": "replace", "path": path, "value": target})
