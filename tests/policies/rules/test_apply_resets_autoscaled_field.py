"""FW505 apply-resets-autoscaled-field: replicas under an HPA, resources under a VPA; dry run or predicted."""

from __future__ import annotations

import copy
import json

from fieldwarden.policies.live import CLIENT, LAST_APPLIED
from fieldwarden.policies.rules import apply_resets_autoscaled_field as rule
from tests.policies.rules.live_samples import apply_entry, case, deployment, live

HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}
VPA = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": "web-vpa"},
       "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "resourcePolicy": {"containerPolicies": [{"containerName": "*", "controlledValues": "RequestsOnly"}]}}}
SCALER = apply_entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, "Update", "scale")


def test_the_dry_run_storing_another_replica_count_under_an_hpa_is_reported() -> None:
    manifest = deployment()
    stored = live(manifest, [SCALER], replicas=4)
    after = copy.deepcopy(stored)
    after["spec"]["replicas"] = 1
    found = list(rule.check(case(manifest, stored, result=after, hpas=(HPA,)), {}))
    assert [v.path for v in found] == [("spec",)]  # the manifest has no replicas: its parent
    assert found[0].message == ("spec.replicas: HorizontalPodAutoscaler web scales this Deployment (live 4); the apply "
                                "would store 1")
    assert not list(rule.check(case(manifest, stored, result=stored, hpas=(HPA,)), {}))
    assert not list(rule.check(case(manifest, stored, result=after), {}))  # no autoscaler: a plain change


def test_client_side_dropping_replicas_from_the_last_applied_configuration_is_predicted_as_1() -> None:
    manifest = deployment()
    stored = live(manifest, [SCALER], replicas=4)
    stored["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(deployment(replicas=3))}
    found = list(rule.check(case(manifest, stored, read_only=True, mode=CLIENT, hpas=(HPA,)), {}))
    assert [v.message for v in found] == ["spec.replicas: HorizontalPodAutoscaler web scales this Deployment (live 4); "
                                          "the apply would store 1 (predicted from the live object: --read-only)"]
    stored["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(deployment())}  # it never had replicas
    assert not list(rule.check(case(manifest, stored, read_only=True, mode=CLIENT, hpas=(HPA,)), {}))


def test_server_side_leaves_replicas_the_hpa_owns_and_removes_those_it_owns_alone() -> None:
    manifest = deployment()
    co_owned = live(manifest, [SCALER], replicas=4)
    assert not list(rule.check(case(manifest, co_owned, read_only=True, hpas=(HPA,)), {}))
    ours = live(manifest, [apply_entry("kubectl", {"f:spec": {"f:replicas": {}}})], replicas=4)
    found = list(rule.check(case(manifest, ours, read_only=True, hpas=(HPA,)), {}))
    assert [v.message.split("; ")[1] for v in found] == ["the apply would store 1 (predicted from the live object: --read-only)"]


def test_resources_a_vpa_controls_are_compared_and_limits_left_to_requests_only() -> None:
    manifest = deployment()
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"},
                                                                          "limits": {"cpu": "1"}}
    stored = live(copy.deepcopy(manifest))
    stored["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "350m", "memory": "1Gi"},
                                                                        "limits": {"cpu": "2"}}
    found = list(rule.check(case(manifest, stored, read_only=True, vpas=(VPA,)), {}))
    assert [v.path for v in found] == [("spec", "template", "spec", "containers", 0, "resources", "requests", "cpu")]
    assert found[0].message.startswith("spec.template.spec.containers[name=web].resources.requests.cpu: "
                                       'VerticalPodAutoscaler web-vpa controls it (live "350m"); the apply would store "100m"')
    off = copy.deepcopy(VPA)
    off["spec"]["updatePolicy"] = {"updateMode": "Off"}
    assert not list(rule.check(case(manifest, stored, read_only=True, vpas=(off,)), {}))
