"""helm/fieldwarden renders a valid, lint-clean, least-privilege install (through Helm's Go SDK).

Every value set below is rendered once (`helm template`, offline) and checked against the
Kubernetes schemas of the oldest version the chart supports and the newest known, against
`helm lint`, against fieldwarden's own linter, and for the properties the chart promises.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from fieldwarden.policies.config import SCHEMA_FILE, load_settings
from fieldwarden.policies.export.cel import judged_request, literal
from fieldwarden.webhook.gate import process as controller_cli
from fieldwarden.webhook.server import serve as serve_cli
from fieldwarden.webhook.gate.process import gate_settings
from tests.helm.chart import (
    CHART, KUBE_VERSIONS, NAMESPACE, REPO, Obj, chart, deployments, notes, of_kind, one, render, render_manifests,
    values_schema, webhooks,
)
from tests.helpers import lint

FAIL_CLOSED = {"admission": {hook: {"failurePolicy": "Fail", "timeoutSeconds": 10}
                             for hook in ("readinessGate", "autoscalerOwnership", "imageOnlyPodUpdates")}}
VALUE_SETS: dict[str, dict[str, Any] | None] = {
    "defaults": None,
    "cert-manager": {"tls": {"certManager": {"enabled": True}}},
    "cert-manager-issuer": {"tls": {"certManager": {
        "enabled": True, "issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}}}},
    "fail-closed": FAIL_CLOSED,
    "excluded-namespaces": {"admission": {
        "excludedNamespaces": ["monitoring", "kube-system", "argocd"],
        "namespaceSelectorExpressions": [{"key": "team", "operator": "Exists"}]}},
    "network-policy": {"networkPolicy": {
        "enabled": True, "apiServerCIDRs": ["10.0.0.0/28", "fd00::/64"],
        "metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}},
    "no-readiness-gate": {"admission": {"readinessGate": {"enabled": False}}},
    "no-set-image-role": {"setImageRole": {"create": False}},
    "validating-only": {"admission": {"readinessGate": {"enabled": False}, "autoscalerOwnership": {"enabled": False}}},
    "tuned": {
        "image": {"digest": "sha256:" + "ab" * 32},
        "commonLabels": {"team": "platform"},
        "config": {"rules": {"FW401": {"enforcement": "warn", "exempt-namespaces": ["batch"]},
                             "FW402": {"condition-type": "example.com/Drained",
                                       "injected-label": {"key": "example.com/gated", "value": "yes"}},
                             "FW403": {"on-create": "clamp"}},
                   "webhook": {"on-stale-inventory": "deny"}},
        "webhook": {"replicas": 3, "workers": 3, "preStopSleepSeconds": 10, "extraArgs": ["--log-level=debug"],
                    "podDisruptionBudget": {"enabled": True, "maxUnavailable": "50%"},
                    "nodeSelector": {"kubernetes.io/os": "linux"}, "priorityClassName": "system-cluster-critical",
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}],
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                   "whenUnsatisfiable": "ScheduleAnyway",
                                                   "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "webhook"}}}],
                    "podAnnotations": {"prometheus.io/scrape": "true"}},
        "controller": {"replicas": 3, "podDisruptionBudget": {"enabled": False}},
    },
}
SETS = sorted(VALUE_SETS)
Rule = tuple[str, str, tuple[str, ...]]  # (API group, resource, operations)
HOOKS: dict[str, tuple[str, str, str, list[Rule]]] = {  # webhook name -> (values key, configuration kind, path, rules)
    "readiness-gate.fieldwarden.io": ("readinessGate", "MutatingWebhookConfiguration", "/mutate", [
        ("", "pods", ("CREATE",))]),
    "autoscaler-ownership.fieldwarden.io": ("autoscalerOwnership", "MutatingWebhookConfiguration", "/mutate", [
        ("apps", "deployments", ("CREATE", "UPDATE")), ("apps", "statefulsets", ("CREATE", "UPDATE")),
        ("apps", "replicasets", ("CREATE", "UPDATE")), ("apps", "daemonsets", ("CREATE", "UPDATE")),
        ("batch", "jobs", ("CREATE", "UPDATE")), ("batch", "cronjobs", ("CREATE", "UPDATE")),
        ("", "replicationcontrollers", ("CREATE", "UPDATE"))]),
    "image-only-pod-updates.fieldwarden.io": ("imageOnlyPodUpdates", "ValidatingWebhookConfiguration", "/validate", [
        ("", "pods", ("UPDATE",)), ("", "pods/status", ("UPDATE",)), ("", "pods/ephemeralcontainers", ("UPDATE",)),
        ("", "pods/resize", ("UPDATE",))]),
}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
CERT_MANAGER_KINDS = {"Certificate", "Issuer"}  # CRDs: no Kubernetes schema


@functools.lru_cache(maxsize=None)
def _rendered(name: str) -> tuple[Obj, ...]:
    return tuple(render(VALUE_SETS[name]))


def rendered(name: str) -> list[Obj]:
    """The objects of a value set (rendered once per session; a deep copy per caller)."""
    return copy.deepcopy(list(_rendered(name)))


def merged(name: str) -> dict[str, Any]:
    """The values a render of that set used (the chart's defaults with the set laid over)."""
    return chart().merge_values(VALUE_SETS[name])


def pod_specs(objects: list[Obj]) -> list[Obj]:
    return [d["spec"]["template"]["spec"] for d in of_kind(objects, "Deployment")]


# --- valid and clean ---------------------------------------------------------------------


@pytest.mark.parametrize("name", SETS)
def test_every_object_is_valid_for_the_kubernetes_versions_supported(name: str) -> None:
    objects = rendered(name)
    assert objects
    for obj in objects:
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.SchemaNotFoundError:
                assert obj["kind"] in CERT_MANAGER_KINDS and obj["apiVersion"] == "cert-manager.io/v1", obj["kind"]
            except kubernetes_validate.ValidationError as error:
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} invalid for Kubernetes {version}: "
                            f"{error.message} at {'.'.join(map(str, error.path))}")


@pytest.mark.parametrize("name", SETS)
def test_fieldwarden_lint_finds_nothing_in_the_rendered_manifests(name: str, tmp_path: Path) -> None:
    manifests = render_manifests(VALUE_SETS[name])
    for template, text in manifests.items():
        if template.endswith(".yaml") and text.strip():
            (tmp_path / Path(template).name).write_text(text, encoding="utf-8")
    run = lint([str(tmp_path)], cwd=tmp_path)
    # cert-manager's kinds have no CRD in the chart: said once each (FW603, info), and nothing else
    unvalidated = sorted(f["object"].split("/")[0] for f in run.findings if f["code"] == "FW603")
    cert_manager = sorted({obj["kind"] for obj in rendered(name) if obj["apiVersion"] == "cert-manager.io/v1"})
    assert unvalidated == cert_manager, run.findings
    assert (run.code, [f for f in run.findings if f["code"] != "FW603"]) == (0, []), run.stderr
    assert "skipped" not in run.stderr


@pytest.mark.parametrize("name", ["defaults", "cert-manager", "validating-only"])
def test_helm_lint_strict_has_nothing_above_info(name: str) -> None:
    report = helm.lint(CHART, VALUE_SETS[name], strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("name", SETS)
def test_namespaced_objects_are_in_the_release_namespace(name: str) -> None:
    for obj in rendered(name):
        meta = obj["metadata"]
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, obj["kind"]
        else:
            assert meta["namespace"] == NAMESPACE, obj["kind"]
        assert meta["labels"]["app.kubernetes.io/instance"] == "fieldwarden"


# --- webhook configurations --------------------------------------------------------------


@pytest.mark.parametrize("name", SETS)
def test_webhooks_are_registered_as_the_values_ask(name: str) -> None:
    objects = rendered(name)
    values = merged(name)["admission"]
    expected = {hook for hook, (key, *_) in HOOKS.items() if values[key]["enabled"]}
    assert {hook["name"] for _, hook in webhooks(objects)} == expected
    for kind, hook in webhooks(objects):
        key, hook_kind, path, _ = HOOKS[hook["name"]]
        assert kind == hook_kind
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["sideEffects"] == "None"
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["failurePolicy"] == values[key]["failurePolicy"]
        assert hook["timeoutSeconds"] == values[key]["timeoutSeconds"]
        if kind == "MutatingWebhookConfiguration":
            assert hook["reinvocationPolicy"] == "IfNeeded"
        else:
            assert "reinvocationPolicy" not in hook
        service = one(objects, "Service")
        assert hook["clientConfig"]["service"] == {
            "name": service["metadata"]["name"], "namespace": NAMESPACE, "path": path, "port": 443}
    if not values["readinessGate"]["enabled"] and not values["autoscalerOwnership"]["enabled"]:
        assert of_kind(objects, "MutatingWebhookConfiguration") == []


@pytest.mark.parametrize("name", SETS)
def test_rules_are_exactly_each_policys_resources_and_subresources_only_behind_fw401s_condition(name: str) -> None:
    for _, hook in webhooks(rendered(name)):
        got: list[Rule] = []
        for rule in hook["rules"]:
            assert rule["scope"] == "Namespaced" and rule["apiVersions"] == ["v1"]
            assert len(rule["apiGroups"]) == 1
            for resource in rule["resources"]:
                assert "*" not in resource, resource  # never */scale
                got.append((rule["apiGroups"][0], resource, tuple(rule["operations"])))
        assert sorted(got) == sorted(HOOKS[hook["name"]][3])
        if hook["name"] == "image-only-pod-updates.fieldwarden.io":
            # The exporter's condition (status writes only when they change an exemption; resize and
            # ephemeral containers only when FW401's `subresources` lists them), with this configuration.
            options = {"FW401": {"subresources": [], **merged(name)["config"].get("rules", {}).get("FW401", {})}}
            label = merged(name)["admission"]["optOutLabel"]
            expected = judged_request(literal(options["FW401"]["subresources"]), literal(label))
            assert hook["matchConditions"] == [expected]
        else:
            assert all("/" not in resource for _, resource, _ in got) and "matchConditions" not in hook


def test_a_config_protecting_another_opt_out_label_than_the_selectors_is_refused() -> None:
    other = {"config": {"rules": {"pod-update-not-image-only": {"opt-out-label": {"key": "a", "value": "b"}}}}}
    with pytest.raises(Exception, match="opt-out-label must be admission.optOutLabel"):
        render(other)
    same = {"config": {"rules": {"FW401": {"opt-out-label": {"key": "fieldwarden.io/admission", "value": "disabled"}}}}}
    render(same)


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("namespace", [NAMESPACE, "platform-admission"])
def test_the_release_namespace_and_kube_system_are_always_excluded(name: str, namespace: str) -> None:
    objects = rendered(name) if namespace == NAMESPACE else render(VALUE_SETS[name], namespace=namespace)
    admission = merged(name)["admission"]
    opt_out = {"key": admission["optOutLabel"]["key"], "operator": "NotIn", "values": [admission["optOutLabel"]["value"]]}
    for _, hook in webhooks(objects):
        expressions = hook["namespaceSelector"]["matchExpressions"]
        by_name = [e for e in expressions if e["key"] == "kubernetes.io/metadata.name"]
        assert len(by_name) == 1 and by_name[0]["operator"] == "NotIn"
        assert set(by_name[0]["values"]) == {namespace, "kube-system", *admission["excludedNamespaces"]}
        assert len(by_name[0]["values"]) == len(set(by_name[0]["values"]))
        assert opt_out in expressions
        for extra in admission["namespaceSelectorExpressions"]:
            assert extra in expressions
        assert "matchLabels" not in hook["namespaceSelector"]
        assert hook["objectSelector"] == {"matchExpressions": [opt_out]}


# --- RBAC --------------------------------------------------------------------------------


Grant = tuple[str, str, str, tuple[str, ...]]  # (API group, resource, verb, resource names)


def _grants(role: Obj) -> set[Grant]:
    return {(group, resource, verb, tuple(rule.get("resourceNames", ())))
            for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


@pytest.mark.parametrize("name", SETS)
def test_rbac_grants_exactly_what_the_processes_call(name: str) -> None:
    objects = rendered(name)
    values = merged(name)
    gate = values["admission"]["readinessGate"]["enabled"]
    roles = {(r["kind"], r["metadata"]["name"]): _grants(r) for r in of_kind(objects, "ClusterRole") + of_kind(objects, "Role")}
    expected: dict[tuple[str, str], set[Grant]] = {
        ("ClusterRole", "fieldwarden-webhook"): {
            ("autoscaling", "horizontalpodautoscalers", "list", ()), ("autoscaling", "horizontalpodautoscalers", "watch", ()),
            ("autoscaling.k8s.io", "verticalpodautoscalers", "list", ()),
            ("autoscaling.k8s.io", "verticalpodautoscalers", "watch", ()),
            ("apiextensions.k8s.io", "customresourcedefinitions", "list", ("verticalpodautoscalers.autoscaling.k8s.io",)),
            ("apiextensions.k8s.io", "customresourcedefinitions", "watch", ("verticalpodautoscalers.autoscaling.k8s.io",))},
    }
    if gate:
        lease = ("fieldwarden-controller",)
        expected[("ClusterRole", "fieldwarden-controller")] = {
            ("", "pods", "list", ()), ("", "pods", "watch", ()), ("", "pods/status", "patch", ())}
        expected[("Role", "fieldwarden-controller")] = {
            ("coordination.k8s.io", "leases", "create", ()), ("coordination.k8s.io", "leases", "get", lease),
            ("coordination.k8s.io", "leases", "update", lease)}
    unbound = set()
    if gate and values["setImageRole"]["create"]:  # for the people who run `fieldwarden set-image`
        unbound.add(("ClusterRole", "fieldwarden-set-image"))
        expected[("ClusterRole", "fieldwarden-set-image")] = {
            ("", "pods", "get", ()), ("", "pods", "list", ()), ("", "pods", "watch", ()), ("", "pods", "patch", ()),
            ("", "pods/status", "patch", ())}
    assert roles == expected
    # Each role is bound to its own component's service account, and to nothing else.
    service_accounts = {sa["metadata"]["name"] for sa in of_kind(objects, "ServiceAccount")}
    for binding in of_kind(objects, "ClusterRoleBinding") + of_kind(objects, "RoleBinding"):
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in expected and ref["apiGroup"] == "rbac.authorization.k8s.io"
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": ref["name"], "namespace": NAMESPACE}]
        assert ref["name"] in service_accounts
    bound = {(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in of_kind(objects, "ClusterRoleBinding") +
             of_kind(objects, "RoleBinding")}
    assert len(of_kind(objects, "ClusterRoleBinding") + of_kind(objects, "RoleBinding")) == len(expected) - len(unbound)
    assert bound == set(expected) - unbound  # the set-image role is granted by whoever installs, per namespace
    # The Lease the controller is given is the one it is allowed to renew.
    if gate:
        args = deployments(objects)["controller"]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert f"--lease-name={lease[0]}" in args and f"--lease-namespace={NAMESPACE}" in args


# --- pods --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SETS)
def test_every_pod_runs_restricted(name: str) -> None:
    for spec in pod_specs(rendered(name)):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
        assert all("hostPath" not in volume for volume in spec["volumes"])
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["privileged"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}
            assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
            assert container["resources"]["limits"]["memory"]
            # A read-only root: /tmp is an emptyDir (gunicorn's worker heartbeat files live there).
            tmp = next(m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
            assert "emptyDir" in next(v for v in spec["volumes"] if v["name"] == tmp["name"])


@pytest.mark.parametrize("name", SETS)
def test_deployments_are_highly_available(name: str) -> None:
    objects = rendered(name)
    values = merged(name)
    for component, deployment in deployments(objects).items():
        spec = deployment["spec"]
        assert spec["replicas"] == values[component]["replicas"] >= 2
        assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
        selector = spec["selector"]["matchLabels"]
        assert selector["app.kubernetes.io/component"] == component
        template_labels = spec["template"]["metadata"]["labels"]
        assert selector.items() <= template_labels.items()
        spread = spec["template"]["spec"]["topologySpreadConstraints"]
        if values[component]["topologySpreadConstraints"]:
            assert spread == values[component]["topologySpreadConstraints"]
        else:
            assert spread == [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                               "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Honor",
                               "matchLabelKeys": ["pod-template-hash"], "labelSelector": {"matchLabels": selector}}]
        budgets = [p for p in of_kind(objects, "PodDisruptionBudget")
                   if p["spec"]["selector"]["matchLabels"] == selector]
        if values[component]["podDisruptionBudget"]["enabled"]:
            assert len(budgets) == 1
            assert budgets[0]["spec"]["maxUnavailable"] == values[component]["podDisruptionBudget"]["maxUnavailable"]
            assert budgets[0]["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        else:
            assert budgets == []
    # The two components' selectors never claim each other's pods.
    selectors = [d["spec"]["selector"]["matchLabels"] for d in of_kind(objects, "Deployment")]
    for i, first in enumerate(selectors):
        for second in selectors[i + 1:]:
            assert any(first.get(k) not in (None, v) for k, v in second.items())


@pytest.mark.parametrize("name", SETS)
def test_the_webhook_liveness_probe_does_not_restart_a_busy_pod(name: str) -> None:
    container = deployments(rendered(name))["webhook"]["spec"]["template"]["spec"]["containers"][0]
    live, ready = container["livenessProbe"], container["readinessProbe"]
    # Restarted only after a whole minute without an answer, each try waiting longer than
    # the readiness probe does: a busy pod leaves the Service first, and is not killed.
    assert live["periodSeconds"] * live["failureThreshold"] >= 60
    assert live["timeoutSeconds"] > ready["timeoutSeconds"]


@pytest.mark.parametrize("name", SETS)
def test_network_policies_fence_the_pods_only_when_asked(name: str) -> None:
    objects = rendered(name)
    values = merged(name)
    policies = {p["metadata"]["name"]: p for p in of_kind(objects, "NetworkPolicy")}
    if not values["networkPolicy"]["enabled"]:
        assert policies == {}
        return
    pods = deployments(objects)
    webhook = policies["fieldwarden-webhook"]["spec"]
    assert webhook["podSelector"] == pods["webhook"]["spec"]["selector"]
    assert webhook["policyTypes"] == ["Ingress"]  # egress stays open: it lists and watches the API server
    (rule,) = webhook["ingress"]
    assert rule["ports"] == [{"port": 8443, "protocol": "TCP"}]
    cidrs = [peer["ipBlock"]["cidr"] for peer in rule["from"] if "ipBlock" in peer]
    assert cidrs == values["networkPolicy"]["apiServerCIDRs"]
    assert [peer for peer in rule["from"] if "ipBlock" not in peer] == values["networkPolicy"]["metricsFrom"]
    if "controller" in pods:
        controller = policies["fieldwarden-controller"]["spec"]
        assert controller["podSelector"] == pods["controller"]["spec"]["selector"]
        (scrape,) = controller["ingress"]
        assert scrape == {"from": values["networkPolicy"]["metricsFrom"], "ports": [{"port": 8080, "protocol": "TCP"}]}


def _parse(module: Any, args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    module.add_arguments(parser)
    return parser.parse_args(args)


@pytest.mark.parametrize("name", SETS)
def test_the_webhook_pod_serves_as_fieldwarden_serve_expects(name: str) -> None:
    objects = rendered(name)
    values = merged(name)
    deployment = deployments(objects)["webhook"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["args"][0] == "serve"
    args = _parse(serve_cli, container["args"][1:])  # the real command line parser accepts them
    assert (args.bind, str(args.cert_dir), str(args.config)) == ("0.0.0.0:8443", "/tls", "/etc/fieldwarden/config.yaml")
    assert (args.workers, args.worker_connections) == (values["webhook"]["workers"], values["webhook"]["workerConnections"])
    assert container["ports"] == [{"name": "https", "containerPort": 8443, "protocol": "TCP"}]
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    # The Service maps 443 to that port, for these pods.
    service = one(objects, "Service")
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    # Out of the endpoints before gunicorn stops accepting; both within the grace period.
    sleep = values["webhook"]["preStopSleepSeconds"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[:2] == ["python3", "-c"] and f"time.sleep({sleep})" in command[2]
    assert spec["terminationGracePeriodSeconds"] >= sleep + 25  # gunicorn_conf.graceful_timeout
    # /tls is the kubernetes.io/tls Secret (certificate and key only: nothing to generate, nothing to write).
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    tls = volumes[mounts["/tls"]["name"]]["secret"]
    cert_manager = values["tls"]["certManager"]["enabled"]
    assert mounts["/tls"]["readOnly"] and tls["secretName"] == f"fieldwarden-webhook-{'cert' if cert_manager else 'tls'}"
    assert tls["items"] == [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]
    assert volumes[mounts["/etc/fieldwarden"]["name"]]["configMap"]["name"] == "fieldwarden-config"
    assert spec["serviceAccountName"] == "fieldwarden-webhook" and spec["automountServiceAccountToken"] is True


@pytest.mark.parametrize("name", SETS)
def test_the_controller_ships_exactly_with_the_readiness_gate(name: str) -> None:
    objects = rendered(name)
    values = merged(name)
    gate = values["admission"]["readinessGate"]["enabled"]
    controller_objects = [o for o in objects if o["metadata"]["name"] == "fieldwarden-controller"]
    if not gate:
        assert controller_objects == []
        assert "readiness-gate.fieldwarden.io" not in {hook["name"] for _, hook in webhooks(objects)}
        return
    assert {o["kind"] for o in controller_objects} >= {"Deployment", "ServiceAccount", "ClusterRole", "Role"}
    deployment = deployments(objects)["controller"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["args"][0] == "controller"
    args = _parse(controller_cli, container["args"][1:])
    assert args.lease_namespace == NAMESPACE and args.lease_name == "fieldwarden-controller"
    assert str(args.config) == "/etc/fieldwarden/config.yaml" and args.bind == "0.0.0.0:8080"
    assert args.retry_period < args.renew_deadline < args.lease_duration
    assert spec["terminationGracePeriodSeconds"] > args.renew_deadline  # SIGTERM releases the Lease
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "http"}
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    volumes = {v["name"]: v for v in spec["volumes"]}
    config_mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/fieldwarden")
    assert volumes[config_mount["name"]]["configMap"]["name"] == "fieldwarden-config"  # the webhook's file
    assert spec["serviceAccountName"] == "fieldwarden-controller"
    # Both pods roll when the configuration changes.
    webhook_pod = deployments(objects)["webhook"]["spec"]["template"]["metadata"]["annotations"]
    assert deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"] == webhook_pod["checksum/config"]


@pytest.mark.parametrize("name", SETS)
def test_the_configmap_is_the_values_config_and_loads(name: str, tmp_path: Path) -> None:
    objects = rendered(name)
    config = one(objects, "ConfigMap", "fieldwarden-config")["data"]["config.yaml"]
    expected = copy.deepcopy(merged(name)["config"])  # FW401 protects the opt-out label the selectors honour
    expected.setdefault("rules", {}).setdefault("FW401", {})["opt-out-label"] = merged(name)["admission"]["optOutLabel"]
    assert yaml.safe_load(config) == expected
    path = tmp_path / "config.yaml"
    path.write_text(config, encoding="utf-8")
    settings = load_settings(path)  # what `serve` and `controller` do at startup: parse, validate
    condition, selector = gate_settings(settings)
    if name == "tuned":
        assert (condition, selector) == ("example.com/Drained", "example.com/gated=yes")


def test_the_image_follows_the_values() -> None:
    images = {c["image"] for spec in pod_specs(rendered("defaults")) for c in spec["containers"]}
    assert images == {"ghcr.io/fieldwarden/fieldwarden:0.1.0"}
    images = {c["image"] for spec in pod_specs(rendered("tuned")) for c in spec["containers"]}
    assert images == {"ghcr.io/fieldwarden/fieldwarden@sha256:" + "ab" * 32}


# --- values ------------------------------------------------------------------------------


def test_values_schema_embeds_the_policy_configuration_schema() -> None:
    embedded = dict(values_schema()["properties"]["config"])
    assert embedded.pop("$id", None), "the embedded schema needs an $id so that its #/$defs references resolve"
    assert embedded == json.loads(Path(SCHEMA_FILE).read_text(encoding="utf-8")), (
        "helm/fieldwarden/values.schema.json is behind policies/config.schema.json: "
        "run `python3 helm/sync_config_schema.py`")


@pytest.mark.parametrize("values, where", [
    ({"config": {"rules": {"FW999": {}}}}, "/config/rules"),
    ({"config": {"rules": {"FW401": {"enforcement": "block"}}}}, "/config/rules/FW401/enforcement"),
    ({"config": {"fail-on": "sometimes"}}, "/config/fail-on"),
    ({"config": {"webhook": {"max-request-bytes": 10}}}, "/config/webhook/max-request-bytes"),
    ({"admission": {"imageOnlyPodUpdates": {"failurePolicy": "Retry"}}}, "/admission/imageOnlyPodUpdates/failurePolicy"),
    ({"admission": {"excludedNamespaces": ["Not A Namespace"]}}, "/admission/excludedNamespaces/0"),
    ({"controller": {"replicas": 0}}, "/controller/replicas"),
    ({"webhook": {"replica": 3}}, "/webhook"),
    ({"tls": {"certManager": {"enabled": True, "issuerRef": {"kind": "Issuer"}}}}, "/tls/certManager/issuerRef"),
])
def test_helm_refuses_bad_values_naming_the_key(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError) as error:
        render(values)
    assert f"at '{where}'" in str(error.value)


def test_default_values_and_every_value_set_pass_the_schema() -> None:
    for values in VALUE_SETS.values():
        chart().validate_schema(chart().merge_values(values))


@pytest.mark.parametrize("values, message", [
    ({"tls": {"selfSigned": {"certValidityDays": 30, "renewBeforeDays": 30}}}, "renewBeforeDays must be less"),
    ({"controller": {"renewDeadline": 20}}, "retryPeriod < renewDeadline < leaseDuration"),
    ({"networkPolicy": {"enabled": True}}, "networkPolicy.apiServerCIDRs must name"),
])
def test_inconsistent_values_stop_the_render(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=re.escape(message)):
        render(values)


def test_notes_say_what_runs_and_warn_about_the_readiness_gate() -> None:
    text = notes(None)
    assert "fieldwarden-controller, 2 replicas" in text and "stays NotReady" in text
    assert "WARNING" not in text
    assert "WARNING: a webhook has failurePolicy Fail" in notes(FAIL_CLOSED)
    off = notes(VALUE_SETS["no-readiness-gate"])
    assert "FW402 readiness gate on new pods       OFF" in off and "READINESS GATES" not in off
    assert "namespaces fieldwarden, kube-system, monitoring, argocd" in notes(VALUE_SETS["excluded-namespaces"])
    assert "--clusterrole=fieldwarden-set-image" in text
    assert "set-image" not in notes(VALUE_SETS["no-set-image-role"]) and "set-image" not in off


# --- the image ---------------------------------------------------------------------------


def test_dockerfile_builds_a_slim_non_root_image_running_fieldwarden() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    logical = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    instructions = [(line.split(None, 1) + [""])[:2] for line in logical.splitlines() if line.strip()]
    froms = [rest for word, rest in instructions if word == "FROM"]
    assert froms and all(re.match(r"python:3\.\d+-slim", f) for f in froms)
    assert re.search(r"pip install [^\n]*'?\.\[webhook\]'?", text)
    users = [rest.strip() for word, rest in instructions if word == "USER"]
    assert users and re.fullmatch(r"\d+(:\d+)?", users[-1]) and int(users[-1].split(":")[0]) != 0
    # The chart runs as that user: the image and the pod agree.
    for spec in pod_specs(rendered("defaults")):
        assert spec["securityContext"]["runAsUser"] == int(users[-1].split(":")[0])
    entrypoint = [rest for word, rest in instructions if word == "ENTRYPOINT"]
    assert entrypoint and json.loads(entrypoint[-1]) == ["fieldwarden"]  # exec form: no shell

