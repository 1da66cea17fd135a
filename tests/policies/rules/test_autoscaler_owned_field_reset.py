"""FW403 autoscaler-owned-field-reset, on real AdmissionReviews and variants derived from them."""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Sequence

import jsonpatch
import pytest

from fieldwarden.policies import config
from fieldwarden.policies.admission import AutoscalerIndex
from fieldwarden.policies.draft import Draft
from fieldwarden.policies.rules import autoscaler_owned_field_reset as rule
from tests.policies.rules.admission_samples import request as to_request
from tests.policies.rules.admission_samples import review as load_review

TEMPLATE = ("spec", "template")
CRON_TEMPLATE = ("spec", "jobTemplate", "spec", "template")


def sample(name: str) -> dict[str, Any]:
    return load_review(f"{name}.json")


def run(
    body: dict[str, Any], scalers: Sequence[dict[str, Any]] = (), options: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Mutate as the webhook does, diff into a JSON patch, apply it to the request object."""
    request = to_request(body)
    before = copy.deepcopy(request.object)
    draft = Draft(request.object)
    conf = {**rule.DEFAULTS, "default-namespace": "default", **(options or {})}
    warnings = rule.mutate(request, draft, conf, AutoscalerIndex(scalers))
    assert request.object == before  # the rule changed its draft only
    patched = jsonpatch.make_patch(request.object, draft.object).apply(request.object)
    assert patched == draft.object
    assert len(warnings) <= 5 and all(len(w) <= 120 for w in warnings)
    return patched, warnings


def edit(body: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """A copy of the review body with `change` applied to its request."""
    body = copy.deepcopy(body)
    change(body["request"])
    return body


def replicas(body: dict[str, Any], new: Any = ..., old: Any = ...) -> dict[str, Any]:
    def change(req: dict[str, Any]) -> None:
        for key, value in (("object", new), ("oldObject", old)):
            if value is None:
                req[key]["spec"].pop("replicas", None)
            elif value is not ...:
                req[key]["spec"]["replicas"] = value

    return edit(body, change)


def container(obj: dict[str, Any], name: str = "web", template: tuple[str, ...] = TEMPLATE) -> dict[str, Any]:
    node: Any = obj
    for key in template:
        node = node[key]
    return next(c for c in node["spec"]["containers"] if c["name"] == name)


def resources(body: dict[str, Any], new: dict[str, Any], old: dict[str, Any], name: str = "web") -> dict[str, Any]:
    def change(req: dict[str, Any]) -> None:
        container(req["object"], name)["resources"] = copy.deepcopy(new)
        container(req["oldObject"], name)["resources"] = copy.deepcopy(old)

    return edit(body, change)


def hpa(name: str = "web", target: str = "web", kind: str = "Deployment", api_version: str | None = "apps/v1",
        namespace: str = "default", version: str = "autoscaling/v2", **spec: Any) -> dict[str, Any]:
    ref: dict[str, Any] = {"kind": kind, "name": target}
    if api_version is not None:
        ref["apiVersion"] = api_version
    return {
        "apiVersion": version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"scaleTargetRef": ref, "maxReplicas": 10, **spec},
    }


def scaled_object(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"scaleTargetRef": {"name": "web"}, **spec},
    }


def vpa(mode: str | None = None, policies: list[dict[str, Any]] | None = None, kind: str = "Deployment",
        name: str = "web", namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": "web"}}
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    if policies is not None:
        spec["resourcePolicy"] = {"containerPolicies": policies}
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


UPDATE = sample("deployment-update-apply")  # replicas 3 live, the apply sends 1 and a new image
SSA = sample("deployment-update-server-side-apply")  # live 1, the apply sends 2
DRYRUN = sample("deployment-update-dryrun")  # live 2, the apply sends 1; dryRun: true
CREATE = sample("deployment-create-apply")  # replicas 1
SCALE = sample("deployment-scale-subresource")  # kubectl scale: Scale 1 -> 3

LIVE = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
ASKED = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}


# --- replicas under an HPA ----------------------------------------------------------------


def test_the_samples_are_what_the_tests_assume() -> None:
    assert UPDATE["request"]["object"]["spec"]["replicas"] == 1
    assert UPDATE["request"]["oldObject"]["spec"]["replicas"] == 3
    assert DRYRUN["request"]["dryRun"] is True
    assert SCALE["request"]["subResource"] == "scale"


@pytest.mark.parametrize(
    "scaler",
    [
        hpa(),
        hpa(version="autoscaling/v1"),
        hpa(version="autoscaling/v2beta2"),
        hpa(api_version="extensions/v1beta1"),
        scaled_object(),
    ],
    ids=["v2", "v1", "v2beta2", "extensions-ref", "keda"],
)
def test_an_apply_under_an_hpa_keeps_the_live_replicas(scaler: dict[str, Any]) -> None:
    patched, warnings = run(UPDATE, [scaler])
    assert patched["spec"]["replicas"] == 3
    assert container(patched)["image"] == "nginx:1.26"  # the rest of the update goes through
    expected = copy.deepcopy(UPDATE["request"]["object"])
    expected["spec"]["replicas"] = 3
    assert patched == expected
    assert len(warnings) == 1 and "spec.replicas=3" in warnings[0] and " web " in warnings[0]


def test_server_side_apply_sample_keeps_the_live_replicas() -> None:
    patched, warnings = run(SSA, [hpa()])
    assert patched["spec"]["replicas"] == 1
    assert len(warnings) == 1


def test_dry_run_is_answered_exactly_like_the_real_request() -> None:
    real = edit(DRYRUN, lambda req: (req.update(dryRun=False), req["options"].pop("dryRun")))
    dry_patched, dry_warnings = run(DRYRUN, [hpa()])
    real_patched, real_warnings = run(real, [hpa()])
    assert dry_patched["spec"]["replicas"] == 2
    assert (dry_patched, dry_warnings) == (real_patched, real_warnings)


def test_a_manifest_without_replicas_arrives_defaulted_to_1_and_is_restored() -> None:
    def omit_replicas(req: dict[str, Any]) -> None:
        annotations = req["object"]["metadata"]["annotations"]
        key = "kubectl.kubernetes.io/last-applied-configuration"
        applied = json.loads(annotations[key])
        del applied["spec"]["replicas"]
        annotations[key] = json.dumps(applied)
        req["object"]["spec"]["replicas"] = 1  # what the API server's defaulting made of it

    patched, warnings = run(edit(UPDATE, omit_replicas), [hpa()])
    assert patched["spec"]["replicas"] == 3
    assert "request had 1" in warnings[0]


def test_live_zero_is_kept() -> None:
    patched, warnings = run(replicas(UPDATE, new=3, old=0), [scaled_object()])
    assert patched["spec"]["replicas"] == 0
    assert "spec.replicas=0" in warnings[0]


def test_status_replicas_are_never_used() -> None:
    review = replicas(UPDATE, new=1, old=4)
    review["request"]["oldObject"]["status"] = {"replicas": 5, "readyReplicas": 4}
    patched, _ = run(review, [hpa()])
    assert patched["spec"]["replicas"] == 4


def test_unchanged_replicas_need_no_patch_nor_warning() -> None:
    review = replicas(UPDATE, new=3, old=3)
    patched, warnings = run(review, [hpa()])
    assert patched == review["request"]["object"] and warnings == []


@pytest.mark.parametrize(
    "scaler",
    [
        hpa(namespace="other"),
        hpa(target="api"),
        hpa(kind="StatefulSet"),
        hpa(api_version=None),  # no apiVersion: the core group, where no Deployment lives
        hpa(api_version="argoproj.io/v1alpha1", kind="Rollout"),
    ],
    ids=["other-namespace", "other-name", "other-kind", "core-group", "other-group"],
)
def test_an_hpa_on_something_else_changes_nothing(scaler: dict[str, Any]) -> None:
    patched, warnings = run(UPDATE, [scaler])
    assert patched == UPDATE["request"]["object"] and warnings == []


def test_no_autoscaler_no_change() -> None:
    patched, warnings = run(UPDATE, [])
    assert patched["spec"]["replicas"] == 1 and warnings == []


def test_a_live_object_without_replicas_keeps_nothing() -> None:
    # only possible for custom resources; the rule must not invent a value
    patched, warnings = run(replicas(UPDATE, new=1, old=None), [hpa()])
    assert patched["spec"]["replicas"] == 1 and warnings == []


def test_replicas_missing_from_the_request_are_put_back_never_removed() -> None:
    patched, warnings = run(replicas(UPDATE, new=None, old=3), [hpa()])
    assert patched["spec"]["replicas"] == 3
    assert "request had none" in warnings[0]


def test_the_scale_subresource_is_never_touched() -> None:
    patched, warnings = run(SCALE, [hpa()])
    assert patched == SCALE["request"]["object"] and warnings == []
    # not even when the request names the Deployment: the subresource alone decides
    as_deployment = edit(SCALE, lambda req: req.update(kind={"group": "apps", "version": "v1", "kind": "Deployment"}))
    patched, warnings = run(as_deployment, [hpa()])
    assert patched["spec"]["replicas"] == 3 and warnings == []


@pytest.mark.parametrize("sub_resource", ["status", "resize"])
def test_other_subresources_are_never_touched(sub_resource: str) -> None:
    review = edit(UPDATE, lambda req: req.update(subResource=sub_resource))
    patched, warnings = run(review, [hpa(), vpa()])
    assert patched == review["request"]["object"] and warnings == []


def test_delete_is_ignored() -> None:
    request = to_request(edit(UPDATE, lambda req: req.update(operation="DELETE")))
    draft = Draft(request.old_object)
    assert rule.mutate(request, draft, rule.DEFAULTS, AutoscalerIndex([hpa()])) == []
    assert draft.object == request.old_object


def test_daemonset_has_no_replicas_to_keep() -> None:
    def to_daemonset(req: dict[str, Any]) -> None:
        req["kind"] = {"group": "apps", "version": "v1", "kind": "DaemonSet"}
        for key in ("object", "oldObject"):
            req[key]["kind"] = "DaemonSet"
            del req[key]["spec"]["strategy"]

    review = edit(replicas(UPDATE, new=None, old=None), to_daemonset)
    patched, warnings = run(review, [hpa(kind="DaemonSet")])
    assert "replicas" not in patched["spec"] and warnings == []


def test_replication_controller_in_the_core_group() -> None:
    def to_rc(req: dict[str, Any]) -> None:
        req["kind"] = {"group": "", "version": "v1", "kind": "ReplicationController"}
        for key in ("object", "oldObject"):
            req[key].update(apiVersion="v1", kind="ReplicationController")

    patched, warnings = run(edit(UPDATE, to_rc), [hpa(kind="ReplicationController", api_version="v1")])
    assert patched["spec"]["replicas"] == 3 and len(warnings) == 1


# --- CREATE -------------------------------------------------------------------------------


def test_create_keeps_the_manifest_by_default() -> None:
    patched, warnings = run(CREATE, [hpa(minReplicas=3)])
    assert patched == CREATE["request"]["object"] and warnings == []


@pytest.mark.parametrize(
    ("asked", "mode", "scalers", "expected"),
    [
        (1, "clamp", [hpa(minReplicas=3)], 3),
        (20, "clamp", [hpa(minReplicas=3)], 10),
        (5, "clamp", [hpa(minReplicas=3)], 5),
        (1, "clamp", [hpa()], 1),  # minReplicas defaults to 1
        (5, "drop", [hpa(minReplicas=3)], 3),
        (1, "drop", [hpa(minReplicas=3)], 3),
        (5, "drop", [hpa()], 1),
        (1, "clamp", [hpa(minReplicas=0)], 1),  # scale to zero (HPAScaleToZero): 0 is a valid floor
        (0, "clamp", [hpa(minReplicas=0)], 0),
        (5, "drop", [hpa(minReplicas=0)], 0),
        (5, "drop", [scaled_object()], 0),  # KEDA's minReplicaCount defaults to 0
        (500, "clamp", [scaled_object()], 100),  # and maxReplicaCount to 100
        (1, "clamp", [hpa(minReplicas=2, maxReplicas=8), scaled_object("q", minReplicaCount=4, maxReplicaCount=20)], 4),
        (50, "clamp", [hpa(minReplicas=2, maxReplicas=8), scaled_object("q", minReplicaCount=4, maxReplicaCount=20)], 8),
        (5, "drop", [hpa(minReplicas=2, maxReplicas=8), scaled_object("q", minReplicaCount=4, maxReplicaCount=20)], 4),
    ],
)
def test_create_modes(asked: int, mode: str, scalers: list[dict[str, Any]], expected: int) -> None:
    review = edit(CREATE, lambda req: req["object"]["spec"].update(replicas=asked))
    patched, warnings = run(review, scalers, {"on-create": mode})
    assert patched["spec"]["replicas"] == expected
    assert len(warnings) == (0 if expected == asked else 1)


def test_create_without_an_hpa_or_with_only_a_vpa_is_untouched() -> None:
    for scalers in ([], [vpa()], [hpa(namespace="other", minReplicas=3)]):
        patched, warnings = run(CREATE, scalers, {"on-create": "drop"})
        assert patched == CREATE["request"]["object"] and warnings == []


# --- resources under a VPA ------------------------------------------------------------------


def test_vpa_keeps_live_requests_and_limits() -> None:
    patched, warnings = run(resources(UPDATE, ASKED, LIVE), [vpa()])
    assert container(patched)["resources"] == LIVE
    assert container(patched)["image"] == "nginx:1.26"
    assert patched["spec"]["replicas"] == 1  # no HPA: replicas are the user's
    assert len(warnings) == 1
    assert "container web (requests cpu,memory; limits cpu,memory)" in warnings[0] and "VPA web" in warnings[0]


@pytest.mark.parametrize("mode", ["Auto", "Recreate", "InPlaceOrRecreate", "Initial"])
def test_every_update_mode_but_off_protects(mode: str) -> None:
    patched, _ = run(resources(UPDATE, ASKED, LIVE), [vpa(mode)])
    assert container(patched)["resources"] == LIVE


def test_update_mode_off_protects_nothing() -> None:
    review = resources(UPDATE, ASKED, LIVE)
    patched, warnings = run(review, [vpa("Off")])
    assert patched == review["request"]["object"] and warnings == []


def test_requests_only_leaves_limits_to_the_manifest() -> None:
    policies = [{"containerName": "*", "controlledValues": "RequestsOnly"}]
    patched, warnings = run(resources(UPDATE, ASKED, LIVE), [vpa(policies=policies)])
    assert container(patched)["resources"] == {"requests": LIVE["requests"], "limits": ASKED["limits"]}
    assert "limits" not in warnings[0]


def test_controlled_resources_cpu_only() -> None:
    policies = [{"containerName": "web", "controlledResources": ["cpu"]}]
    patched, _ = run(resources(UPDATE, ASKED, LIVE), [vpa(policies=policies)])
    assert container(patched)["resources"] == {
        "requests": {"cpu": "250m", "memory": "128Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }


def test_container_policy_mode_off_and_name_beats_star() -> None:
    off_for_web = [{"containerName": "*"}, {"containerName": "web", "mode": "Off"}]
    review = resources(UPDATE, ASKED, LIVE)
    patched, warnings = run(review, [vpa(policies=off_for_web)])
    assert patched == review["request"]["object"] and warnings == []
    off_for_all_but_web: list[dict[str, Any]] = [
        {"containerName": "*", "mode": "Off"},
        {"containerName": "web", "controlledResources": ["memory"]},
    ]
    patched, _ = run(review, [vpa(policies=off_for_all_but_web)])
    assert container(patched)["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}


def test_a_value_the_live_template_lacks_is_removed_and_a_dropped_one_restored() -> None:
    live = {"requests": {"cpu": "250m"}}
    asked = {"requests": {"memory": "128Mi"}, "limits": {"cpu": "1"}}
    patched, warnings = run(resources(UPDATE, asked, live), [vpa()])
    assert container(patched)["resources"] == {"requests": {"cpu": "250m"}}
    assert "(requests cpu,memory; limits cpu)" in warnings[0]


REQUESTS_ONLY = [{"containerName": "*", "controlledValues": "RequestsOnly"}]


def test_requests_only_keeps_the_live_limit_too_when_the_new_one_is_below_the_kept_request() -> None:
    # The live request is kept; the manifest's 80m limit would sit below it and the API
    # server would refuse the object naming 100m, a value the user never wrote.
    live = {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}
    asked = {"requests": {"cpu": "50m"}, "limits": {"cpu": "80m"}}
    patched, warnings = run(resources(UPDATE, asked, live), [vpa(policies=REQUESTS_ONLY)])
    assert container(patched)["resources"] == live
    assert "(requests cpu): VPA web controls them" in warnings[0]
    assert warnings[1] == (
        "kept the live limit cpu=200m of container web too: the new limit 80m is below the live request 100m"
    )


def test_requests_only_without_a_live_limit_leaves_the_manifests_pair() -> None:
    # Nothing live to keep the limit at: the manifest's request and limit both stand
    # (its limit is not removed), and the warning says why the request was not kept.
    live = {"requests": {"cpu": "100m", "memory": "1Gi"}}
    asked = {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"cpu": "80m", "memory": "2Gi"}}
    patched, warnings = run(resources(UPDATE, asked, live), [vpa(policies=REQUESTS_ONLY)])
    assert container(patched)["resources"] == {
        "requests": {"cpu": "50m", "memory": "1Gi"},  # memory still fits under 2Gi: kept
        "limits": asked["limits"],
    }
    assert "(requests memory)" in warnings[0]
    assert warnings[1].startswith("left cpu of container web as sent: the new limit 80m is below the live request 100m")
    assert "no live limit to keep" in warnings[1] or warnings[1].endswith("…")


def test_requests_only_compares_quantities_not_strings() -> None:
    live = {"requests": {"cpu": "0.1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "4Gi"}}
    fits = {"requests": {"cpu": "10m", "memory": "1Mi"}, "limits": {"cpu": "100m", "memory": "1073741824"}}
    patched, warnings = run(resources(UPDATE, fits, live), [vpa(policies=REQUESTS_ONLY)])
    assert container(patched)["resources"] == {"requests": live["requests"], "limits": fits["limits"]}
    assert len(warnings) == 1  # 0.1 <= 100m and 1Gi <= 1073741824: equal is fine
    below = {"requests": {"cpu": "10m"}, "limits": {"cpu": "99m"}}
    patched, warnings = run(resources(UPDATE, below, live), [vpa(policies=REQUESTS_ONLY)])
    assert container(patched)["resources"]["limits"] == {"cpu": "1"}


def test_resources_named_on_one_side_only() -> None:
    # cpu: a live request but no live limit, a new limit and no new request;
    # memory: a live limit but no live request, the manifest lowers its request.
    live = {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}
    asked = {"requests": {"memory": "2Gi"}, "limits": {"cpu": "250m"}}
    patched, warnings = run(resources(UPDATE, asked, live), [vpa(policies=REQUESTS_ONLY)])
    # cpu: keeping 500m above the 250m limit is impossible without dropping the limit:
    # the manifest's cpu stands (the API server defaults the request to the limit).
    # memory: the live template sets no request, so the request's is removed; the
    # manifest's limit, absent, bounds nothing.
    assert container(patched)["resources"] == {"requests": {}, "limits": {"cpu": "250m"}}
    assert any(w.startswith("left cpu of container web as sent") for w in warnings)


def test_requests_and_limits_keep_the_live_pair_which_fits() -> None:
    live = {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}
    asked = {"requests": {"cpu": "300m"}, "limits": {"cpu": "400m"}}
    patched, warnings = run(resources(UPDATE, asked, live), [vpa()])
    assert container(patched)["resources"] == live
    assert len(warnings) == 1
    # a live pair that does not fit (the API server never stores one) is not kept
    broken = {"requests": {"cpu": "300m"}, "limits": {"cpu": "200m"}}
    patched, warnings = run(resources(UPDATE, asked, broken), [vpa()])
    assert container(patched)["resources"] == asked
    assert warnings == ["left cpu of container web as sent: its live request 300m is above its live limit 200m"]


def test_values_that_are_not_quantities_are_neither_kept_nor_compared() -> None:
    live = {"requests": {"cpu": {"nested": ["odd"]}, "memory": True}, "limits": {"cpu": "1"}}
    asked = {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "2"}}
    patched, warnings = run(resources(UPDATE, asked, live), [vpa()])
    assert container(patched)["resources"] == asked and warnings == []  # cpu's live pair is odd: left whole
    odd = {"requests": {"cpu": "1x"}, "limits": {"cpu": "m"}}
    patched, _ = run(resources(UPDATE, odd, live), [vpa(policies=REQUESTS_ONLY)])
    assert container(patched)["resources"] == odd  # cpu: the live request is not a quantity


def test_many_adjusted_pairs_keep_the_warnings_few() -> None:
    live = {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}
    asked = {"requests": {"cpu": "10m", "memory": "1Mi"}, "limits": {"cpu": "20m", "memory": "2Mi"}}

    def many_containers(req: dict[str, Any]) -> None:
        for key, res in (("object", asked), ("oldObject", live)):
            containers = req[key]["spec"]["template"]["spec"]["containers"]
            containers.append({"name": "side", "image": "busybox", "resources": copy.deepcopy(res)})

    review = edit(resources(UPDATE, asked, live), many_containers)
    patched, warnings = run(review, [vpa(policies=REQUESTS_ONLY)])  # run() checks count and length
    assert all(c["resources"] == live for c in patched["spec"]["template"]["spec"]["containers"])
    assert warnings[2].startswith("kept the live limit cpu=1 of container web too")
    assert warnings[3].startswith("3 more request/limit pair(s)") and len(warnings) == 4


def test_a_container_name_that_is_not_a_string_is_skipped() -> None:
    def odd_name(req: dict[str, Any]) -> None:
        req["object"]["spec"]["template"]["spec"]["containers"].append({"name": {"x": 1}, "image": "busybox"})

    patched, warnings = run(edit(resources(UPDATE, ASKED, LIVE), odd_name), [vpa()])
    assert container(patched)["resources"] == LIVE and len(warnings) == 1


def test_resources_added_where_the_request_has_none() -> None:
    review = edit(resources(UPDATE, {}, LIVE), lambda req: container(req["object"]).pop("resources"))
    patched, _ = run(review, [vpa()])
    assert container(patched)["resources"] == LIVE


def test_uncontrolled_resources_and_new_containers_are_the_manifests() -> None:
    sidecar = {"name": "proxy", "image": "envoy:1", "resources": ASKED}

    def add_sidecar(req: dict[str, Any]) -> None:
        container(req["object"])["resources"]["requests"]["ephemeral-storage"] = "1Gi"
        req["object"]["spec"]["template"]["spec"]["containers"].append(copy.deepcopy(sidecar))

    review = edit(resources(UPDATE, ASKED, LIVE), add_sidecar)
    patched, warnings = run(review, [vpa()])
    assert container(patched)["resources"]["requests"] == {**LIVE["requests"], "ephemeral-storage": "1Gi"}
    assert container(patched, "proxy") == sidecar
    assert len(warnings) == 1


def test_vpa_in_another_namespace_changes_nothing() -> None:
    review = resources(UPDATE, ASKED, LIVE)
    patched, warnings = run(review, [vpa(namespace="other")])
    assert patched == review["request"]["object"] and warnings == []


def test_vpa_on_create_changes_nothing() -> None:
    review = edit(CREATE, lambda req: container(req["object"]).update(resources=ASKED))
    patched, warnings = run(review, [vpa()], {"on-create": "clamp"})
    assert patched == review["request"]["object"] and warnings == []


def test_hpa_and_vpa_together_and_warnings_stay_few_and_short() -> None:
    long = "a-very-long-autoscaler-name-" * 8

    def many_containers(req: dict[str, Any]) -> None:
        for key, res in (("object", ASKED), ("oldObject", LIVE)):
            containers = req[key]["spec"]["template"]["spec"]["containers"]
            for index in range(6):
                containers.append({"name": f"side-{index}", "image": "busybox", "resources": copy.deepcopy(res)})

    review = edit(resources(UPDATE, ASKED, LIVE), many_containers)
    patched, warnings = run(review, [hpa(name=long), vpa(name=long)])  # run() checks count and length
    assert patched["spec"]["replicas"] == 3
    assert all(c["resources"] == LIVE for c in patched["spec"]["template"]["spec"]["containers"])
    assert len(warnings) == 5 and "4 more container(s)" in warnings[-1]


# --- CronJob and custom resources ---------------------------------------------------------


def to_cronjob(req: dict[str, Any]) -> None:
    req["kind"] = {"group": "batch", "version": "v1", "kind": "CronJob"}
    for key in ("object", "oldObject"):
        obj = req[key]
        spec = obj["spec"]
        obj.update(apiVersion="batch/v1", kind="CronJob")
        obj["spec"] = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": spec["template"]}}}


def test_cronjob_resources_under_a_vpa() -> None:
    review = edit(resources(UPDATE, ASKED, LIVE), to_cronjob)
    patched, warnings = run(review, [vpa(kind="CronJob"), hpa(kind="CronJob", api_version="batch/v1")])
    assert container(patched, template=CRON_TEMPLATE)["resources"] == LIVE
    assert "replicas" not in patched["spec"]
    assert len(warnings) == 1


def rollout(req: dict[str, Any]) -> None:
    req["kind"] = {"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout"}
    for key in ("object", "oldObject"):
        req[key].update(apiVersion="argoproj.io/v1alpha1", kind="Rollout")


ROLLOUT_HPA = hpa(api_version="argoproj.io/v1alpha1", kind="Rollout")
ROLLOUT_VPA = vpa() | {"spec": {"targetRef": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"}}}


def test_custom_resource_only_when_configured() -> None:
    review = edit(resources(UPDATE, ASKED, LIVE), rollout)
    patched, warnings = run(review, [ROLLOUT_HPA, ROLLOUT_VPA])
    assert patched == review["request"]["object"] and warnings == []
    options = {"custom-resources": [{"group": "argoproj.io", "kind": "Rollout"}]}
    patched, warnings = run(review, [ROLLOUT_HPA, ROLLOUT_VPA], options)
    assert patched["spec"]["replicas"] == 3
    assert container(patched)["resources"] == LIVE
    assert len(warnings) == 2


def test_custom_resource_with_its_own_paths() -> None:
    def nest(req: dict[str, Any]) -> None:
        rollout(req)
        for key in ("object", "oldObject"):
            spec = req[key]["spec"]
            req[key]["spec"] = {"workers": {"count": spec["replicas"], "podTemplate": spec["template"]}}

    review = edit(resources(UPDATE, ASKED, LIVE), nest)
    entry = {"group": "argoproj.io", "kind": "Rollout",
             "replicas-path": ["spec", "workers", "count"], "template-path": ["spec", "workers", "podTemplate"]}
    patched, warnings = run(review, [ROLLOUT_HPA, ROLLOUT_VPA], {"custom-resources": [entry]})
    assert patched["spec"]["workers"]["count"] == 3
    assert container(patched, template=("spec", "workers", "podTemplate"))["resources"] == LIVE
    assert "spec.workers.count=3" in warnings[0]
    # an empty path means the kind has no such field
    no_replicas = {**entry, "replicas-path": []}
    patched, warnings = run(review, [ROLLOUT_HPA, ROLLOUT_VPA], {"custom-resources": [no_replicas]})
    assert patched["spec"]["workers"]["count"] == 1 and len(warnings) == 1


# --- options ------------------------------------------------------------------------------


def test_options_are_validated_by_the_schema() -> None:
    good = {"on-create": "clamp", "custom-resources": [{"group": "argoproj.io", "kind": "Rollout", "replicas-path": ["spec", "replicas"]}]}
    config.validate({"rules": {"autoscaler-owned-field-reset": good}}, "cfg")
    for bad in ({"on-create": "remove"}, {"custom-resources": [{"kind": "Rollout"}]},
                {"custom-resources": [{"group": "x", "kind": "Y", "paths": []}]}):
        with pytest.raises(config.ConfigError):
            config.validate({"rules": {"FW403": bad}}, "cfg")
