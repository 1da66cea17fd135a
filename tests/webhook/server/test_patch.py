"""The JSON patch diff: applying its operations with jsonpatch gives the target."""

from __future__ import annotations

import copy
import sys
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fieldwarden.webhook.server.patch import diff, escape, same
from tests.webhook.samples import review


def typed(value: Any) -> Any:
    """JSON value with its JSON type spelled out, so True != 1 != 1.0 in comparisons."""
    if isinstance(value, dict):
        return ("object", {k: typed(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("array", [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", value + 0.0)
    return (type(value).__name__, value)


def check(source: Any, target: Any) -> list[dict[str, Any]]:
    """diff(source, target), checked: applied to source it gives target; source is untouched."""
    before = copy.deepcopy(source)
    ops = diff(source, target)
    assert typed(jsonpatch.apply_patch(source, ops)) == typed(target)
    assert typed(source) == typed(before)
    return ops


def test_equal_values_give_no_operations() -> None:
    obj = review("pod-create")["request"]["object"]
    assert check(obj, copy.deepcopy(obj)) == []


def test_keys_with_slash_and_tilde_are_escaped() -> None:
    assert escape("fieldwarden.io/ignore") == "fieldwarden.io~1ignore"
    assert escape("a~/b") == "a~0~1b"
    source = {"metadata": {"annotations": {"a~b": "1", "x/y": "2"}}}
    target = {"metadata": {"annotations": {"a~b": "9", "fieldwarden.io/ignore": "FW401"}}}
    ops = check(source, target)
    assert {op["path"] for op in ops} == {
        "/metadata/annotations/a~0b",
        "/metadata/annotations/x~1y",
        "/metadata/annotations/fieldwarden.io~1ignore",
    }


def test_mapping_keys_are_added_removed_and_replaced() -> None:
    ops = check({"a": 1, "b": {"c": 2}, "d": 3}, {"a": 2, "b": {"c": 2}, "e": 4})
    assert sorted((op["op"], op["path"]) for op in ops) == [("add", "/e"), ("remove", "/d"), ("replace", "/a")]


def test_json_types_are_not_pythons() -> None:
    assert check({"a": True}, {"a": 1}) == [{"op": "replace", "path": "/a", "value": 1}]
    assert check({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]
    assert check([0], [False]) == [{"op": "replace", "path": "/0", "value": False}]


def test_appending_to_a_list_adds_at_the_end_and_leaves_the_entries_alone() -> None:
    pod = review("pod-create")["request"]["object"]
    pod["spec"]["readinessGates"] = [{"conditionType": "example.com/other"}]
    target = copy.deepcopy(pod)
    target["spec"]["readinessGates"].append({"conditionType": "InPlaceUpdateReady"})
    target["spec"]["readinessGates"].append({"conditionType": "Third"})
    ops = check(pod, target)
    assert ops == [
        {"op": "add", "path": "/spec/readinessGates/-", "value": {"conditionType": "InPlaceUpdateReady"}},
        {"op": "add", "path": "/spec/readinessGates/-", "value": {"conditionType": "Third"}},
    ]


def test_appending_to_an_empty_list_and_creating_an_absent_one() -> None:
    assert check({"gates": []}, {"gates": [{"t": "X"}]}) == [{"op": "add", "path": "/gates/-", "value": {"t": "X"}}]
    assert check({}, {"gates": [{"t": "X"}]}) == [{"op": "add", "path": "/gates", "value": [{"t": "X"}]}]
    assert check({"gates": None}, {"gates": [{"t": "X"}]}) == [{"op": "replace", "path": "/gates", "value": [{"t": "X"}]}]


def test_same_length_lists_are_walked_item_by_item() -> None:
    source = {"containers": [{"name": "a", "resources": {"cpu": "1"}}, {"name": "b"}]}
    target = {"containers": [{"name": "a", "resources": {"cpu": "2"}}, {"name": "b"}]}
    assert check(source, target) == [{"op": "replace", "path": "/containers/0/resources/cpu", "value": "2"}]


def test_other_list_changes_replace_the_list() -> None:
    assert check({"l": [1, 2, 3]}, {"l": [1, 3]}) == [{"op": "replace", "path": "/l", "value": [1, 3]}]
    assert check({"l": [1, 2]}, {"l": [2, 1, 0]}) == [{"op": "replace", "path": "/l", "value": [2, 1, 0]}]


def test_a_changed_root_is_replaced() -> None:
    check({"a": 1}, [1])
    check(1, "one")


KEYS = st.text(alphabet="ab~/-0", max_size=4)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=120, deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_any_two_values(source: Any, target: Any) -> None:
    check(source, target)


@st.composite
def edited(draw: st.DrawFn) -> tuple[Any, Any]:
    """A value and an edit of it (keys changed, items appended, leaves replaced)."""
    source = draw(JSON_VALUES)

    def change(value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: change(v) for k, v in value.items() if draw(st.integers(0, 5))}
            out.update(draw(st.dictionaries(KEYS, JSON_VALUES, max_size=2)))
            return out
        if isinstance(value, list):
            return [change(v) for v in value] + draw(st.lists(JSON_VALUES, max_size=2))
        return draw(JSON_VALUES) if draw(st.integers(0, 3)) == 0 else value

    return source, change(source)


@settings(max_examples=120, deadline=None)
@given(edited())
def test_edits_of_a_value(pair: tuple[Any, Any]) -> None:
    check(*pair)


@settings(max_examples=40, deadline=None)
@given(st.lists(JSON_VALUES, max_size=5), st.lists(JSON_VALUES, min_size=1, max_size=3))
def test_an_append_is_only_adds_at_the_end(items: list[Any], extra: list[Any]) -> None:
    ops = check({"list": items}, {"list": items + extra})
    assert [op["op"] for op in ops] == ["add"] * len(extra)
    assert all(op["path"] == "/list/-" for op in ops)


def test_a_mapping_with_a_dash_key_is_replaced_whole() -> None:
    assert check({"data": {"-": "1", "a": "2"}}, {"data": {"-": "3", "a": "2"}}) == [
        {"op": "replace", "path": "/data", "value": {"-": "3", "a": "2"}}
    ]


# --- nesting deeper than Python recurses --------------------------------------------------------

DEEP = 3 * sys.getrecursionlimit()


def nested(levels: int, leaf: Any, kind: type) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value} if kind is dict else [value]
    return value


def leaf_path(levels: int, kind: type) -> str:
    return ("/a" if kind is dict else "/0") * levels


@pytest.mark.parametrize("kind", [dict, list])
def test_values_nested_deeper_than_python_recurses(kind: type) -> None:
    source = {"spec": nested(DEEP, 1, kind), "other": 1}
    # equal but not the same objects: no operation
    assert diff(source, {"spec": nested(DEEP, 1, kind), "other": 1}) == []
    assert same(source, {"spec": nested(DEEP, 1, kind), "other": 1})
    # a change at the bottom: one operation there, however deep
    target = {"spec": nested(DEEP, True, kind), "other": 1}
    assert not same(source, target)
    ops = diff(source, target)
    assert ops == [{"op": "replace", "path": "/spec" + leaf_path(DEEP, kind), "value": True}]
    patched = jsonpatch.apply_patch(source, ops, in_place=True)  # (a copy would recurse)
    node = patched["spec"]
    for _ in range(DEEP):
        node = node["a"] if kind is dict else node[0]
    assert node is True


def test_a_deep_value_added_or_removed_beside_a_change() -> None:
    deep = nested(DEEP, "x", dict)
    ops = diff({"keep": 1, "old": deep}, {"keep": 2, "new": deep})
    assert sorted((op["op"], op["path"]) for op in ops) == [("add", "/new"), ("remove", "/old"), ("replace", "/keep")]
