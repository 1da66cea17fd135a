"""helm/fieldwarden with `admission.mode: policies`: the exported policies instead of the webhook.

The template (templates/policies.yaml) is generated from the exporter by helm/sync_policies.py;
these tests check it is current, that each value set renders exactly what `fieldwarden export`
writes for the same configuration, version and exclusions, and what the mode leaves out.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from fieldwarden.policies.config import Settings
from fieldwarden.policies.export.assemble import Scope, export, target
from tests.helm.chart import CHART, NAMESPACE, REPO, Obj, chart, deployments, notes, of_kind, render

_spec = importlib.util.spec_from_file_location("sync_policies", REPO / "helm" / "sync_policies.py")
assert _spec is not None and _spec.loader is not None
sync_policies = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sync_policies)

POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                "MutatingAdmissionPolicyBinding")
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Service", "Secret",
                 "Certificate", "Issuer")
CONFIGS: dict[str, Obj] = {
    "defaults": {},
    "tuned": {"rules": {
        "FW401": {"enforcement": "warn", "exempt-namespaces": ["batch"], "exempt-groups": ["team<ops>&co"],
                  "require-gate-false": True},
        "pod-without-readiness-gate": {"condition-type": "example.com/Drained",
                                       "injected-label": {"key": "example.com/gated", "value": "yes"},
                                       "opt-out-annotation": "example.com/no-gate"},
        "FW403": {"on-create": "drop", "exempt-users": ["ci"], "custom-resources": [
            {"group": "argoproj.io", "kind": "Rollout"},
            {"group": "example.com", "kind": "Pool", "replicas-path": [], "template-path": ["spec", "pod"]},
            {"group": "argoproj.io", "kind": "Rollout", "replicas-path": ["spec", "count"]}]}}},
    "dryrun-and-selection": {"select": ["FW4"], "ignore": ["autoscaler-owned-field-reset"],
                             "rules": {"FW401": {"enforcement": "dryrun"}}},
}


def policies_values(config: Obj, version: str = "1.32", **admission: Any) -> Obj:
    return {"config": config, "admission": {"mode": "policies", "policies": {"kubernetesVersion": version},
                                            "excludedNamespaces": ["monitoring"], **admission}}


def policy_objects(objects: list[Obj]) -> list[Obj]:
    found = [o for o in objects if o["kind"] in POLICY_KINDS]
    for obj in found:  # the chart's own labels aside
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/component"] == "policies" and labels["app.kubernetes.io/instance"]
        obj["metadata"]["labels"] = {k: labels[k] for k in ("app.kubernetes.io/part-of", "fieldwarden.io/rule")}
    return found


def test_the_template_is_generated_from_the_current_exporter() -> None:
    assert sync_policies.TEMPLATE.read_text(encoding="utf-8") == sync_policies.template(), \
        "templates/policies.yaml is stale: run python3 helm/sync_policies.py"


@pytest.mark.parametrize("version", ["1.32", "1.34", "1.36"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_chart_installs_what_fieldwarden_export_writes(name: str, version: str) -> None:
    config = CONFIGS[name]
    rendered = policy_objects(render(policies_values(config, version)))
    scope = Scope(excluded_namespaces=(NAMESPACE, "kube-system", "monitoring"))
    assert rendered == export(Settings(config), target(version), scope).objects
    for obj in rendered:
        kubernetes_validate.validate(obj, f"{version}.0", strict=True)


def test_failure_policies_are_the_hooks_values() -> None:
    values = policies_values({}, "1.36", readinessGate={"enabled": True, "failurePolicy": "Fail", "timeoutSeconds": 5})
    found = {o["metadata"]["name"]: o["spec"]["failurePolicy"] for o in render(values)
             if o["kind"] in ("ValidatingAdmissionPolicy", "MutatingAdmissionPolicy")}
    assert found == {"fieldwarden-fw401-pod-update-not-image-only": "Ignore",
                     "fieldwarden-fw402-pod-without-readiness-gate": "Fail",
                     "fieldwarden-fw403-replicas": "Ignore", "fieldwarden-fw403-resources": "Ignore"}


def test_no_webhook_runs_in_policies_mode_but_the_gate_controller_does() -> None:
    objects = render(policies_values({}))
    assert [o for o in objects if o["kind"] in WEBHOOK_KINDS] == []
    assert list(deployments(objects)) == ["controller"]
    assert "webhook" not in {o["metadata"]["labels"].get("app.kubernetes.io/component") for o in objects}
    # RBAC: the API server reads the params (HPAs, VPAs) with its own loopback credentials: nothing to grant.
    assert {o["metadata"]["name"] for o in of_kind(objects, "ClusterRole")} == {
        "fieldwarden-controller", "fieldwarden-set-image"}
    without_gate = render(policies_values({}, readinessGate={"enabled": False, "failurePolicy": "Ignore",
                                                            "timeoutSeconds": 5}))
    assert deployments(without_gate) == {}
    assert [o["metadata"]["name"] for o in without_gate if o["kind"] == "MutatingAdmissionPolicy"] == [
        "fieldwarden-fw403-replicas", "fieldwarden-fw403-resources"]


def test_webhook_mode_renders_no_policy() -> None:
    assert [o for o in render(None) if o["kind"] in POLICY_KINDS] == []
    assert [o for o in render({"config": {"select": ["FW4"]}}) if o["kind"] in POLICY_KINDS] == []


def test_a_rule_disabled_by_its_value_or_by_the_configuration_is_not_installed() -> None:
    off = {"enabled": False, "failurePolicy": "Ignore", "timeoutSeconds": 5}
    for values in (policies_values({}, imageOnlyPodUpdates=off), policies_values({"ignore": ["FW401"]})):
        assert not [o for o in render(values) if o["kind"] == "ValidatingAdmissionPolicy"]


@pytest.mark.parametrize("version, admission, message", [
    ("1.29", {}, "Kubernetes 1.29 has no ValidatingAdmissionPolicy"),
    ("1.31", {}, "Kubernetes 1.31 has no MutatingAdmissionPolicy (alpha from 1.32), which FW402 "
                 "(admission.readinessGate) and FW403 (admission.autoscalerOwnership) need"),
])
def test_versions_without_the_apis_stop_the_render(version: str, admission: Obj, message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message.replace("(", r"\(").replace(")", r"\)")):
        render(policies_values({}, version, **admission))


def test_validating_only_on_1_31() -> None:
    off = {"enabled": False, "failurePolicy": "Ignore", "timeoutSeconds": 5}
    objects = render(policies_values({}, "1.31", readinessGate=off, autoscalerOwnership=off))
    assert sorted(o["kind"] for o in objects if o["kind"] in POLICY_KINDS) == [
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


def test_the_mode_is_checked_by_the_schema() -> None:
    with pytest.raises(helm.HelmValuesError, match="admission/mode"):
        render({"admission": {"mode": "both"}})


def test_notes_say_which_policies_run_and_what_the_api_server_needs() -> None:
    text = notes(policies_values({}, "1.33"))
    assert "Admission policies (admission.mode=policies" in text
    assert "FW403 autoscaler-owned fields kept    MutatingAdmissionPolicy, failurePolicy Ignore" in text
    assert "--runtime-config=admissionregistration.k8s.io/v1alpha1=true" in text
    assert "Service" not in text and "TLS" not in text
    assert "--runtime-config" not in notes(policies_values({}, "1.36"))


def test_helm_lint_is_clean_in_policies_mode() -> None:
    values = policies_values(CONFIGS["tuned"], "1.36")  # (older versions: lint says the alpha/beta APIs are deprecated)
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []
    chart().validate_schema(chart().merge_values(values))
