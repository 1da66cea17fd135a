"""The copy-on-write draft the mutating rules change: the original is never touched."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from fieldwarden.policies.draft import Draft
from fieldwarden.webhook.server.patch import diff
from tests.webhook.samples import review


def deployment() -> dict[str, Any]:
    return review("deployment-update-apply")["request"]["object"]  # type: ignore[no-any-return]


def test_a_write_leaves_the_original_as_it_was_and_shares_the_rest() -> None:
    original = deployment()
    before = copy.deepcopy(original)
    draft = Draft(original)
    spec = draft.mapping(("spec",))
    assert spec is not None
    spec["replicas"] = 7
    container = draft.mapping(("spec", "template", "spec", "containers", 0))
    assert container is not None
    container["image"] = "nginx:1.27"
    assert original == before
    assert draft.object["spec"]["replicas"] == 7
    assert draft.object["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    # What was not written is the original's own object, which is what makes the diff cheap.
    assert draft.object["metadata"] is original["metadata"]
    assert draft.object["spec"]["selector"] is original["spec"]["selector"]
    assert diff(original, draft.object) == [
        {"op": "replace", "path": "/spec/replicas", "value": 7},
        {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.27"},
    ]


def test_writes_through_the_same_path_accumulate() -> None:
    draft = Draft({"metadata": {"labels": {"a": "1"}}})
    first = draft.mapping(("metadata", "labels"))
    second = draft.mapping(("metadata", "labels"))
    assert first is not None and second is not None
    first["b"] = "2"
    second["c"] = "3"
    assert draft.object == {"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}}


def test_missing_and_null_mappings_are_created() -> None:
    original: dict[str, Any] = {"metadata": {"labels": None}}
    draft = Draft(original)
    labels = draft.mapping(("metadata", "labels"))
    annotations = draft.mapping(("metadata", "annotations", "nested"))
    assert labels == {} and annotations == {}
    assert draft.object == {"metadata": {"labels": {}, "annotations": {"nested": {}}}}
    assert original == {"metadata": {"labels": None}}


def test_something_else_in_the_way_is_none_and_changes_nothing() -> None:
    original = {"spec": {"replicas": 3, "containers": [{"name": "a"}]}}
    draft = Draft(original)
    assert draft.writable(("spec", "replicas", "x")) is None  # a scalar
    assert draft.writable(("spec", "containers", "a")) is None  # a key into a list
    assert draft.writable(("spec", 0)) is None  # an index into a mapping
    assert draft.writable(("spec", "containers", 1)) is None  # no such item
    assert draft.mapping(("spec", "containers")) is None  # a list where a mapping is asked for
    assert draft.object == original and original == {"spec": {"replicas": 3, "containers": [{"name": "a"}]}}
    last = draft.writable(("spec", "containers", -1))
    assert last == {"name": "a"} and last is not original["spec"]["containers"][0]


KEYS = st.sampled_from(["a", "b", "c", "d/e", "~"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=12,
)
EDIT = st.tuples(st.lists(st.one_of(KEYS, st.integers(-2, 2)), max_size=3), st.sampled_from(["set", "del", "append"]),
                 KEYS, VALUES)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=4), st.lists(EDIT, max_size=5))
def test_any_edits_leave_the_original_alone_and_diff_to_the_draft(original: dict[str, Any], edits: list[Any]) -> None:
    before = copy.deepcopy(original)
    draft = Draft(original)
    for path, action, key, value in edits:
        node = draft.writable(path)
        if isinstance(node, dict):
            if action == "del":
                node.pop(key, None)
            else:
                node[key] = value
        elif isinstance(node, list):
            if action == "del" and node:
                node.pop()
            elif action == "append" or not node:
                node.append(value)
            else:
                node[0] = value
    assert original == before
    assert jsonpatch.apply_patch(original, diff(original, draft.object)) == draft.object
