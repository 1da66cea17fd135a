"""The exporter (policies/export/assemble.py): the objects it writes, for which versions, and the report.

What the objects decide is proven behind a real kube-apiserver (tests/e2e/test_exported_policies.py,
against the webhook); here: their shape, per version and configuration, checked against the
Kubernetes OpenAPI schemas of the version they are for. The command: test_command.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from fieldwarden.policies.config import Settings
from fieldwarden.policies.export.assemble import (
    APPROXIMATE, DISABLED, EXACT, NOT_EXPORTABLE, ExportError, Scope, export, report_text, target, yaml_text,
)
from fieldwarden.policies.registry import RULES
from fieldwarden.policies.rule import ADMISSION

Obj = dict[str, Any]
TUNED: Obj = {"rules": {
    "FW401": {"enforcement": "warn", "exempt-namespaces": ["batch"], "exempt-users": ["system:serviceaccount:kueue:kueue"],
              "require-gate-false": True, "allow-gated-pod-scheduling-changes": False},
    "pod-without-readiness-gate": {"condition-type": "example.com/Drained",
                                   "injected-label": {"key": "example.com/gated", "value": "yes"}},
    "FW403": {"on-create": "clamp", "custom-resources": [{"group": "argoproj.io", "kind": "Rollout"}]},
}}


def objects(config: Obj | None = None, version: str = "1.32", scope: Scope = Scope()) -> list[Obj]:
    return export(Settings(config), target(version), scope).objects


def by_name(found: list[Obj]) -> dict[str, Obj]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in found}


# --- versions ---------------------------------------------------------------------------


@pytest.mark.parametrize("version, mutating", [
    ("1.30", None), ("1.31.4", None),
    ("1.32", "admissionregistration.k8s.io/v1alpha1"), ("v1.33.1", "admissionregistration.k8s.io/v1alpha1"),
    ("1.34", "admissionregistration.k8s.io/v1beta1"), ("1.35.0-rc.1", "admissionregistration.k8s.io/v1beta1"),
    ("1.36", "admissionregistration.k8s.io/v1"), ("1.40", "admissionregistration.k8s.io/v1"),
])
def test_each_version_gets_the_api_it_serves(version: str, mutating: str | None) -> None:
    where = target(version)
    assert where.mutating_api == mutating and where.validating_api == "admissionregistration.k8s.io/v1"
    if mutating and not mutating.endswith("/v1"):
        assert "--feature-gates=MutatingAdmissionPolicy=true" in where.mutating_note
        assert f"--runtime-config={mutating}=true" in where.mutating_note
    else:
        assert where.mutating_note == ""


@pytest.mark.parametrize("version", ["1.29", "1.28.3", "0.9"])
def test_versions_without_validating_admission_policy_v1_are_refused(version: str) -> None:
    with pytest.raises(ExportError, match="no ValidatingAdmissionPolicy admissionregistration.k8s.io/v1"):
        target(version)


def test_a_version_that_is_none_is_refused() -> None:
    with pytest.raises(ExportError, match="expected a Kubernetes version"):
        target("latest")


def test_without_mutating_admission_policy_the_mutating_rules_must_be_disabled() -> None:
    with pytest.raises(ExportError, match="FW402 and FW403 need: disable them .--ignore FW402,FW403."):
        objects(version="1.31")
    only = objects({"ignore": ["FW402", "FW403"]}, version="1.31")
    assert [o["kind"] for o in only] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


@pytest.mark.parametrize("version", ["1.32", "1.34", "1.36"])
@pytest.mark.parametrize("config", [None, TUNED], ids=["defaults", "tuned"])
def test_every_object_fits_the_schema_of_its_version(version: str, config: Obj | None) -> None:
    found = objects(config, version)
    assert len(found) == 8
    for obj in found:
        kubernetes_validate.validate(obj, f"{version}.0", strict=True)


# --- the objects --------------------------------------------------------------------------


def test_one_policy_and_one_binding_per_rule_part() -> None:
    found = by_name(objects())
    assert sorted(found) == [
        "MutatingAdmissionPolicy/fieldwarden-fw402-pod-without-readiness-gate",
        "MutatingAdmissionPolicy/fieldwarden-fw403-replicas",
        "MutatingAdmissionPolicy/fieldwarden-fw403-resources",
        "MutatingAdmissionPolicyBinding/fieldwarden-fw402-pod-without-readiness-gate",
        "MutatingAdmissionPolicyBinding/fieldwarden-fw403-replicas",
        "MutatingAdmissionPolicyBinding/fieldwarden-fw403-resources",
        "ValidatingAdmissionPolicy/fieldwarden-fw401-pod-update-not-image-only",
        "ValidatingAdmissionPolicyBinding/fieldwarden-fw401-pod-update-not-image-only",
    ]
    for name, obj in found.items():
        if name.split("/")[0].endswith("Binding"):
            continue
        binding = found[name.replace("/", "Binding/", 1)]
        assert binding["spec"]["policyName"] == obj["metadata"]["name"]
        assert obj["metadata"]["labels"]["fieldwarden.io/rule"] in ("FW401", "FW402", "FW403")


def test_the_resources_are_matched_and_fw401s_subresources_behind_its_match_condition() -> None:
    found = by_name(objects(TUNED))
    rules = {name: o["spec"]["matchConstraints"]["resourceRules"] for name, o in found.items() if "Binding" not in name}
    assert rules["ValidatingAdmissionPolicy/fieldwarden-fw401-pod-update-not-image-only"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
         "resources": ["pods", "pods/status", "pods/ephemeralcontainers", "pods/resize"], "scope": "Namespaced"}]
    policy = found["ValidatingAdmissionPolicy/fieldwarden-fw401-pod-update-not-image-only"]
    judged = policy["spec"]["matchConditions"][0]
    assert judged["name"] == "judged-request" and "sub in [] ||" in judged["expression"]
    assert "(sub == 'status' && " in judged["expression"]
    assert rules["MutatingAdmissionPolicy/fieldwarden-fw402-pod-without-readiness-gate"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "Namespaced"}]
    for name in ("fw403-replicas", "fw403-resources"):
        listed = rules[f"MutatingAdmissionPolicy/fieldwarden-{name}"]
        resources = {(group, r) for rule in listed for group in rule["apiGroups"] for r in rule["resources"]}
        assert resources == {("apps", "deployments"), ("apps", "statefulsets"), ("apps", "replicasets"),
                             ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs"),
                             ("", "replicationcontrollers"), ("argoproj.io", "*")}  # `*`: no subresource
        assert all("/" not in r for rule in listed for r in rule["resources"])
    assert rules["MutatingAdmissionPolicy/fieldwarden-fw403-resources"][0]["operations"] == ["UPDATE"]


def test_fw401_protects_the_opt_out_label_the_bindings_honour_and_judges_the_listed_subresources() -> None:
    config = {"rules": {"FW401": {"subresources": ["resize"]}}}
    result = export(Settings(config), target("1.32"), Scope(opt_out_label=("example.com/skip", "yes")))
    policy = by_name(result.objects)["ValidatingAdmissionPolicy/fieldwarden-fw401-pod-update-not-image-only"]
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    label = '{"key":"example.com/skip","value":"yes"}'
    assert label in variables["exemptions"] and variables["reasons"].startswith("variables.exemptions + ")
    judged = policy["spec"]["matchConditions"][0]["expression"]
    assert 'sub in ["resize"] ||' in judged and label in judged
    plain = by_name(objects())["ValidatingAdmissionPolicy/fieldwarden-fw401-pod-update-not-image-only"]
    plain_variables = {v["name"]: v["expression"] for v in plain["spec"]["variables"]}
    assert '{"key":"fieldwarden.io/admission","value":"disabled"}' in plain_variables["exemptions"]


def test_the_autoscalers_are_the_params_of_the_request_namespace() -> None:
    found = by_name(objects())
    for name, kind in (("fw403-replicas", "HorizontalPodAutoscaler"), ("fw403-resources", "VerticalPodAutoscaler")):
        assert found[f"MutatingAdmissionPolicy/fieldwarden-{name}"]["spec"]["paramKind"]["kind"] == kind
        # no namespace: the request's; no selector terms: every autoscaler there; none: nothing to do
        assert found[f"MutatingAdmissionPolicyBinding/fieldwarden-{name}"]["spec"]["paramRef"] == {
            "selector": {}, "parameterNotFoundAction": "Allow"}


@pytest.mark.parametrize("enforcement, actions", [("deny", ["Deny"]), ("warn", ["Warn"]), ("dryrun", ["Audit"])])
def test_enforcement_is_the_validation_actions(enforcement: str, actions: list[str]) -> None:
    found = by_name(objects({"rules": {"FW401": {"enforcement": enforcement}}}))
    binding = found["ValidatingAdmissionPolicyBinding/fieldwarden-fw401-pod-update-not-image-only"]
    assert binding["spec"]["validationActions"] == actions


def test_exemptions_are_match_conditions_with_the_configured_values() -> None:
    policy = by_name(objects(TUNED))["ValidatingAdmissionPolicy/fieldwarden-fw401-pod-update-not-image-only"]
    conditions = {c["name"]: c["expression"] for c in policy["spec"]["matchConditions"]}
    assert conditions["namespace-not-exempt"] == '!(request.namespace in ["batch"])'
    assert '["system:serviceaccount:kueue:kueue"]' in conditions["user-not-exempt"]
    ignored = conditions["not-ignored-by-annotation"]
    assert ignored.startswith("![oldObject != null ? oldObject : object].map(stored, ")  # a request cannot exempt itself
    assert '"fieldwarden.io/ignore" in stored.metadata.annotations' in ignored
    assert '"FW401"' in conditions["not-ignored-by-annotation"]
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["gated"].startswith("false && ")  # allow-gated-pod-scheduling-changes: false
    assert '"example.com/Drained"' not in json.dumps(policy)  # FW401's own gate-condition-type is its default
    assert '== "InPlaceUpdateReady"' in variables["gateConditions"]
    validation = policy["spec"]["validations"][0]
    assert validation["reason"] == "Forbidden" and "[FW401 pod-update-not-image-only] " in validation["messageExpression"]


def test_the_readiness_gate_is_a_json_patch_with_the_configured_gate_and_label() -> None:
    policy = by_name(objects(TUNED))["MutatingAdmissionPolicy/fieldwarden-fw402-pod-without-readiness-gate"]
    spec = policy["spec"]
    assert spec["reinvocationPolicy"] == "IfNeeded"
    assert [m["patchType"] for m in spec["mutations"]] == ["JSONPatch"]  # readinessGates is an atomic list
    assert '{"conditionType": "example.com/Drained"}' in spec["mutations"][0]["jsonPatch"]["expression"]
    assert '{"key":"example.com/gated","value":"yes"}.key' in spec["mutations"][0]["jsonPatch"]["expression"]


@pytest.mark.parametrize("version", ["1.32", "1.34", "1.36"])
def test_no_mutating_policy_has_both_match_conditions_and_variables(version: str) -> None:
    """The first such policy an API server validates is refused (kubernetes/kubernetes#134808)."""
    for obj in objects(TUNED, version):
        if obj["kind"] == "MutatingAdmissionPolicy":
            assert not (obj["spec"].get("matchConditions") and obj["spec"].get("variables")), obj["metadata"]["name"]


def test_scope_failure_policy_and_names() -> None:
    scope = Scope(excluded_namespaces=("kube-system", "platform"), opt_out_label=None, failure_policy="Fail",
                  prefix="corp")
    found = by_name(objects(None, "1.36", scope))
    assert all(name.split("/")[1].startswith("corp-") for name in found)
    policies = {n: o["spec"]["failurePolicy"] for n, o in found.items() if "Binding" not in n}
    # The VPA's policy is always Ignore: without the VPA CRD it cannot be evaluated at all.
    assert policies == {"ValidatingAdmissionPolicy/corp-fw401-pod-update-not-image-only": "Fail",
                        "MutatingAdmissionPolicy/corp-fw402-pod-without-readiness-gate": "Fail",
                        "MutatingAdmissionPolicy/corp-fw403-replicas": "Fail",
                        "MutatingAdmissionPolicy/corp-fw403-resources": "Ignore"}
    binding = found["ValidatingAdmissionPolicyBinding/corp-fw401-pod-update-not-image-only"]
    assert binding["spec"]["matchResources"] == {"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "platform"]}]}}
    with pytest.raises(ExportError, match="failure policy"):
        objects(None, "1.36", Scope(failure_policy="Retry"))


def test_default_scope_excludes_kube_system_and_the_opt_out_label() -> None:
    binding = by_name(objects())["MutatingAdmissionPolicyBinding/fieldwarden-fw403-replicas"]
    assert binding["spec"]["matchResources"] == {
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
            {"key": "fieldwarden.io/admission", "operator": "NotIn", "values": ["disabled"]}]},
        "objectSelector": {"matchExpressions": [
            {"key": "fieldwarden.io/admission", "operator": "NotIn", "values": ["disabled"]}]},
    }


def test_disabled_rules_are_not_exported() -> None:
    found = objects({"select": ["FW403"]})
    assert {o["metadata"]["labels"]["fieldwarden.io/rule"] for o in found} == {"FW403"}


def test_the_structure_never_depends_on_option_values() -> None:
    """Only the CEL literals do: what lets one chart template serve every configuration."""
    def shape(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shape(v) for v in value]
        return type(value).__name__

    plain = objects({"ignore": []})
    tuned = objects({"rules": {**TUNED["rules"], "FW403": {"on-create": "drop"}}})
    assert [shape(o) for o in plain] == [shape(o) for o in tuned]


# --- the report ----------------------------------------------------------------------------


def test_every_rule_has_a_verdict_and_the_admission_rules_say_how() -> None:
    result = export(Settings(), target("1.32"))
    verdicts = {entry.code: entry.verdict for entry in result.report}
    assert set(verdicts) == set(RULES)
    assert verdicts["FW401"] == EXACT and verdicts["FW402"] == EXACT and verdicts["FW403"] == APPROXIMATE
    for code, rule in RULES.items():
        if rule.SCOPE != ADMISSION:
            assert verdicts[code] == NOT_EXPORTABLE
    text = report_text(result)
    assert "FW403 autoscaler-owned-field-reset: approximate" in text
    assert "No warnings: a MutatingAdmissionPolicy cannot add one" in text
    assert "writes MutatingAdmissionPolicy/fieldwarden-fw403-resources" in text
    assert "not exportable: FW103, FW104, FW105, FW301, FW302, FW303, FW304, FW305: a cross-object linter rule" in text


def test_disabled_rules_are_reported_as_such() -> None:
    result = export(Settings({"ignore": ["FW402"]}), target("1.34"))
    assert {e.code: e.verdict for e in result.report}["FW402"] == DISABLED


def test_yaml_reads_back_as_the_objects_and_says_what_the_api_server_needs() -> None:
    result = export(Settings(TUNED), target("1.34"))
    text = yaml_text(result, "0.1.0")
    assert list(yaml.safe_load_all(text)) == result.objects
    assert text.count("# MutatingAdmissionPolicy is beta in Kubernetes 1.34") == 1 + 6
    assert "expression: |-\n" in text  # CEL as literal blocks
