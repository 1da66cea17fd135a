"""The one place JSON patches are made: an RFC 6902 diff of two plain JSON values.

Rules never write patch operations; they change a copy of the object and the webhook
diffs the copy against the request's object once. The diff:

- walks mappings key by key (`remove`, `add`, or recursion into a kept key), escaping
  `~` and `/` in keys as JSON Pointer requires (`~0`, `~1`);
- turns items appended to a list into `add` operations at `/-`, leaving the existing
  items alone (another webhook or controller may have written them; and an append is
  what a reader of the patch expects), and walks lists of unchanged length item by
  item; any other list change replaces the list (and so does any change to a mapping
  with a key `-`, which some implementations misread);
- compares with JSON's types, not Python's: `true` is not `1`, `1` is not `1.0`.

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
    _diff(source, target, "", ops)
    return ops


def same(a: Any, b: Any) -> bool:
    """JSON equality: like `==`, but booleans, integers and floats are told apart."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        if len(a) != len(b):
            return False
        for key, value in a.items():
            if key not in b:
                return False
            other = b[key]
            if value is other:
                continue
            if type(value) is not type(other):
                return False
            if type(value) in _CONTAINERS:
                if not same(value, other):
                    return False
            elif value != other:
                return False
        return True
    if kind is list:
        return len(a) == len(b) and all(x is y or same(x, y) for x, y in zip(a, b))
    return bool(a == b)


_CONTAINERS = (dict, list)
_ABSENT = object()


def _equal(a: Any, b: Any) -> bool:
    # `==` (in C) is the fast filter; for values it finds equal, serialising both (in C)
    # tells `true` from `1` and `1` from `1.0` without walking them in Python. Equal
    # bytes mean equal JSON values; unequal bytes (keys in another order) only send the
    # caller into the values, whose walk finds them equal key by key (no operation).
    if a is b:
        return True
    if a != b:
        return False
    kind = type(a)
    if kind is not dict and kind is not list:
        return kind is type(b)
    try:
        return bool(orjson.dumps(a) == orjson.dumps(b))
    except TypeError:  # integers beyond 64 bits
        return same(a, b)


def _diff(source: Any, target: Any, path: str, ops: list[Operation]) -> None:
    if not _equal(source, target):
        _diff_unequal(source, target, path, ops)


def _diff_unequal(source: Any, target: Any, path: str, ops: list[Operation]) -> None:
    """`_diff` of two values `_equal` found different."""
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
            _diff_unequal(old, value, f"{path}/{escape(key)}", ops)
    elif isinstance(source, list) and isinstance(target, list):
        _diff_list(source, target, path, ops)
    elif not same(source, target):
        ops.append({"op": "replace", "path": path, "value": target})


def _diff_list(source: list[Any], target: list[Any], path: str, ops: list[Operation]) -> None:
    if len(source) == len(target):
        for index, (old, new) in enumerate(zip(source, target)):
            _diff(old, new, f"{path}/{index}", ops)
    elif len(source) < len(target) and all(same(a, b) for a, b in zip(source, target)):
        ops.extend({"op": "add", "path": f"{path}/-", "value": item} for item in target[len(source) :])
    else:
        ops.append({"op": "replace", "path": path, "value": target})
