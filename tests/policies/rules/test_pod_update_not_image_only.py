"""FW401 pod-update-not-image-only, on the real `kubectl set image` / `kubectl label` requests."""

from __future__ import annotations

import sys
from typing import Any, Callable

import pytest

from fieldwarden.policies.admission import AdmissionRequest, AutoscalerIndex, Verdict
from fieldwarden.policies.config import ConfigError, Settings, validate
from fieldwarden.policies.rules import pod_update_not_image_only as rule
from tests.policies.rules.admission_samples import request, review

Edit = Callable[[dict[str, Any]], None]
GATE = {"name": "kueue.x-k8s.io/admission"}
NODE_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]
    }
}


def conf(**options: Any) -> dict[str, Any]:
    return {**Settings().rule_conf("FW401"), **{k.replace("_", "-"): v for k, v in options.items()}}


def update(
    old: Edit | None = None, new: Edit | None = None, both: Edit | None = None, sample: str = "pod-update-set-image.json"
) -> AdmissionRequest:
    """The real set-image UPDATE (old image nginx:1.25, new nginx:1.26), edited: `both` first."""
    body = review(sample)
    for edit, key in ((both, "oldObject"), (both, "object"), (old, "oldObject"), (new, "object")):
        if edit is not None:
            edit(body["request"][key])
    return request(body)


def judge(req: AdmissionRequest, **options: Any) -> Verdict | None:
    return rule.validate(req, conf(**options), AutoscalerIndex())


def denied(req: AdmissionRequest, **options: Any) -> str:
    verdict = judge(req, **options)
    assert verdict is not None and verdict.allowed is False
    return verdict.message


def container(pod: dict[str, Any], index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = pod["spec"]["containers"][index]
    return found


def add_sidecar(pod: dict[str, Any]) -> None:
    pod["spec"]["containers"].append({"name": "sidecar", "image": "envoy:1.30", "resources": {}})


def add_init(image: str) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        pod["spec"]["initContainers"] = [{"name": "init", "image": image, "resources": {}}]

    return edit


def gated(pod: dict[str, Any]) -> None:
    pod["spec"]["schedulingGates"] = [GATE]


def kueue_admits(pod: dict[str, Any]) -> None:
    """What a queue controller does to a gated pod: ungate, pin to nodes, tolerate them."""
    pod["spec"].pop("schedulingGates", None)
    pod["spec"]["nodeSelector"] = {"cloud.example.com/pool": "gpu"}
    pod["spec"]["affinity"] = {"nodeAffinity": NODE_AFFINITY}
    pod["spec"]["tolerations"].append({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})


def condition(status: str | None) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        if status is not None:
            pod["status"]["conditions"] = [
                {"type": "Ready", "status": "True"},
                {"type": "InPlaceUpdateReady", "status": status},
            ]

    return edit


# --- what passes --------------------------------------------------------------------


def test_real_set_image_update_is_allowed() -> None:
    req = update()
    assert container(dict(req.old_object or {}))["image"] != container(dict(req.object or {}))["image"]
    assert judge(req) is None


def test_real_label_update_is_allowed() -> None:
    req = update(sample="pod-update-label.json")
    assert (req.object or {})["metadata"] != (req.old_object or {})["metadata"]
    assert judge(req) is None


def test_metadata_edits_are_allowed() -> None:
    def edit_metadata(pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        meta["annotations"]["example.com/note"] = "x"
        meta["finalizers"] = ["example.com/keep"]
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}]

    assert judge(update(new=edit_metadata)) is None


def test_init_container_image_change_is_allowed() -> None:
    assert judge(update(old=add_init("busybox:1.36"), new=add_init("busybox:1.37"))) is None


def test_null_empty_and_absent_values_are_the_same() -> None:
    def drop_empties(pod: dict[str, Any]) -> None:
        del container(pod)["resources"]
        pod["spec"]["securityContext"] = None

    assert judge(update(new=drop_empties)) is None


# --- what is denied, and how it is named ---------------------------------------------


def test_env_change_names_the_container_field() -> None:
    message = denied(update(new=lambda pod: container(pod).update(env=[{"name": "LOG", "value": "debug"}])))
    assert "spec.containers[name=c].env" in message
    assert "spec.containers[*].image" in message  # says what may change


def test_resources_change_is_denied_down_to_the_changed_quantity() -> None:
    def requests(cpu: str) -> Edit:
        return lambda pod: container(pod).update(resources={"requests": {"cpu": cpu, "memory": "64Mi"}})

    assert "spec.containers[name=c].resources" in denied(update(new=requests("200m")))
    message = denied(update(old=requests("100m"), new=requests("200m")))
    assert "spec.containers[name=c].resources.requests.cpu" in message
    assert "memory" not in message


def test_every_offending_path_is_listed() -> None:
    def many(pod: dict[str, Any]) -> None:
        container(pod)["image"] = "nginx:1.27"  # allowed, not listed
        container(pod)["env"] = [{"name": "A", "value": "1"}]
        container(pod)["imagePullPolicy"] = "Always"
        pod["spec"]["tolerations"].append({"key": "dedicated", "operator": "Exists"})
        pod["spec"]["activeDeadlineSeconds"] = 60
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}
        del pod["spec"]["enableServiceLinks"]

    message = denied(update(new=many))
    listed = message.split("this one also changes ", 1)[1].rsplit(" (roll the workload", 1)[0]
    assert sorted(listed.split(", ")) == [
        "spec.activeDeadlineSeconds",
        "spec.containers[name=c].env",
        "spec.containers[name=c].imagePullPolicy",
        "spec.enableServiceLinks",
        "spec.nodeSelector",
        "spec.tolerations",
    ]


def test_nested_change_is_reported_at_the_changed_key() -> None:
    def context(**fields: Any) -> Edit:
        return lambda pod: pod["spec"]["securityContext"].update(fields)

    message = denied(update(old=context(runAsNonRoot=True), new=context(runAsNonRoot=True, runAsUser=1000)))
    assert "spec.securityContext.runAsUser" in message and "runAsNonRoot" not in message
    assert "spec.securityContext (" in denied(update(new=context(runAsUser=1000)))  # added whole


def test_added_container_is_reported_by_index() -> None:
    assert 'spec.containers[1] (container "sidecar" added' in denied(update(new=add_sidecar))


def test_removed_container_is_reported_by_index() -> None:
    assert 'spec.containers[1] (container "sidecar" removed' in denied(update(old=add_sidecar))


def test_removing_the_first_container_names_it_not_the_shifted_one() -> None:
    def remove_first(pod: dict[str, Any]) -> None:
        del pod["spec"]["containers"][0]

    message = denied(update(both=add_sidecar, new=remove_first))
    assert 'spec.containers[0] (container "c" removed' in message
    assert "sidecar" not in message


def test_reordered_containers_are_a_change() -> None:
    def reverse(pod: dict[str, Any]) -> None:
        pod["spec"]["containers"].reverse()

    message = denied(update(both=add_sidecar, new=reverse))
    assert "spec.containers[0], spec.containers[1] (containers reordered from c, sidecar to sidecar, c" in message
    assert "compares them by index" in message


def test_renamed_container_is_a_change() -> None:
    message = denied(update(new=lambda pod: container(pod).update(name="web")))
    assert 'spec.containers[0] (container "c" replaced by "web")' in message


def test_init_container_field_change_is_denied() -> None:
    def init_with_env(pod: dict[str, Any]) -> None:
        add_init("busybox:1.36")(pod)
        pod["spec"]["initContainers"][0]["env"] = [{"name": "A", "value": "1"}]

    assert "spec.initContainers[name=init].env" in denied(update(old=add_init("busybox:1.36"), new=init_with_env))


@pytest.mark.parametrize(
    "image, says",
    [(" nginx:1.26", "whitespace"), ("nginx:1.26\n", "whitespace"), ("", "empty"), ("  ", "empty")],
)
def test_bad_images_are_denied_like_the_api_server_would(image: str, says: str) -> None:
    message = denied(update(new=lambda pod: container(pod).update(image=image)))
    assert "spec.containers[name=c].image" in message and says in message
    assert "API server rejects it anyway" in message


def test_missing_image_is_denied() -> None:
    assert "spec.containers[name=c].image (empty" in denied(update(new=lambda pod: container(pod).pop("image")))


# --- what the rule never judges ------------------------------------------------------


def env_change(pod: dict[str, Any]) -> None:
    container(pod)["env"] = [{"name": "A", "value": "1"}]


@pytest.mark.parametrize("sub_resource", ["status", "resize", "ephemeralcontainers", "binding"])
def test_sub_resources_spec_changes_are_not_judged_by_default(sub_resource: str) -> None:
    def resize(pod: dict[str, Any]) -> None:
        container(pod)["resources"] = {"requests": {"cpu": "2"}}
        pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
        pod["status"]["phase"] = "Running"

    req = update(new=resize)
    assert judge(req) is not None  # the same change on the pod itself is denied
    assert judge(req._replace(sub_resource=sub_resource)) is None


def test_listed_sub_resources_are_judged_like_a_pod_update() -> None:
    def debug(pod: dict[str, Any]) -> None:
        pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]

    def resize(pod: dict[str, Any]) -> None:
        container(pod)["resources"] = {"requests": {"cpu": "2"}}

    debugged = update(new=debug)._replace(sub_resource="ephemeralcontainers")
    resized = update(new=resize)._replace(sub_resource="resize")
    assert judge(debugged, subresources=["resize"]) is None
    assert "this one also changes spec.ephemeralContainers (roll" in denied(debugged, subresources=["ephemeralcontainers"])
    assert judge(resized, subresources=["ephemeralcontainers"]) is None
    assert "changes spec.containers[name=c].resources (roll" in denied(resized, subresources=["resize"])


# --- exemptions cannot be self-granted ----------------------------------------------------

OPT_OUT = ("fieldwarden.io/admission", "disabled")


def annotate(value: str | None) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        notes = pod["metadata"].setdefault("annotations", {})
        if value is None:
            notes.pop("fieldwarden.io/ignore", None)
        else:
            notes["fieldwarden.io/ignore"] = value
    return edit


def label(key: str, value: str | None) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        labels = pod["metadata"].setdefault("labels", {})
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    return edit


@pytest.mark.parametrize("sub_resource", ["", "status"])
@pytest.mark.parametrize("old, new, says", [
    (None, "FW401", "this one adds the annotation fieldwarden.io/ignore"),
    (None, "", "this one adds the annotation fieldwarden.io/ignore"),
    ("FW402", "FW401,FW402", "this one changes the annotation fieldwarden.io/ignore"),
])
def test_adding_or_changing_the_ignore_annotation_is_denied(
        sub_resource: str, old: str | None, new: str, says: str) -> None:
    message = denied(update(sample="pod-update-label.json", old=annotate(old), new=annotate(new))
                     ._replace(sub_resource=sub_resource))
    assert message.startswith(f"a pod update may not grant exemptions; {says} (only subjects exempt")


def test_the_reproduction_names_the_annotation_and_the_spec_change() -> None:
    def tolerate(pod: dict[str, Any]) -> None:
        pod["spec"]["tolerations"].append({"key": "example.com/spot", "operator": "Exists"})

    message = denied(update(new=lambda pod: (annotate("FW401")(pod), tolerate(pod))))
    assert "adds the annotation fieldwarden.io/ignore" in message
    assert "this one also changes spec.tolerations" in message


@pytest.mark.parametrize("sub_resource", ["", "status"])
def test_setting_the_opt_out_label_is_denied(sub_resource: str) -> None:
    req = update(sample="pod-update-label.json", new=label(*OPT_OUT))._replace(sub_resource=sub_resource)
    assert "this one sets the opt-out label fieldwarden.io/admission=disabled" in denied(req)
    other = update(sample="pod-update-label.json", new=label("example.com/off", "yes"))
    assert judge(other) is None
    assert "sets the opt-out label example.com/off=yes" in denied(
        other, opt_out_label={"key": "example.com/off", "value": "yes"})


def test_keeping_or_removing_an_exemption_is_allowed() -> None:
    def exempt(pod: dict[str, Any]) -> None:
        annotate("FW401")(pod)
        label(*OPT_OUT)(pod)

    assert judge(update(sample="pod-update-label.json", both=exempt)) is None
    removed = update(sample="pod-update-label.json", both=exempt,
                     new=lambda pod: (annotate(None)(pod), label(OPT_OUT[0], None)(pod)))
    assert judge(removed) is None
    assert judge(update(sample="pod-update-label.json", both=exempt, new=label(OPT_OUT[0], "enabled"))) is None


def test_a_status_write_is_judged_for_exemptions_only() -> None:
    def status_and_spec(pod: dict[str, Any]) -> None:
        pod["status"]["phase"] = "Failed"
        pod["spec"]["activeDeadlineSeconds"] = 5

    assert judge(update(new=status_and_spec)._replace(sub_resource="status")) is None


def test_other_kinds_and_operations_are_not_judged() -> None:
    req = update(new=env_change)
    assert judge(req._replace(kind="Deployment", group="apps", resource="deployments")) is None
    assert judge(req._replace(operation="CREATE", old_object=None)) is None
    assert judge(req._replace(operation="DELETE", object=None)) is None


# --- gated pods (schedulingGates) ----------------------------------------------------


def test_queue_controller_admitting_a_gated_pod_is_allowed() -> None:
    assert judge(update(both=gated, new=kueue_admits)) is None


def test_same_changes_on_an_ungated_pod_are_denied() -> None:
    message = denied(update(new=kueue_admits))
    for path in ("spec.nodeSelector", "spec.affinity", "spec.tolerations"):
        assert path in message


def test_gated_pod_changes_are_denied_when_the_option_is_off() -> None:
    message = denied(update(both=gated, new=kueue_admits), allow_gated_pod_scheduling_changes=False)
    for path in ("spec.schedulingGates", "spec.nodeSelector", "spec.affinity", "spec.tolerations"):
        assert path in message


def test_gated_pod_may_lose_one_gate_of_two_but_gain_none() -> None:
    second = {"name": "example.com/quota"}

    def two_gates(pod: dict[str, Any]) -> None:
        pod["spec"]["schedulingGates"] = [GATE, second]

    assert judge(update(old=two_gates, new=lambda pod: pod["spec"].update(schedulingGates=[second]))) is None
    extra = {"name": "example.com/new"}
    message = denied(update(both=gated, new=lambda pod: pod["spec"]["schedulingGates"].append(extra)))
    assert "spec.schedulingGates (gates can only be removed)" in message


def test_gated_pod_other_changes_stay_denied() -> None:
    def admit_with_extras(pod: dict[str, Any]) -> None:
        kueue_admits(pod)
        required = [{"topologyKey": "zone"}]
        pod["spec"]["affinity"]["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": required}
        env_change(pod)

    message = denied(update(both=gated, new=admit_with_extras))
    assert "spec.affinity.podAffinity" in message and "spec.containers[name=c].env" in message
    assert "nodeAffinity" not in message and "nodeSelector" not in message and "tolerations" not in message


def test_gate_in_the_new_object_only_does_not_make_a_pod_gated() -> None:
    def add_gate_and_admit(pod: dict[str, Any]) -> None:
        kueue_admits(pod)
        gated(pod)

    message = denied(update(new=add_gate_and_admit))
    assert "spec.schedulingGates" in message and "spec.nodeSelector" in message


# --- require-gate-false --------------------------------------------------------------


def test_require_gate_false_allows_an_image_change_while_the_condition_is_false() -> None:
    assert judge(update(both=condition("False")), require_gate_false=True) is None


@pytest.mark.parametrize("status, shown", [("True", '"True"'), ("Unknown", '"Unknown"'), (None, "absent")])
def test_require_gate_false_denies_an_image_change_otherwise(status: str | None, shown: str) -> None:
    message = denied(update(both=condition(status)), require_gate_false=True)
    assert f"condition InPlaceUpdateReady is \"False\", and it is {shown}" in message
    assert judge(update(both=condition(status))) is None  # the mode is off by default


def test_require_gate_false_leaves_updates_without_image_change_alone() -> None:
    assert judge(update(both=condition("True"), sample="pod-update-label.json"), require_gate_false=True) is None


def test_require_gate_false_reads_the_configured_condition_type() -> None:
    def custom(pod: dict[str, Any]) -> None:
        pod["status"]["conditions"] = [{"type": "example.com/Drained", "status": "False"}]

    req = update(both=custom)
    assert judge(req, require_gate_false=True, gate_condition_type="example.com/Drained") is None
    assert "InPlaceUpdateReady" in denied(req, require_gate_false=True)


def test_require_gate_false_reports_alongside_spec_changes() -> None:
    message = denied(update(both=condition("True"), new=env_change), require_gate_false=True)
    assert "spec.containers[name=c].env" in message and "InPlaceUpdateReady" in message


# --- configuration -------------------------------------------------------------------


def test_options_are_validated_at_load_time() -> None:
    validate({"rules": {"FW401": {"require-gate-false": True, "gate-condition-type": "example.com/Drained"}}}, "cfg")
    with pytest.raises(ConfigError):
        validate({"rules": {"FW401": {"gate-condition-type": "not a condition"}}}, "cfg")
    with pytest.raises(ConfigError):
        validate({"rules": {"pod-update-not-image-only": {"enforcement": "maybe"}}}, "cfg")
    validate({"rules": {"FW401": {"subresources": ["resize", "ephemeralcontainers"],
                                  "opt-out-label": {"key": "example.com/off", "value": "yes"}}}}, "cfg")
    for bad in ({"subresources": ["status"]}, {"subresources": ["resize", "resize"]},
                {"opt-out-label": {"key": "example.com/off"}}, {"opt-out-label": {"key": "a b", "value": "x"}}):
        with pytest.raises(ConfigError):
            validate({"rules": {"FW401": bad}}, "cfg")


# --- nesting deeper than Python recurses ----------------------------------------------------
# (A rule that raises is skipped by the webhook, which then allows the request.)

DEEP = 3 * sys.getrecursionlimit()


def nested(leaf: Any, kind: type = dict, levels: int = DEEP) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value} if kind is dict else [value]
    return value


@pytest.mark.parametrize("kind", [dict, list])
def test_nesting_deeper_than_python_recurses_is_judged(kind: type) -> None:
    req = update()  # (built first: it deep-copies the sample)
    assert req.object is not None and req.old_object is not None
    req.old_object["spec"]["x"] = nested(1, kind)
    req.object["spec"]["x"] = nested(2, kind)
    message = denied(req)
    assert "also changes spec.x" in message and message.count(".a") <= 31  # named at most 32 parts deep
    req.object["spec"]["x"] = nested(1, kind)  # equal, though not the same objects
    assert judge(req) is None
    req.object["spec"]["x"] = {"deep": nested(1, kind), "other": 1}
    req.old_object["spec"]["x"] = {"deep": nested(1, kind), "other": 2}
    assert denied(req).endswith("this one also changes spec.x.other (roll the workload to get a new pod instead)")


def test_deep_values_in_gates_images_and_conditions() -> None:
    req = update(both=lambda pod: pod["spec"].update(schedulingGates=[GATE]))
    assert req.object is not None and req.old_object is not None
    req.old_object["spec"]["schedulingGates"].append(nested("old"))
    req.object["spec"]["schedulingGates"].append(nested("old"))
    assert judge(req) is None  # the same gates (an odd one included)
    req.object["spec"]["schedulingGates"][-1] = nested("new")
    assert "spec.schedulingGates (gates can only be removed)" in denied(req)
    req.object["spec"]["schedulingGates"].pop()
    container(req.old_object)["image"] = nested("a")
    container(req.object)["image"] = nested("b")
    req.old_object["status"]["conditions"] = [{"type": "InPlaceUpdateReady", "status": nested("False")}]
    message = denied(req, require_gate_false=True)
    assert "spec.containers[name=c].image (empty: the API server rejects it anyway)" in message
    assert "InPlaceUpdateReady is \"False\", and it is not a string" in message
