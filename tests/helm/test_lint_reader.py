"""The chart's optional ClusterRoles for `fieldwarden lint --cluster` in CI (values `lintReader`)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from tests.helm.chart import KUBE_VERSIONS, render

READ = ["get", "list"]


def lint_roles(values: dict[str, Any] | None) -> dict[str, dict[tuple[str, str], list[str]]]:
    """name -> (apiGroup, resource) -> verbs, for the chart's lint roles."""
    roles = {}
    for obj in render(values):
        if obj["kind"] == "ClusterRole" and obj["metadata"]["name"].startswith("fieldwarden-lint-"):
            grants: dict[tuple[str, str], list[str]] = {}
            for rule in obj["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        grants.setdefault((group, resource), [])
                        grants[(group, resource)] = sorted({*grants[(group, resource)], *rule["verbs"]})
            roles[obj["metadata"]["name"]] = grants
    return roles


def test_off_by_default_and_never_bound() -> None:
    assert lint_roles(None) == {}
    assert lint_roles({"lintReader": {"dryRun": True}}) == {}  # dryRun adds to create
    objects = render({"lintReader": {"create": True, "dryRun": True}})
    bound = {b["roleRef"]["name"] for b in objects if b["kind"] in ("ClusterRoleBinding", "RoleBinding")}
    assert not {name for name in bound if "lint" in name}


def test_the_read_only_role_gets_and_lists_and_the_dry_run_role_also_creates_and_patches() -> None:
    roles = lint_roles({"lintReader": {"create": True, "dryRun": True}})
    reader, dryrun = roles["fieldwarden-lint-reader"], roles["fieldwarden-lint-dryrun"]
    assert reader[("", "namespaces")] == READ and dryrun[("", "namespaces")] == READ
    assert reader[("apps", "deployments")] == READ
    assert dryrun[("apps", "deployments")] == ["create", "get", "list", "patch"]
    assert reader[("autoscaling", "horizontalpodautoscalers")] == READ  # listed for FW505 in every namespace
    verbs = {verb for grants in roles.values() for verbs in grants.values() for verb in verbs}
    assert verbs == {"get", "list", "create", "patch"}  # never update, delete, watch, escalate
    assert not [key for grants in roles.values() for key in grants if key[1] == "secrets" or "*" in key]


def test_resources_are_the_users_to_choose() -> None:
    roles = lint_roles({"lintReader": {"create": True, "resources": [
        {"apiGroups": ["example.com"], "resources": ["widgets"]}]}})
    assert set(roles["fieldwarden-lint-reader"]) == {
        ("", "namespaces"), ("autoscaling", "horizontalpodautoscalers"),
        ("autoscaling.k8s.io", "verticalpodautoscalers"), ("example.com", "widgets")}


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_the_roles_are_valid_kubernetes(version: str) -> None:
    roles = [obj for obj in render({"lintReader": {"create": True, "dryRun": True}})
             if obj["metadata"]["name"].startswith("fieldwarden-lint-")]
    assert sorted(role["metadata"]["name"] for role in roles) == ["fieldwarden-lint-dryrun", "fieldwarden-lint-reader"]
    for role in roles:
        assert version.startswith(kubernetes_validate.validate(role, version, strict=True))  # the schema used
    misspelt = {**roles[0], "rules": [{**{k: v for k, v in roles[0]["rules"][0].items() if k != "verbs"}, "verb": ["get"]}]}
    with pytest.raises(kubernetes_validate.ValidationError, match="'verbs' is a required property"):
        kubernetes_validate.validate(misspelt, version, strict=True)  # the control: a broken role is refused


def test_the_values_schema_refuses_unknown_keys() -> None:
    with pytest.raises(Exception, match="lintReader|additional"):
        render({"lintReader": {"create": True, "dryrun": True}})
