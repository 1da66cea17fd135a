"""FW402 pod-without-readiness-gate, on the real pod CREATE requests.

The rule edits a draft of the object as the webhook hands it over; these tests compare
the mutated object (the webhook's tests turn it into a JSON patch end to end).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from fieldwarden.policies.admission import AdmissionRequest, AutoscalerIndex
from fieldwarden.policies.config import ConfigError, Settings, validate
from fieldwarden.policies.draft import Draft
from fieldwarden.policies.rules import pod_without_readiness_gate as rule
from tests.policies.rules.admission_samples import request, review

Edit = Callable[[dict[str, Any]], None]
GATE = {"conditionType": "InPlaceUpdateReady"}
LABEL = "fieldwarden.io/readiness-gate"


def conf(**options: Any) -> dict[str, Any]:
    return {**Settings().rule_conf("FW402"), **options}


def create(edit: Edit | None = None, sample: str = "pod-create.json") -> AdmissionRequest:
    body = review(sample)
    if edit is not None:
        edit(body["request"]["object"])
    return request(body)


def mutated(req: AdmissionRequest, **options: Any) -> dict[str, Any]:
    """The object after the rule ran on a draft of it, as the webhook runs it (the request's is untouched)."""
    before = copy.deepcopy(req.object)
    draft = Draft(req.object or {})
    assert rule.mutate(req, draft, conf(**options), AutoscalerIndex()) == []
    assert req.object == before
    return draft.object


def unchanged(req: AdmissionRequest, **options: Any) -> bool:
    return mutated(req, **options) == req.object


def gates(value: Any) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        pod["spec"]["readinessGates"] = value

    return edit


@pytest.mark.parametrize("edit", [None, gates(None), gates([])], ids=["absent", "null", "empty"])
def test_gate_is_added_to_an_absent_null_or_empty_list(edit: Edit | None) -> None:
    req = create(edit)
    after = mutated(req)
    assert after["spec"]["readinessGates"] == [GATE]
    assert after["metadata"]["labels"] == {"app": "demo", LABEL: "injected"}
    before = copy.deepcopy(dict(req.object or {}))
    for pod in (before, after):
        pod["spec"].pop("readinessGates", None)
        pod["metadata"]["labels"].pop(LABEL, None)
    assert after == before  # nothing else moved


def test_gate_is_appended_to_a_populated_list() -> None:
    others = [{"conditionType": "example.com/LoadBalancerReady"}, {"conditionType": "example.com/Warm"}]
    after = mutated(create(gates(copy.deepcopy(others))))
    assert after["spec"]["readinessGates"] == [*others, GATE]


def test_pod_that_has_the_gate_is_left_alone() -> None:
    req = create(gates([{"conditionType": "example.com/Warm"}, dict(GATE)]))
    assert unchanged(req)  # no label either: whoever put the gate there drives it


def test_second_call_changes_nothing() -> None:
    req = create()
    once = mutated(req)
    assert mutated(req._replace(object=once)) == once


def test_generate_name_pod_without_labels_or_namespace() -> None:
    req = create(sample="pod-create-generatename.json")
    assert req.name == "" and "labels" not in (req.object or {})["metadata"]
    for variant in (req, req._replace(object={**dict(req.object or {}), "metadata": {"generateName": "gen-"}})):
        after = mutated(variant)
        assert after["spec"]["readinessGates"] == [GATE]
        assert after["metadata"]["labels"] == {LABEL: "injected"}
        assert "name" not in after["metadata"]


def test_labels_and_metadata_are_created_when_null() -> None:
    def null_labels(pod: dict[str, Any]) -> None:
        pod["metadata"]["labels"] = None

    assert mutated(create(null_labels))["metadata"]["labels"] == {LABEL: "injected"}
    bare = create(lambda pod: pod.update(metadata=None))
    assert mutated(bare)["metadata"] == {"labels": {LABEL: "injected"}}


def test_opt_out_annotation() -> None:
    def annotate(value: str) -> Edit:
        return lambda pod: pod["metadata"]["annotations"].update({LABEL: value})

    assert unchanged(create(annotate("disabled")))
    assert mutated(create(annotate("enabled")))["spec"]["readinessGates"] == [GATE]
    custom = create(lambda pod: pod["metadata"]["annotations"].update({"example.com/no-gate": "disabled"}))
    assert unchanged(custom, **{"opt-out-annotation": "example.com/no-gate"})
    assert not unchanged(custom)


def test_condition_type_and_label_are_configurable() -> None:
    options = {"condition-type": "example.com/Swapped", "injected-label": {"key": "example.com/gated", "value": "yes"}}
    after = mutated(create(gates([dict(GATE)])), **options)
    assert after["spec"]["readinessGates"] == [GATE, {"conditionType": "example.com/Swapped"}]
    assert after["metadata"]["labels"]["example.com/gated"] == "yes" and LABEL not in after["metadata"]["labels"]


def test_updates_are_never_touched() -> None:
    body = review("pod-update-set-image.json")
    req = request(body)
    assert req.operation == "UPDATE" and "readinessGates" not in (req.object or {})["spec"]
    assert unchanged(req)


def test_deployment_templates_are_never_touched() -> None:
    req = request(review("deployment-create-apply.json"))
    assert req.operation == "CREATE" and req.kind == "Deployment"
    assert unchanged(req)


@pytest.mark.parametrize("sub_resource", ["status", "binding", "ephemeralcontainers"])
def test_sub_resources_are_never_touched(sub_resource: str) -> None:
    assert unchanged(create()._replace(sub_resource=sub_resource))


def test_malformed_pods_are_left_to_the_api_server() -> None:
    assert unchanged(create(gates("InPlaceUpdateReady")))
    assert unchanged(create(lambda pod: pod["metadata"].update(labels=["app"])))
    assert unchanged(create(lambda pod: pod.pop("spec")))


def test_options_are_validated_at_load_time() -> None:
    good = {"condition-type": "example.com/Ready", "opt-out-annotation": "example.com/x"}
    validate({"rules": {"FW402": good}}, "cfg")
    for bad in (
        {"condition-type": "In Place"},
        {"injected-label": {"key": "fieldwarden.io/readiness-gate"}},
        {"injected-label": {"key": "k", "value": "not valid!"}},
    ):
        with pytest.raises(ConfigError):
            validate({"rules": {"pod-without-readiness-gate": bad}}, "cfg")
