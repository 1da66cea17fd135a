"""policies/kube.py: group_kind's memo answers as the computation does and keeps only real-length names;
kinds_of (the set rules' kinds, made once per unit) answers for the list as it is now."""

from __future__ import annotations

from fieldwarden.policies import kube
from fieldwarden.policies.rule import SetObject


def test_group_kind_is_the_same_remembered_or_not() -> None:
    deployment = {"apiVersion": "extensions/v1beta1", "kind": "Deployment"}
    assert kube.group_kind(deployment) == kube.group_kind(dict(deployment)) == ("apps", "Deployment")
    assert kube.group_kind({"apiVersion": "v1", "kind": "Pod"}) == ("", "Pod")


def test_an_api_version_no_type_could_have_is_answered_but_not_remembered() -> None:
    """Any client may send a request: what it names must not stay in the process (docs/security.md)."""
    huge = "g" * 100_000 + "/v1"
    before = len(kube._GROUP_KINDS)
    assert kube.group_kind({"apiVersion": huge, "kind": "Widget"}) == ("g" * 100_000, "Widget")
    assert len(kube._GROUP_KINDS) == before
    assert all(len(api) + len(kind) <= kube._GROUP_KIND_TEXT_MAX for api, kind in kube._GROUP_KINDS)


def _item(api_version: str, kind: str, name: str) -> SetObject:
    data = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    return SetObject(kube.object_key(data, "default"), data, f"{name}.yaml:1")


def test_kinds_of_is_each_items_group_kind() -> None:
    objects = [_item("apps/v1", "Deployment", "a"), _item("extensions/v1beta1", "Deployment", "b"), _item("v1", "Service", "c")]
    assert kube.kinds_of(objects) == [kube.group_kind(item.data) for item in objects]
    assert kube.kinds_of(objects) == [("apps", "Deployment"), ("apps", "Deployment"), ("", "Service")]


def test_kinds_of_a_list_changed_since_is_made_again() -> None:
    """The set rules of a unit share one list; one that is then changed in place (a test, the webhook
    reusing it) must not be judged by the kinds it held before."""
    objects = [_item("v1", "Service", "a"), _item("v1", "ConfigMap", "b")]
    assert kube.kinds_of(objects) == [("", "Service"), ("", "ConfigMap")]
    objects[1] = _item("policy/v1", "PodDisruptionBudget", "b")
    assert kube.kinds_of(objects) == [("", "Service"), ("policy", "PodDisruptionBudget")]
    objects.append(_item("apps/v1", "StatefulSet", "c"))
    assert kube.kinds_of(objects) == [("", "Service"), ("policy", "PodDisruptionBudget"), ("apps", "StatefulSet")]
    del objects[0]
    assert kube.kinds_of(objects) == [("policy", "PodDisruptionBudget"), ("apps", "StatefulSet")]
    assert kube.kinds_of(list(objects)) == kube.kinds_of(objects)
