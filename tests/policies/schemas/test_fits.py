"""The C check that an object fits its schema (policies/schemas/_fits.c), against validate.py's walk.

fits() may say True only where the walk finds no problem, and must say True wherever it finds none
(else it saves nothing): checked on every object of the repository's manifests against its built-in
schema, on a structural CRD schema, on the corners of the walk, and on objects Hypothesis mutates.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from fieldwarden.linter.loader import decode, load
from fieldwarden.policies.schemas import builtin, validate as validate_module
from fieldwarden.policies.schemas.form import compile_schema
from tests.policies.schemas.test_validate import CRD_SCHEMA, DEPLOYMENT

ROOT = Path(__file__).resolve().parents[3]

if not validate_module.compiled_fit():
    if os.environ.get("FIELDWARDEN_REQUIRE_COMPILED"):  # CI builds it: its absence is a failure there
        pytest.fail("policies/schemas/_fits.c was not built (a C compiler is needed)", pytrace=False)
    pytest.skip("the C check is not built here", allow_module_level=True)

from fieldwarden.policies.schemas._fits import fits  # noqa: E402


def walked(compiled: Any, obj: Any) -> list[Any]:
    problems: list[Any] = []
    validate_module._walk(compiled, 0, obj, (), problems, validate_module.MAX_PROBLEMS)
    return problems


def agrees(compiled: Any, obj: Any) -> bool:
    """fits() against the walk (asserted); whether the object fits."""
    clean = not walked(compiled, obj)
    assert fits(compiled, obj) is clean, (walked(compiled, obj)[:3], obj)
    return clean


def crd() -> Any:
    return compile_schema(CRD_SCHEMA, {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
                          go_nulls=False, structural=True)


def test_every_object_of_the_repository_is_judged_as_the_walk_judges_it() -> None:
    judged = clean = 0
    for path in sorted(p for folder in ("tests", "examples") for p in (ROOT / folder).rglob("*")
                       if p.suffix in (".yaml", ".yml", ".json") and p.is_file()):
        text, _ = decode(path.read_bytes())
        for document in load(text).documents if text is not None else []:
            obj = document.data
            if not (isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str)):
                continue
            try:
                compiled = builtin.compiled(builtin.DEFAULT_VERSION, obj["apiVersion"], obj["kind"])
            except (builtin.SchemasMissing, KeyError):
                continue
            if compiled is not None:
                judged += 1
                clean += agrees(compiled, obj)
    assert judged > 400 and 0 < clean < judged  # both answers are met


CORNERS = [
    ("integral float for an integer", "spec: {replicas: 2.0}", True),
    ("fractional float for an integer", "spec: {replicas: 2.5}", False),
    ("infinity for an integer", "spec: {replicas: .inf}", False),
    ("not a number for an integer", "spec: {replicas: .nan}", False),
    ("a bool is not an integer", "spec: {replicas: true}", False),
    ("a string is not an integer", "spec: {replicas: '2'}", False),
    ("null is Go's zero value", "spec: {replicas: null, template: null}", True),
    ("a timestamp is a string", "metadata: {annotations: {a: 2024-01-01}}", True),
    ("an unknown field", "spec: {replicaz: 2}", False),
    ("an int or string takes both", "spec: {strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 10%}}}", True),
    ("a missing required field", "spec: {template: {spec: {containers: [{image: x}]}}}", False),
    ("the walk's own example", "{}", True),
    ("a list where a map goes", "spec: {selector: [a]}", False),
    ("a map where a list goes", "spec: {template: {spec: {containers: {name: a}}}}", False),
    ("an enum value", "spec: {strategy: {type: Recreate}}", True),
]


@pytest.mark.parametrize(("text", "fitting"), [(t, f) for _, t, f in CORNERS], ids=[n for n, _, _ in CORNERS])
def test_the_corners_of_the_walk(text: str, fitting: bool) -> None:
    obj = merged(yaml.safe_load(DEPLOYMENT), yaml.safe_load(text))
    assert agrees(builtin.compiled("1.32", "apps/v1", "Deployment"), obj) is fitting


def merged(base: Any, change: Any) -> Any:
    """`change` laid over `base`, mapping by mapping."""
    if not (isinstance(base, dict) and isinstance(change, dict)):
        return change
    return {**base, **{key: merged(base.get(key), value) for key, value in change.items()}}


CUSTOM = [
    ("fits", {"spec": {"size": 3, "mode": "fast", "port": "http", "note": None, "tags": ["a"], "labels": {"a": "b"}}}, True),
    ("an enum value outside", {"spec": {"size": 3, "mode": "slow"}}, False),
    ("an enum takes an equal value of another type", {"spec": {"size": 3, "mode": "fast"}}, True),
    ("null without nullable", {"spec": {"size": None}}, False),
    ("a required field missing", {"spec": {"mode": "fast"}}, False),
    ("unknown fields kept by the schema", {"spec": {"size": 1, "extra": {"anything": [1, {"x": None}]}}}, True),
    ("an unknown field of an empty object", {"spec": {"size": 1, "empty": {"x": 1}}}, False),
    ("an embedded resource's own fields", {"spec": {"size": 1, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}}}}, True),
    ("an embedded resource's unknown field", {"spec": {"size": 1, "template": {"other": 1}}}, False),
    ("a recursive reference", {"spec": {"size": 1, "node": {"next": {"next": {"next": {}}}}}}, True),
    ("a wrong type deep in a recursion", {"spec": {"size": 1, "node": {"next": {"next": {"next": 5}}}}}, False),
]


@pytest.mark.parametrize(("body", "fitting"), [(b, f) for _, b, f in CUSTOM], ids=[n for n, _, _ in CUSTOM])
def test_a_custom_resource_against_its_structural_schema(body: dict[str, Any], fitting: bool) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, **body}
    assert agrees(crd(), obj) is fitting


def test_what_it_cannot_tell_is_left_to_the_walk() -> None:
    compiled = crd()
    deep: Any = {}
    for _ in range(600):
        deep = {"next": deep}
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": 1, "node": deep}}
    assert not fits(compiled, obj) and validate_module.validate(compiled, obj) == []  # too deep for C: the walk says
    assert not fits([], obj) and not fits([["not", "a", "node"]], obj)
    with pytest.raises(TypeError):
        fits(tuple(compiled), obj)  # (validate() gives the walk anything but a list)
    assert validate_module.validate(tuple(compiled), obj) == []  # type: ignore[arg-type]


def test_a_property_compiled_to_any_is_checked_against_the_last_node_as_the_walk_does() -> None:
    compiled = compile_schema({"type": "object", "properties": {"a": "not a schema", "b": {"type": "integer"}}})
    assert compiled[0][1]["a"] == -1
    for value in (1, "x"):
        agrees(compiled, {"a": value})


VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5)),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                      max_leaves=8)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            found += _paths(value, (*prefix, index))
    return found


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_a_mutated_deployment_is_judged_as_the_walk_judges_it(data: st.DataObject) -> None:
    obj = copy.deepcopy(yaml.safe_load(DEPLOYMENT))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(obj)[1:]))
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        action = data.draw(st.sampled_from(["set", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["name", "extra", "image", "labels", "ports", "x"]))] = data.draw(VALUES)
        else:
            parent[path[-1]] = data.draw(VALUES)
    agrees(builtin.compiled("1.32", "apps/v1", "Deployment"), obj)
