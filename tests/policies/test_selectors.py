"""Tests for fieldwarden.policies.selectors: parsing, validation, matching, overlap, index."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fieldwarden.policies.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    FieldPath,
    Requirement,
    Selector,
    TemplateIndex,
    label_key_problems,
    label_value_problems,
    labels_can_overlap,
    parse_label_selector,
    parse_map_selector,
    selects,
)


def req(key: str, op: str, *values: str) -> Requirement:
    """Shorthand for a requirement."""
    return Requirement(key, op, frozenset(values))


def sel(*reqs: Requirement) -> Selector:
    """Shorthand for a selector in the order given."""
    return Selector(tuple(reqs))


def parse_ok(raw: Any) -> Selector:
    """Parse a selector that must be valid."""
    selector, problems = parse_label_selector(raw)
    assert problems == []
    assert selector is not None
    return selector


def paths(raw: Any) -> list[FieldPath]:
    """Parse an invalid selector; return the problem paths and check the contract."""
    selector, problems = parse_label_selector(raw)
    assert selector is None
    assert problems
    for path, message in problems:
        assert isinstance(path, tuple)
        assert isinstance(message, str) and message
    return [path for path, _ in problems]


# ------------------------------------------------------------------ operators


def test_in_requires_presence_and_listed_value() -> None:
    s = parse_ok({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]})
    assert s.matches({"tier": "web"})
    assert s.matches({"tier": "api", "x": "y"})
    assert not s.matches({"tier": "db"})
    assert not s.matches({})
    assert not s.matches({"tier": True})


def test_not_in_matches_absent_key() -> None:
    s = parse_ok({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]})
    assert s.matches({})
    assert s.matches({"tier": "web"})
    assert not s.matches({"tier": "db"})


def test_exists_and_does_not_exist() -> None:
    exists = parse_ok({"matchExpressions": [{"key": "canary", "operator": "Exists"}]})
    absent = parse_ok({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist", "values": []}]})
    assert exists.matches({"canary": ""})
    assert not exists.matches({"other": "x"})
    assert absent.matches({"other": "x"})
    assert not absent.matches({"canary": "true"})


def test_match_labels_become_in_requirements() -> None:
    s = parse_ok({"matchLabels": {"app": "web", "example.com/team": "a"}})
    assert s.requirements == (req("app", IN, "web"), req("example.com/team", IN, "a"))
    assert s.matches({"app": "web", "example.com/team": "a", "extra": "1"})
    assert not s.matches({"app": "web"})


def test_match_labels_and_expressions_are_anded() -> None:
    s = parse_ok(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "app", "operator": "Exists"},
            ],
        }
    )
    assert s.matches({"app": "web"})
    assert s.matches({"app": "web", "env": "dev"})
    assert not s.matches({"app": "web", "env": "prod"})
    assert not s.matches({"app": "api", "env": "dev"})


def test_empty_selector_matches_everything_and_null_nothing() -> None:
    empty = parse_ok({})
    assert empty == Selector(())
    assert empty.is_empty
    assert parse_ok({"matchLabels": {}, "matchExpressions": []}).is_empty
    assert parse_ok({"matchLabels": None, "matchExpressions": None}).is_empty
    assert selects(empty, {"any": "thing"})
    assert selects(empty, {})
    assert parse_label_selector(None) == (None, [])
    assert not selects(None, {"any": "thing"})
    assert not selects(None, {})


def test_selects_tolerates_labels_that_are_not_a_mapping() -> None:
    empty = Selector(())
    only_negative = sel(req("a", NOT_IN, "x"), req("b", DOES_NOT_EXIST))
    needs_label = sel(req("a", EXISTS))
    for labels in (None, [], ["a"], "a=b", 3):
        assert selects(empty, labels)
        assert selects(only_negative, labels)
        assert not selects(needs_label, labels)
        assert not selects(None, labels)


def test_non_string_label_keys_and_values_in_labels() -> None:
    assert selects(sel(req("a", EXISTS)), {"a": 1})
    assert not selects(sel(req("a", IN, "1")), {"a": 1})
    assert selects(sel(req("a", NOT_IN, "1")), {"a": 1})
    assert not selects(sel(req("1", EXISTS)), {1: "x"})


def test_unknown_operator_in_a_hand_built_requirement_matches_nothing() -> None:
    s = sel(req("a", "Gt", "1"))
    assert not s.matches({"a": "2"})
    assert not s.matches({})
    assert not labels_can_overlap(s, Selector(()))


def test_selector_is_canonical_and_renders_like_kubernetes() -> None:
    a = parse_ok(
        {"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}
    )
    b = parse_ok({"matchLabels": {"a": "1", "b": "2"}})
    assert a == b
    assert str(b) == "a=1,b=2"
    s = sel(req("t", IN, "y", "x"), req("u", NOT_IN, "z"), req("v", NOT_IN, "p", "q"), req("w", EXISTS), req("x", DOES_NOT_EXIST))
    assert str(s) == "t in (x,y),u!=z,v notin (p,q),w,!x"
    assert str(Selector(())) == ""


# ----------------------------------------------------------------- validation


def test_in_and_not_in_need_values() -> None:
    for op in ("In", "NotIn"):
        assert ("matchExpressions", 0, "values") in paths({"matchExpressions": [{"key": "a", "operator": op}]})
        assert ("matchExpressions", 0, "values") in paths(
            {"matchExpressions": [{"key": "a", "operator": op, "values": []}]}
        )


def test_exists_and_does_not_exist_forbid_values() -> None:
    for op in ("Exists", "DoesNotExist"):
        assert ("matchExpressions", 0, "values") in paths(
            {"matchExpressions": [{"key": "a", "operator": op, "values": ["x"]}]}
        )
    # A null item still counts, as the API decodes it to "".
    assert ("matchExpressions", 0, "values") in paths(
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": [None]}]}
    )


@pytest.mark.parametrize("operator", ["in", "Equals", "=", "Gt", "", None, 3])
def test_unknown_or_missing_operator(operator: Any) -> None:
    found = paths({"matchExpressions": [{"key": "a", "operator": operator, "values": ["x"]}]})
    assert ("matchExpressions", 0, "operator") in found


def test_missing_operator_field() -> None:
    assert ("matchExpressions", 0, "operator") in paths({"matchExpressions": [{"key": "a"}]})


def test_operator_case_hint() -> None:
    _, problems = parse_label_selector({"matchExpressions": [{"key": "a", "operator": "notin", "values": ["x"]}]})
    assert any("NotIn" in message for _, message in problems)


@pytest.mark.parametrize(
    "key",
    [
        "",
        "-app",
        "app-",
        "a b",
        "/app",
        "example.com/",
        "Example.com/app",
        "a/b/c",
        "x" * 64,
        "example.com/" + "x" * 64,
        "a" * 254 + "/app",
        "é",
        "app\n",
    ],
)
def test_invalid_expression_keys(key: str) -> None:
    assert label_key_problems(key)
    assert ("matchExpressions", 0, "key") in paths({"matchExpressions": [{"key": key, "operator": "Exists"}]})
    assert ("matchLabels", key) in paths({"matchLabels": {key: "v"}})


@pytest.mark.parametrize(
    "key",
    ["a", "A", "app", "App_Name.v-1", "x" * 63, "example.com/app", "kubernetes.io/name", "a" * 253 + "/b", "1/2"],
)
def test_valid_keys(key: str) -> None:
    assert label_key_problems(key) == []
    parse_ok({"matchLabels": {key: "v"}, "matchExpressions": [{"key": key, "operator": "Exists"}]})


def test_empty_name_reports_both_kubernetes_messages() -> None:
    assert len(label_key_problems("example.com/")) == 2


@pytest.mark.parametrize("value", ["-x", "x-", "a b", "x" * 64, "a/b", "ü", "v\n"])
def test_invalid_values(value: str) -> None:
    assert label_value_problems(value)
    assert ("matchExpressions", 0, "values", 1) in paths(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", value]}]}
    )
    assert ("matchLabels", "a") in paths({"matchLabels": {"a": value}})


@pytest.mark.parametrize("value", ["", "x", "x" * 63, "v1.2_3-a", "A"])
def test_valid_values(value: str) -> None:
    assert label_value_problems(value) == []
    s = parse_ok({"matchLabels": {"a": value}})
    assert s.matches({"a": value})


def test_lengths_count_utf8_bytes_like_the_api() -> None:
    # 32 two-byte characters: 64 bytes, so too long as well as the wrong charset.
    assert len(label_value_problems("é" * 32)) == 2


@pytest.mark.parametrize("value", [True, False, 1, 1.5, ["x"], {"x": "y"}])
def test_match_labels_values_must_be_strings(value: Any) -> None:
    assert ("matchLabels", "app") in paths({"matchLabels": {"app": value}})


@pytest.mark.parametrize("value", [True, 2, ["x"], {"k": "v"}])
def test_expression_values_must_be_strings(value: Any) -> None:
    assert ("matchExpressions", 0, "values", 0) in paths(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": [value]}]}
    )


@pytest.mark.parametrize("values", ["web", 3, {"a": "b"}, True])
def test_values_must_be_a_list(values: Any) -> None:
    assert ("matchExpressions", 0, "values") in paths(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": values}]}
    )


@pytest.mark.parametrize("key", [1, True, None, 2.5])
def test_non_string_keys(key: Any) -> None:
    found = paths({"matchLabels": {key: "v"}})
    assert ("matchLabels", str(key)) in found
    if key is not None:
        assert ("matchExpressions", 0, "key") in paths({"matchExpressions": [{"key": key, "operator": "Exists"}]})


def test_missing_or_null_expression_key_is_invalid() -> None:
    assert ("matchExpressions", 0, "key") in paths({"matchExpressions": [{"operator": "Exists"}]})
    assert ("matchExpressions", 0, "key") in paths({"matchExpressions": [{"key": None, "operator": "Exists"}]})


def test_null_values_decode_like_the_api_server() -> None:
    # matchLabels value null -> "", values null -> absent list, values item null -> "".
    s = parse_ok({"matchLabels": {"app": None}})
    assert s.requirements == (req("app", IN, ""),)
    assert parse_ok({"matchExpressions": [{"key": "a", "operator": "Exists", "values": None}]}) == sel(
        req("a", EXISTS)
    )
    assert parse_ok({"matchExpressions": [{"key": "a", "operator": "In", "values": [None]}]}) == sel(req("a", IN, ""))
    # A null item is an all-zero requirement: no operator and no key.
    found = paths({"matchExpressions": [None]})
    assert ("matchExpressions", 0, "operator") in found
    assert ("matchExpressions", 0, "key") in found


def test_unknown_fields_are_reported() -> None:
    assert ("matchLabel",) in paths({"matchLabel": {"app": "web"}})
    assert ("MatchLabels",) in paths({"MatchLabels": {"app": "web"}})
    assert ("1",) in paths({1: "x"})
    assert ("matchExpressions", 0, "value") in paths(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"], "value": "x"}]}
    )


@pytest.mark.parametrize("raw", [[], [{"matchLabels": {}}], "app=web", 0, True])
def test_selector_of_the_wrong_type(raw: Any) -> None:
    assert paths(raw) == [()]


@pytest.mark.parametrize("raw", [["app", "web"], "app=web", 3])
def test_match_labels_of_the_wrong_type(raw: Any) -> None:
    assert ("matchLabels",) in paths({"matchLabels": raw})


@pytest.mark.parametrize("raw", [{"key": "a", "operator": "Exists"}, "a", 3])
def test_match_expressions_of_the_wrong_type(raw: Any) -> None:
    assert ("matchExpressions",) in paths({"matchExpressions": raw})


@pytest.mark.parametrize("item", [["a", "Exists"], "a", 3, True])
def test_match_expression_item_of_the_wrong_type(item: Any) -> None:
    assert ("matchExpressions", 1) in paths(
        {"matchExpressions": [{"key": "ok", "operator": "Exists"}, item]}
    )


def test_every_problem_is_reported_not_just_the_first() -> None:
    found = paths(
        {
            "matchLabels": {"bad key": "v", "ok": "bad value"},
            "matchExpressions": [
                {"key": "a", "operator": "In"},
                {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "c", "operator": "Nope", "values": ["-"]},
            ],
            "extra": 1,
        }
    )
    for expected in [
        ("matchLabels", "bad key"),
        ("matchLabels", "ok"),
        ("matchExpressions", 0, "values"),
        ("matchExpressions", 1, "values"),
        ("matchExpressions", 2, "operator"),
        ("matchExpressions", 2, "values", 0),
        ("extra",),
    ]:
        assert expected in found


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda children: st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["matchLabels", "matchExpressions", "key", "operator", "values", "a", "x"])
            | st.integers(),
            children,
            max_size=4,
        ),
        max_leaves=12,
    )
)
@settings(max_examples=300, deadline=None)
def test_parsers_never_raise(raw: Any) -> None:
    for parse in (parse_label_selector, parse_map_selector):
        selector, problems = parse(raw)
        assert (selector is None) or problems == []
        if raw is None:
            assert (selector, problems) == (None, [])
        elif selector is None:
            assert problems
        else:
            selects(selector, raw)


# --------------------------------------------------------------- map selector


def test_map_selector() -> None:
    s, problems = parse_map_selector({"app": "web", "tier": "front"})
    assert problems == []
    assert s == sel(req("app", IN, "web"), req("tier", IN, "front"))
    assert selects(s, {"app": "web", "tier": "front", "x": "y"})
    assert not selects(s, {"app": "web"})


def test_map_selector_empty_and_null() -> None:
    assert parse_map_selector(None) == (None, [])
    s, problems = parse_map_selector({})
    assert problems == [] and s == Selector(()) and s.is_empty


def test_map_selector_problems() -> None:
    s, problems = parse_map_selector({"app": True, "bad key": "v", 3: "x", "ok": "-bad"})
    assert s is None
    found = [path for path, _ in problems]
    for expected in [("app",), ("bad key",), ("3",), ("ok",)]:
        assert expected in found
    for raw in (["app"], "app=web", 1):
        s, problems = parse_map_selector(raw)
        assert s is None and [path for path, _ in problems] == [()]


# -------------------------------------------------------------------- overlap


OVERLAP_CASES = [
    # (a, b, overlap?)
    (sel(), sel(), True),
    (sel(), sel(req("a", IN, "x")), True),
    (sel(req("a", IN, "x")), sel(req("a", IN, "x", "y")), True),
    (sel(req("a", IN, "x")), sel(req("a", IN, "y")), False),
    (sel(req("a", IN, "x")), sel(req("b", IN, "y")), True),
    (sel(req("a", IN, "x")), sel(req("a", NOT_IN, "x")), False),
    (sel(req("a", IN, "x", "y")), sel(req("a", NOT_IN, "x")), True),
    (sel(req("a", IN, "x")), sel(req("a", EXISTS)), True),
    (sel(req("a", IN, "x")), sel(req("a", DOES_NOT_EXIST)), False),
    (sel(req("a", NOT_IN, "x")), sel(req("a", NOT_IN, "y")), True),
    (sel(req("a", NOT_IN, "x")), sel(req("a", EXISTS)), True),
    (sel(req("a", NOT_IN, "x")), sel(req("a", DOES_NOT_EXIST)), True),
    (sel(req("a", EXISTS)), sel(req("a", EXISTS)), True),
    (sel(req("a", EXISTS)), sel(req("a", DOES_NOT_EXIST)), False),
    (sel(req("a", DOES_NOT_EXIST)), sel(req("a", DOES_NOT_EXIST)), True),
    (sel(req("a", IN, "x"), req("a", NOT_IN, "x")), sel(), False),
    (sel(req("a", IN, "x", "y")), sel(req("a", IN, "y", "z"), req("a", NOT_IN, "y")), False),
    (sel(req("a", IN, "x"), req("b", IN, "y")), sel(req("a", IN, "x"), req("b", DOES_NOT_EXIST)), False),
    (sel(req("a", IN, "x"), req("b", NOT_IN, "y")), sel(req("a", IN, "x"), req("b", DOES_NOT_EXIST)), True),
]


@pytest.mark.parametrize(("a", "b", "expected"), OVERLAP_CASES)
def test_overlap_truth_table(a: Selector, b: Selector, expected: bool) -> None:
    assert labels_can_overlap(a, b) is expected
    assert labels_can_overlap(b, a) is expected


def test_overlap_of_parsed_workload_selectors() -> None:
    web = parse_ok({"matchLabels": {"app": "web"}})
    canary = parse_ok(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "track", "operator": "In", "values": ["canary"]}]}
    )
    stable = parse_ok({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "track", "operator": "DoesNotExist"}]})
    assert labels_can_overlap(web, canary)
    assert labels_can_overlap(web, stable)
    assert not labels_can_overlap(canary, stable)


# ---------------------------------------------------------- property tests

KEYS = ["a", "b", "c"]
VALUES = ["x", "y", "z", ""]

label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    """A random requirement over a small alphabet (In/NotIn get at least one value)."""
    key = draw(st.sampled_from(KEYS))
    op = draw(st.sampled_from([IN, NOT_IN, EXISTS, DOES_NOT_EXIST]))
    if op in (IN, NOT_IN):
        values = draw(st.frozensets(st.sampled_from(VALUES), min_size=1, max_size=3))
    else:
        values = frozenset()
    return Requirement(key, op, values)


selectors = st.lists(requirements(), max_size=4).map(lambda reqs: Selector(tuple(reqs)))


def brute_force_overlap(a: Selector, b: Selector) -> bool:
    """Try every label set over KEYS, with values from VALUES plus one no selector names."""
    states: list[str | None] = [None, *VALUES, "fresh"]
    for combo in itertools.product(states, repeat=len(KEYS)):
        labels = {k: v for k, v in zip(KEYS, combo) if v is not None}
        if a.matches(labels) and b.matches(labels):
            return True
    return False


@given(st.lists(label_sets, max_size=30), selectors)
@settings(max_examples=400, deadline=None)
def test_index_matching_equals_brute_force(labels: list[dict[str, str]], selector: Selector) -> None:
    index = TemplateIndex(enumerate(labels))
    expected = [i for i, item in enumerate(labels) if selects(selector, item)]
    assert index.matching(selector) == expected


@given(selectors, selectors)
@settings(max_examples=400, deadline=None)
def test_overlap_equals_brute_force(a: Selector, b: Selector) -> None:
    assert labels_can_overlap(a, b) is brute_force_overlap(a, b)


@given(selectors)
@settings(max_examples=200, deadline=None)
def test_parse_round_trip_of_expressions(selector: Selector) -> None:
    raw = {
        "matchExpressions": [
            {"key": r.key, "operator": r.operator, **({"values": sorted(r.values)} if r.values else {})}
            for r in selector.requirements
        ]
    }
    parsed = parse_ok(raw)
    for labels in itertools.product([None, *VALUES], repeat=len(KEYS)):
        as_map = {k: v for k, v in zip(KEYS, labels) if v is not None}
        assert parsed.matches(as_map) is selector.matches(as_map)


# -------------------------------------------------------------------- index


def test_index_basics() -> None:
    index = TemplateIndex(
        [
            (10, {"app": "web", "track": "canary"}),
            (11, {"app": "web"}),
            (12, {"app": "db"}),
            (13, {}),
            (14, None),  # type: ignore[list-item]
            (15, {"app": True, "tier": "x"}),  # type: ignore[dict-item]
        ]
    )
    assert len(index) == 6
    assert index.matching(None) == []
    assert index.matching(Selector(())) == [10, 11, 12, 13, 14, 15]
    assert index.matching(sel(req("app", IN, "web"))) == [10, 11]
    assert index.matching(sel(req("app", IN, "web", "db"))) == [10, 11, 12]
    assert index.matching(sel(req("app", IN, "web"), req("track", DOES_NOT_EXIST))) == [11]
    assert index.matching(sel(req("app", EXISTS))) == [10, 11, 12, 15]
    assert index.matching(sel(req("app", NOT_IN, "web"))) == [12, 13, 14, 15]
    assert index.matching(sel(req("app", IN, "nope"))) == []
    assert index.matching(sel(req("nokey", EXISTS), req("app", NOT_IN, "x"))) == []


def test_index_copies_labels() -> None:
    labels = {"app": "web"}
    index = TemplateIndex([(1, labels)])
    labels["app"] = "db"
    assert index.matching(sel(req("app", IN, "web"))) == [1]


def test_index_answers_over_twenty_thousand_label_sets() -> None:
    items = [(i, {"app": f"app-{i % 2000}", "track": "canary" if i % 10 == 0 else "stable", "pod": str(i)})
             for i in range(20_000)]
    index = TemplateIndex(items)
    selector = parse_ok(
        {"matchLabels": {"app": "app-7", "track": "stable"}, "matchExpressions": [{"key": "pod", "operator": "Exists"}]}
    )
    result = index.matching(selector)
    assert result == [i for i, labels in items if selects(selector, labels)]
    assert len(result) == 10
