"""policies/kube.py: group_kind's memo answers as the computation does and keeps only real-length names."""

from __future__ import annotations

from fieldwarden.policies import kube


def test_group_kind_is_the_same_remembered_or_not() -> None:
    deployment = {"apiVersion": "extensions/v1beta1", "kind": "Deployment"}
    assert kube.group_kind(deployment) == kube.group_kind(dict(deployment)) == ("apps", "Deployment")
    assert kube.group_kind({"apiVersion": "v1", "kind": "Pod"}) == ("", "Pod")


def test_an_api_version_no_type_could_have_is_answered_but_not_remembered() -> None:
    """Any client may send a request: what it names must not stay in the process (README, Security)."""
    huge = "g" * 100_000 + "/v1"
    before = len(kube._GROUP_KINDS)
    assert kube.group_kind({"apiVersion": huge, "kind": "Widget"}) == ("g" * 100_000, "Widget")
    assert len(kube._GROUP_KINDS) == before
    assert all(len(api) + len(kind) <= kube._GROUP_KIND_TEXT_MAX for api, kind in kube._GROUP_KINDS)
