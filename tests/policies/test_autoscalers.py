"""Tests for fieldwarden.policies.autoscalers: scale targets, VPA targets, modes and control."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fieldwarden.policies.autoscalers import (
    NOTHING,
    ControlledResources,
    container_policy,
    is_horizontal_autoscaler,
    is_vpa,
    scale_target,
    vpa_controlled,
    vpa_target,
    vpa_update_mode,
)
from fieldwarden.policies.model import ObjectKey

CPU_MEMORY = frozenset({"cpu", "memory"})
WEB = ObjectKey("apps", "Deployment", "default", "web")


def hpa(ref: Any, api_version: str = "autoscaling/v2", namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web"}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": "HorizontalPodAutoscaler", "metadata": meta, "spec": {"scaleTargetRef": ref}}


def scaled_object(ref: Any, namespace: str | None = None) -> dict[str, Any]:
    obj = hpa(ref, "keda.sh/v1alpha1", namespace)
    obj["kind"] = "ScaledObject"
    return obj


def vpa(spec: Any, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web"}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": meta, "spec": spec}


def policies(*entries: dict[str, Any], mode: str | None = None) -> dict[str, Any]:
    obj = vpa({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
               "resourcePolicy": {"containerPolicies": list(entries)}})
    if mode is not None:
        obj["spec"]["updatePolicy"] = {"updateMode": mode}
    return obj


APPS_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


# --- scale_target -----------------------------------------------------------------


@pytest.mark.parametrize("version", ["autoscaling/v1", "autoscaling/v2", "autoscaling/v2beta1", "autoscaling/v2beta2"])
def test_every_hpa_version_has_the_same_target(version: str) -> None:
    assert is_horizontal_autoscaler(hpa(APPS_REF, version))
    assert scale_target(hpa(APPS_REF, version)) == WEB


def test_legacy_extensions_reference_means_apps() -> None:
    ref = {"apiVersion": "extensions/v1beta1", "kind": "Deployment", "name": "web"}
    assert scale_target(hpa(ref)) == WEB


def test_namespace_is_the_autoscalers_own() -> None:
    assert scale_target(hpa(APPS_REF, namespace="prod")) == WEB._replace(namespace="prod")
    assert scale_target(hpa(APPS_REF), "team") == WEB._replace(namespace="team")
    assert scale_target(hpa(APPS_REF, namespace="prod"), "team") == WEB._replace(namespace="prod")


def test_hpa_without_api_version_means_the_core_group() -> None:
    # The HPA controller parses the group from apiVersion: absent = core, no Deployment there.
    assert scale_target(hpa({"kind": "Deployment", "name": "web"})) == WEB._replace(group="")


def test_custom_resource_target_keeps_its_group() -> None:
    ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"}
    assert scale_target(hpa(ref)) == ObjectKey("argoproj.io", "Rollout", "default", "web")


def test_scaled_object_defaults_to_apps_v1_deployment() -> None:
    assert is_horizontal_autoscaler(scaled_object({"name": "web"}))
    assert scale_target(scaled_object({"name": "web"})) == WEB
    assert scale_target(scaled_object({"name": "web", "kind": "StatefulSet"})) == WEB._replace(kind="StatefulSet")
    assert scale_target(scaled_object({"name": "web", "apiVersion": "", "kind": ""})) == WEB
    ref = {"name": "web", "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout"}
    assert scale_target(scaled_object(ref, "prod")) == ObjectKey("argoproj.io", "Rollout", "prod", "web")


@pytest.mark.parametrize(
    "ref",
    [None, "web", [], {}, {"kind": "Deployment"}, {"name": ""}, {"name": 7, "kind": "Deployment"},
     {"name": "web", "kind": 3, "apiVersion": "apps/v1"}, {"name": "web", "apiVersion": ["apps/v1"], "kind": "Deployment"}],
)
def test_unusable_references_have_no_target(ref: Any) -> None:
    assert scale_target(hpa(ref)) is None
    if not (isinstance(ref, dict) and isinstance(ref.get("name"), str) and ref.get("name") and "kind" not in ref):
        assert scale_target(scaled_object(ref)) is None


def test_other_objects_have_no_scale_target() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"scaleTargetRef": APPS_REF}}
    assert scale_target(deployment) is None
    assert not is_horizontal_autoscaler(deployment)
    assert scale_target({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "spec": None}) is None
    assert scale_target(vpa({"targetRef": APPS_REF})) is None


# --- vpa_target ---------------------------------------------------------------------


def test_vpa_target() -> None:
    assert is_vpa(vpa({}))
    assert vpa_target(vpa({"targetRef": APPS_REF})) == WEB
    assert vpa_target(vpa({"targetRef": APPS_REF}, "prod")) == WEB._replace(namespace="prod")
    assert vpa_target(vpa({"targetRef": APPS_REF}), "team") == WEB._replace(namespace="team")


@pytest.mark.parametrize("api_version", [None, "extensions/v1beta1", "apps/v1beta2", "v1"])
def test_vpa_finds_well_known_controllers_by_kind(api_version: str | None) -> None:
    ref: dict[str, Any] = {"kind": "Deployment", "name": "web"}
    if api_version is not None:
        ref["apiVersion"] = api_version
    assert vpa_target(vpa({"targetRef": ref})) == WEB
    cron = dict(ref, kind="CronJob")
    assert vpa_target(vpa({"targetRef": cron})) == ObjectKey("batch", "CronJob", "default", "web")


def test_vpa_other_kinds_resolve_by_group() -> None:
    ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"}
    assert vpa_target(vpa({"targetRef": ref})) == ObjectKey("argoproj.io", "Rollout", "default", "web")
    assert vpa_target(vpa({"targetRef": {"kind": "Rollout", "name": "web"}})) == ObjectKey("", "Rollout", "default", "web")


@pytest.mark.parametrize("spec", [None, "x", {}, {"targetRef": None}, {"targetRef": {"kind": "Deployment"}},
                                  {"targetRef": {"name": "web"}}, {"targetRef": {"name": "web", "kind": 1}}])
def test_vpa_without_usable_target(spec: Any) -> None:
    assert vpa_target(vpa(spec)) is None


def test_vpa_target_of_non_vpa() -> None:
    assert vpa_target(hpa(APPS_REF)) is None


# --- vpa_update_mode ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({}, "Recreate"),
        (None, "Recreate"),
        ({"updatePolicy": None}, "Recreate"),
        ({"updatePolicy": {"updateMode": None}}, "Recreate"),
        ({"updatePolicy": {"updateMode": ""}}, "Recreate"),
        ({"updatePolicy": {"updateMode": "Auto"}}, "Recreate"),
        ({"updatePolicy": {"updateMode": "Recreate"}}, "Recreate"),
        ({"updatePolicy": {"updateMode": "InPlaceOrRecreate"}}, "InPlaceOrRecreate"),
        ({"updatePolicy": {"updateMode": "Initial"}}, "Initial"),
        ({"updatePolicy": {"updateMode": "Off"}}, "Off"),
    ],
)
def test_update_mode(spec: Any, expected: str) -> None:
    assert vpa_update_mode(vpa(spec)) == expected


# --- vpa_controlled -----------------------------------------------------------------------


def test_default_controls_cpu_and_memory_requests_and_limits() -> None:
    assert vpa_controlled(vpa({"targetRef": APPS_REF}), "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)
    assert vpa_controlled(policies(), "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)


@pytest.mark.parametrize("mode", ["Off"])
def test_update_mode_off_controls_nothing(mode: str) -> None:
    assert vpa_controlled(policies(mode=mode), "web") == NOTHING
    assert not vpa_controlled(policies(mode=mode), "web")


@pytest.mark.parametrize("mode", ["Auto", "Recreate", "InPlaceOrRecreate", "Initial"])
def test_other_update_modes_control(mode: str) -> None:
    assert vpa_controlled(policies(mode=mode), "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)


def test_container_mode_off_controls_nothing() -> None:
    obj = policies({"containerName": "*", "mode": "Off"})
    assert vpa_controlled(obj, "web") == NOTHING
    obj = policies({"containerName": "web", "mode": "Off"})
    assert vpa_controlled(obj, "web") == NOTHING
    assert vpa_controlled(obj, "sidecar") == ControlledResources(CPU_MEMORY, CPU_MEMORY)


def test_exact_container_policy_wins_over_star_in_either_order() -> None:
    star_off = {"containerName": "*", "mode": "Off"}
    web_auto = {"containerName": "web", "mode": "Auto", "controlledResources": ["cpu"]}
    for obj in (policies(star_off, web_auto), policies(web_auto, star_off)):
        assert vpa_controlled(obj, "web") == ControlledResources(frozenset({"cpu"}), frozenset({"cpu"}))
        assert vpa_controlled(obj, "sidecar") == NOTHING


def test_first_exact_entry_and_last_star_entry_win() -> None:
    obj = policies(
        {"containerName": "*", "mode": "Off"},
        {"containerName": "web", "controlledResources": ["cpu"]},
        {"containerName": "web", "controlledResources": ["memory"]},
        {"containerName": "*", "controlledValues": "RequestsOnly"},
    )
    assert container_policy(obj, "web") == {"containerName": "web", "controlledResources": ["cpu"]}
    assert vpa_controlled(obj, "other") == ControlledResources(CPU_MEMORY, frozenset())


def test_controlled_resources_as_written() -> None:
    cpu = frozenset({"cpu"})
    assert vpa_controlled(policies({"containerName": "*", "controlledResources": ["cpu"]}), "web") == ControlledResources(cpu, cpu)
    assert vpa_controlled(policies({"containerName": "web", "controlledResources": []}), "web") == NOTHING
    # null or a wrong type is treated as unset: the default
    assert vpa_controlled(policies({"containerName": "web", "controlledResources": None}), "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)
    assert vpa_controlled(policies({"containerName": "web", "controlledResources": "cpu"}), "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)


def test_requests_only_leaves_limits_alone() -> None:
    obj = policies({"containerName": "*", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]})
    assert vpa_controlled(obj, "web") == ControlledResources(frozenset({"memory"}), frozenset())
    obj = policies({"containerName": "*", "controlledValues": "RequestsAndLimits"})
    assert vpa_controlled(obj, "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)


@pytest.mark.parametrize("container_policies", [None, "x", {}, [None, "x", 3], [{"containerName": None}]])
def test_malformed_policies_fall_back_to_the_default(container_policies: Any) -> None:
    obj = vpa({"resourcePolicy": {"containerPolicies": container_policies}})
    assert vpa_controlled(obj, "web") == ControlledResources(CPU_MEMORY, CPU_MEMORY)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.sampled_from(["*", "Off", "web", "cpu", "apps/v1", "Deployment"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "kind", "apiVersion", "containerName", "mode", "controlledResources",
                         "controlledValues", "updateMode", "containerPolicies", "namespace"]),
        children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(spec=JSON, meta=JSON, container=st.text(max_size=3))
def test_never_raises_on_junk(spec: Any, meta: Any, container: str) -> None:
    for api_version, kind in (("autoscaling/v2", "HorizontalPodAutoscaler"), ("keda.sh/v1alpha1", "ScaledObject"),
                              ("autoscaling.k8s.io/v1", "VerticalPodAutoscaler")):
        obj = {"apiVersion": api_version, "kind": kind, "metadata": meta,
               "spec": {"scaleTargetRef": spec, "targetRef": spec, "updatePolicy": spec, "resourcePolicy": spec}}
        scale_target(obj)
        vpa_target(obj)
        vpa_update_mode(obj)
        result = vpa_controlled(obj, container)
        assert result.requests >= result.limits
