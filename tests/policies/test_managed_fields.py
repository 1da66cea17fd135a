"""Tests for fieldwarden.policies.managed_fields on real and hand-made managedFields."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.policies.managed_fields import (
    Conflict,
    ManagedFieldsError,
    ManagerEntry,
    conflicts,
    field_managers,
    owned_fields,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "managed_fields"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def ssa_deployment() -> dict[str, Any]:
    """`object` of a real `kubectl apply --server-side --field-manager=test` request."""
    return load("deployment-update-server-side-apply.object.json")


@pytest.fixture
def scaled_deployment() -> dict[str, Any]:
    """`oldObject` of a real request: a Deployment after `kubectl scale` (subresource)."""
    return load("deployment-update-apply.oldObject.json")


CONTAINER = '.spec.template.spec.containers[name="web"]'
CSA_FIELDS = [
    (("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
     ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"),
    (("spec", "progressDeadlineSeconds"), ".spec.progressDeadlineSeconds"),
    (("spec", "revisionHistoryLimit"), ".spec.revisionHistoryLimit"),
    (("spec", "selector"), ".spec.selector"),
    (("spec", "strategy", "rollingUpdate", "maxSurge"), ".spec.strategy.rollingUpdate.maxSurge"),
    (("spec", "strategy", "rollingUpdate", "maxUnavailable"),
     ".spec.strategy.rollingUpdate.maxUnavailable"),
    (("spec", "strategy", "type"), ".spec.strategy.type"),
    (("spec", "template", "metadata", "labels", "app"), ".spec.template.metadata.labels.app"),
    (("spec", "template", "spec", "containers", 0, "imagePullPolicy"),
     CONTAINER + ".imagePullPolicy"),
    (("spec", "template", "spec", "containers", 0, "name"), CONTAINER + ".name"),
    (("spec", "template", "spec", "containers", 0, "resources"), CONTAINER + ".resources"),
    (("spec", "template", "spec", "containers", 0, "terminationMessagePath"),
     CONTAINER + ".terminationMessagePath"),
    (("spec", "template", "spec", "containers", 0, "terminationMessagePolicy"),
     CONTAINER + ".terminationMessagePolicy"),
    (("spec", "template", "spec", "dnsPolicy"), ".spec.template.spec.dnsPolicy"),
    (("spec", "template", "spec", "restartPolicy"), ".spec.template.spec.restartPolicy"),
    (("spec", "template", "spec", "schedulerName"), ".spec.template.spec.schedulerName"),
    (("spec", "template", "spec", "securityContext"), ".spec.template.spec.securityContext"),
    (("spec", "template", "spec", "terminationGracePeriodSeconds"),
     ".spec.template.spec.terminationGracePeriodSeconds"),
]


def get(obj: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


# --- real data --------------------------------------------------------------------


def test_field_managers_on_real_server_side_apply(ssa_deployment: dict[str, Any]) -> None:
    test, csa = field_managers(ssa_deployment)
    assert test[:4] == ("test", "Apply", "apps/v1", "")
    assert test.fields == [
        (("spec", "replicas"), ".spec.replicas"),
        (("spec", "selector"), ".spec.selector"),
        (("spec", "template", "metadata", "labels", "app"), ".spec.template.metadata.labels.app"),
        (("spec", "template", "spec", "containers", 0, "image"), CONTAINER + ".image"),
        (("spec", "template", "spec", "containers", 0, "name"), CONTAINER + ".name"),
    ]
    assert csa[:4] == ("kubectl-client-side-apply", "Update", "apps/v1", "")
    assert csa.fields == CSA_FIELDS
    # every returned path really points into the object
    assert get(ssa_deployment, test.fields[0][0]) == 2
    assert get(ssa_deployment, test.fields[3][0]) == "nginx:1.27"
    assert get(ssa_deployment, csa.fields[0][0]).startswith('{"apiVersion":"apps/v1"')


def test_conflicts_for_the_applying_manager(ssa_deployment: dict[str, Any]) -> None:
    found = conflicts(ssa_deployment, ["test"])
    assert [(c.path, c.ssa_path) for c in found] == CSA_FIELDS
    assert {c[2:] for c in found} == {("kubectl-client-side-apply", "Update", "apps/v1", "")}
    # co-owned by "test" and the client-side-apply manager: still a conflict
    assert (("spec", "selector"), ".spec.selector") in [(c.path, c.ssa_path) for c in found]
    # replicas and image now belong to "test" alone
    assert ".spec.replicas" not in {c.ssa_path for c in found}
    assert CONTAINER + ".image" not in {c.ssa_path for c in found}


def test_conflicts_for_the_other_manager(ssa_deployment: dict[str, Any]) -> None:
    found = conflicts(ssa_deployment, {"kubectl-client-side-apply"})
    assert [c.ssa_path for c in found] == [
        ".spec.replicas", ".spec.selector", ".spec.template.metadata.labels.app",
        CONTAINER + ".image", CONTAINER + ".name",
    ]
    assert all(c.manager == "test" and c.operation == "Apply" for c in found)
    assert conflicts(ssa_deployment, {"test", "kubectl-client-side-apply"}) == []


def test_a_bare_string_is_one_manager_name(ssa_deployment: dict[str, Any]) -> None:
    assert conflicts(ssa_deployment, "test") == conflicts(ssa_deployment, ["test"])
    # not the characters of "test-x"... nor a substring match
    assert len(conflicts(ssa_deployment, "tes")) == len(CSA_FIELDS) + 5


def test_real_scale_subresource_entry(scaled_deployment: dict[str, Any]) -> None:
    kubectl_scale = field_managers(scaled_deployment)[0]
    assert kubectl_scale == ManagerEntry(
        "kubectl", "Update", "apps/v1", "scale", [(("spec", "replicas"), ".spec.replicas")]
    )
    found = conflicts(scaled_deployment, ["kubectl-client-side-apply"])
    assert found == [
        Conflict(("spec", "replicas"), ".spec.replicas", "kubectl", "Update", "apps/v1", "scale")
    ]


def test_hpa_owned_replicas_conflict(ssa_deployment: dict[str, Any]) -> None:
    """The brief's `conflict with "kube-controller-manager": .spec.replicas`."""
    obj = copy.deepcopy(ssa_deployment)
    obj["metadata"]["managedFields"] = [{
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "time": "2026-11-22T02:20:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}},
        "subresource": "scale",
    }] + obj["metadata"]["managedFields"]
    found = conflicts(obj, ["test"])
    assert found[0] == Conflict(
        ("spec", "replicas"), ".spec.replicas",
        "kube-controller-manager", "Update", "apps/v1", "scale",
    )
    assert f'conflict with "{found[0].manager}": {found[0].ssa_path}' == (
        'conflict with "kube-controller-manager": .spec.replicas'
    )
    assert found[1:] == conflicts(ssa_deployment, ["test"])


# --- hand-made FieldsV1 -----------------------------------------------------------


def test_k_with_multiple_keys_and_numbers() -> None:
    obj = {"spec": {"ports": [
        {"containerPort": 80, "protocol": "UDP", "name": "dns"},
        {"containerPort": 80, "protocol": "TCP", "name": "http"},
        {"containerPort": 8080.0, "protocol": "TCP", "name": "alt"},
    ]}}
    trie: dict[str, Any] = {"f:spec": {"f:ports": {
        # keys deliberately unsorted: the text sorts them, as the server does
        'k:{"protocol":"TCP","containerPort":80}': {".": {}, "f:name": {}},
        'k:{"containerPort":8080,"protocol":"TCP"}': {"f:name": {}},
        'k:{"containerPort":1000000,"protocol":"TCP"}': {"f:name": {}},
        'k:{"containerPort":"80","protocol":"TCP"}': {"f:name": {}},
    }}}
    assert owned_fields(trie, obj) == [
        (("spec", "ports", 1, "name"), '.spec.ports[containerPort=80,protocol="TCP"].name'),
        (("spec", "ports", 2, "name"), '.spec.ports[containerPort=8080,protocol="TCP"].name'),
    ]


def test_k_renders_numbers_like_the_api_server() -> None:
    # the server decodes k:/v: JSON numbers as float64 and prints them with Go's %v
    items = [{"n": 1000000, "x": 1}, {"n": 2.5, "x": 1}, {"n": True, "x": 1}, {"n": None, "x": 1}]
    trie: dict[str, Any] = {"f:items": {
        'k:{"n":1000000}': {"f:x": {}}, 'k:{"n":2.5}': {"f:x": {}},
        'k:{"n":true}': {"f:x": {}}, 'k:{"n":null}': {"f:x": {}},
    }}
    assert [text for _, text in owned_fields(trie, {"items": items})] == [
        ".items[n=1e+06].x", ".items[n=2.5].x", ".items[n=true].x", ".items[n=null].x",
    ]


def test_k_does_not_confuse_booleans_and_numbers() -> None:
    obj = {"items": [{"on": True, "v": "a"}, {"on": 1, "v": "b"}]}
    found = owned_fields({"f:items": {'k:{"on":1}': {"f:v": {}}}}, obj)
    assert found == [(("items", 1, "v"), ".items[on=1].v")]


def test_k_picks_the_first_match_and_needs_every_key_field() -> None:
    obj = {"c": [{"name": "a"}, {"name": "web", "x": 1}, {"name": "web", "x": 2}]}
    assert owned_fields({"f:c": {'k:{"name":"web"}': {"f:x": {}}}}, obj) == [
        (("c", 1, "x"), '.c[name="web"].x')
    ]
    # a key field absent from the item does not match (no server-side defaulting here)
    assert owned_fields({"f:c": {'k:{"name":"web","port":1}': {"f:x": {}}}}, obj) == []


def test_v_set_items() -> None:
    obj = {"spec": {"finalizers": ["kubernetes", "example.com/cleanup"],
                    "sets": [{"a": 1}, [1, 2]]}}
    trie: dict[str, Any] = {"f:spec": {
        "f:finalizers": {'v:"kubernetes"': {}, 'v:"example.com/cleanup"': {}, 'v:"gone"': {}},
        "f:sets": {'v:{"a":1}': {}, "v:[1,2]": {}},
    }}
    assert owned_fields(trie, obj) == [
        (("spec", "finalizers", 0), '.spec.finalizers[="kubernetes"]'),
        (("spec", "finalizers", 1), '.spec.finalizers[="example.com/cleanup"]'),
        (("spec", "sets", 0), ".spec.sets[=a=1]"),
        (("spec", "sets", 1), ".spec.sets[=[1,2]]"),
    ]


def test_i_index_items() -> None:
    obj = {"spec": {"items": ["a", "b", "c", {"x": 1}]}}
    trie: dict[str, Any] = {"f:spec": {"f:items": {"i:0": {}, "i:3": {"f:x": {}}, "i:9": {}}}}
    assert owned_fields(trie, obj) == [
        (("spec", "items", 0), ".spec.items[0]"),
        (("spec", "items", 3, "x"), ".spec.items[3].x"),
    ]


def test_dot_entries_are_not_fields_but_items_are_descended() -> None:
    obj = {"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    trie: dict[str, Any] = {
        "f:metadata": {"f:labels": {".": {}}},
        "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}},
    }
    assert owned_fields(trie, obj) == [
        (("spec", "containers", 0, "image"), '.spec.containers[name="web"].image'),
    ]


def test_missing_fields_and_items_are_skipped() -> None:
    obj = {"spec": {"replicas": None, "containers": "not-a-list", "list": [1]}}
    trie: dict[str, Any] = {"f:spec": {
        "f:replicas": {}, "f:paused": {},
        "f:containers": {'k:{"name":"web"}': {"f:image": {}}},
        "f:list": {"v:2": {}, "i:1": {}},
        "f:template": {"f:spec": {"f:dnsPolicy": {}}},
    }, "f:status": {"f:replicas": {}}}
    # an explicit null still exists in the object
    assert owned_fields(trie, obj) == [(("spec", "replicas"), ".spec.replicas")]


def test_map_keys_are_printed_verbatim_like_the_api_server() -> None:
    obj = {"metadata": {"annotations": {
        "example.com/owner": "team-a", "a[0]": "x", 'quote"d': "y",
    }}}
    trie: dict[str, Any] = {"f:metadata": {"f:annotations": {
        "f:example.com/owner": {}, "f:a[0]": {}, 'f:quote"d': {},
    }}}
    assert owned_fields(trie, obj) == [
        (("metadata", "annotations", "example.com/owner"),
         ".metadata.annotations.example.com/owner"),
        (("metadata", "annotations", "a[0]"), ".metadata.annotations.a[0]"),
        (("metadata", "annotations", 'quote"d'), '.metadata.annotations.quote"d'),
    ]


def test_strings_in_keys_are_go_quoted() -> None:
    obj = {"c": [{"name": 'a"b\\c\nd\x01é'}]}
    trie: dict[str, Any] = {"f:c": {"k:" + json.dumps({"name": 'a"b\\c\nd\x01é'}): {"f:name": {}}}}
    assert owned_fields(trie, obj) == [
        (("c", 0, "name"), '.c[name="a\\"b\\\\c\\nd\\x01é"].name'),
    ]


@pytest.mark.parametrize("bad_key", [
    'k:{"name":',          # truncated JSON
    "k:[1]",               # k: needs an object
    "k:{}",                # ...with at least one key field
    'v:"unterminated',
    'v:"a" trailing',
    "i:x",
    "i:-1",
    "x:foo",               # unknown prefix
    "spec",                # no prefix at all
])
def test_malformed_keys_raise_and_name_the_key(bad_key: str) -> None:
    with pytest.raises(ManagedFieldsError) as info:
        owned_fields({"f:spec": {bad_key: {}}}, {"spec": {}})
    assert repr(bad_key) in str(info.value)


def test_malformed_keys_raise_even_under_missing_items() -> None:
    with pytest.raises(ManagedFieldsError, match="bogus"):
        owned_fields({"f:nothere": {"i:0": {"bogus": {}}}}, {})


def test_non_object_tries_raise() -> None:
    with pytest.raises(ManagedFieldsError):
        owned_fields(["f:spec"], {})  # type: ignore[arg-type]
    with pytest.raises(ManagedFieldsError, match="f:replicas"):
        owned_fields({"f:spec": {"f:replicas": True}}, {"spec": {"replicas": 1}})


# --- field_managers / conflicts edge cases ----------------------------------------


def _entry(fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"manager": "m", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": fields, **extra}


def test_field_managers_skips_non_fieldsv1_entries() -> None:
    obj = {"metadata": {"managedFields": [
        _entry({"f:a": {}}, fieldsType="FieldsV2"),
        {"manager": "m", "operation": "Update", "fieldsV1": {"f:a": {}}},  # no fieldsType
        _entry(None),  # type: ignore[arg-type]
        {"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1"},
        _entry({"f:a": {}}, manager="kept"),
    ]}, "a": 1}
    assert field_managers(obj) == [ManagerEntry("kept", "Update", "v1", "", [(("a",), ".a")])]
    assert field_managers({"metadata": {}}) == []
    assert field_managers({}) == []


def test_field_managers_rejects_malformed_entries() -> None:
    with pytest.raises(ManagedFieldsError, match="must be a list"):
        field_managers({"metadata": {"managedFields": {"manager": "m"}}})
    with pytest.raises(ManagedFieldsError, match=r"managedFields\[0\]"):
        field_managers({"metadata": {"managedFields": ["m"]}})
    with pytest.raises(ManagedFieldsError, match="manager"):
        field_managers({"metadata": {"managedFields": [_entry({}, manager=7)]}})
    with pytest.raises(ManagedFieldsError, match=r"managedFields\[1\] \('m'\).*'q:x'"):
        field_managers({"metadata": {"managedFields": [_entry({}), _entry({"q:x": {}})]}})


def test_conflicts_skip_status_and_bookkeeping_metadata() -> None:
    obj = {
        "metadata": {"name": "x", "uid": "u", "resourceVersion": "1", "generation": 2,
                     "creationTimestamp": "t", "labels": {"app": "x"},
                     "managedFields": [_entry({
                         "f:metadata": {"f:uid": {}, "f:resourceVersion": {}, "f:generation": {},
                                        "f:creationTimestamp": {}, "f:managedFields": {},
                                        "f:name": {}, "f:labels": {"f:app": {}}},
                         "f:status": {"f:replicas": {}},
                         "f:spec": {"f:replicas": {}},
                     }, manager="other")]},
        "spec": {"replicas": 1},
        "status": {"replicas": 1},
    }
    assert [c.ssa_path for c in conflicts(obj, ["me"])] == [
        ".metadata.name", ".metadata.labels.app", ".spec.replicas",
    ]
    # field_managers still reports everything that exists
    assert len(field_managers(obj)[0].fields) == 9
