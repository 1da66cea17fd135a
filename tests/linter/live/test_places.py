"""Where live findings land, and the API server's Go dumps made readable (pure: plain dicts, no cluster).

The Statuses, manifests and live objects under tests/fixtures/live/ were captured from a real
kube-apiserver v1.32 by `fieldwarden lint --cluster` (each file's `about` says how);
tests/e2e/test_live_places.py checks the same cases end to end, with lines and columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter.live.client_apply import root_schema
from fieldwarden.linter.live.refusals import mistyped, readable_refusal
from fieldwarden.policies.live import LiveCase
from fieldwarden.policies.model import Violation
from fieldwarden.policies.places import changed_field, field_steps, go_plain_value, quoted_field, readable
from fieldwarden.policies.registry import RULES

FIXTURES = Path(__file__).parents[2] / "fixtures" / "live"
SCHEMA = root_schema(json.loads((FIXTURES / "openapi-apps-v1-cut.json").read_text()), "apps", "v1", "Deployment")
CONTAINER = ("spec", "template", "spec", "containers", 0)


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def judged(name: str, code: str, schema: Any = None) -> list[Violation]:
    """What rule `code` says of a captured case (its refusal first reworded as linter/live/checks.py does)."""
    data = fixture(name)
    refusal = readable_refusal(data["refusal"], data["manifest"], schema)
    case = LiveCase(manifest=data["manifest"], live=data["live"], result=None, refusal=refusal, mode=data["mode"],
                    field_manager="kubectl" if data["mode"] == "server" else "kubectl-client-side-apply")
    return list(RULES[code].check(case, {}))


# --- the changed field, over plain dicts -------------------------------------------------------------

def test_the_changed_value_under_the_path_and_the_path_itself_when_nothing_under_it_changes() -> None:
    live = {"spec": {"selector": {"matchLabels": {"app": "web"}}}}
    manifest = {"spec": {"selector": {"matchLabels": {"app": "other"}}}}
    assert changed_field(manifest, live, ("spec", "selector")) == ("spec", "selector", "matchLabels", "app")
    assert changed_field(live, live, ("spec", "selector")) == ("spec", "selector")
    assert changed_field(manifest, None, ("spec", "selector")) == ("spec", "selector")  # a new object
    # a label dropped: nothing the manifest sets differs, so the selector itself
    both = {"spec": {"selector": {"matchLabels": {"app": "web", "tier": "front"}}}}
    assert changed_field(live, both, ("spec", "selector")) == ("spec", "selector")


def test_the_first_change_in_the_manifests_order_items_by_name_and_defaults_no_change() -> None:
    live = {"spec": {"containers": [
        {"name": "a", "image": "a:1", "imagePullPolicy": "IfNotPresent"},
        {"name": "b", "image": "b:1", "args": ["x"], "terminationMessagePath": "/dev/termination-log"}]}}
    manifest = {"spec": {"containers": [{"name": "b", "args": ["y"], "image": "b:2"}, {"name": "a", "image": "a:1"}]}}
    assert changed_field(manifest, live, ("spec",)) == ("spec", "containers", 0, "args")
    manifest["spec"]["containers"].append({"name": "c", "image": "c:1"})
    manifest["spec"]["containers"][0] = {"name": "b", "image": "b:1"}
    assert changed_field(manifest, live, ("spec",)) == ("spec", "containers", 2)  # a new item: the item
    manifest["spec"]["containers"][2] = {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]}
    manifest["spec"]["containers"].pop(1)
    assert changed_field(manifest, live, ("spec",)) == ("spec", "containers", 1, "ports")  # a new field


def test_server_side_apply_key_selectors_are_parsed_as_the_items_they_name() -> None:
    assert field_steps('.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"].name') == [
        "spec", "containers", {"name": "web"}, "ports", {"containerPort": 80, "protocol": "TCP"}, "name"]
    assert field_steps("metadata.labels[app.kubernetes.io/name]") == ["metadata", "labels", "app.kubernetes.io/name"]
    assert field_steps("spec.containers[0].image") == ["spec", "containers", 0, "image"]


# --- captured refusals: the place and the words ----------------------------------------------------

@pytest.mark.parametrize("mode", ["server", "client"])
def test_an_immutable_selector_lands_on_the_changed_label_in_json(mode: str) -> None:
    found = judged(f"deployment-selector-{mode}", "FW502")
    assert [v.path for v in found] == [("spec", "selector", "matchLabels", "app")]
    assert found[0].message == (
        'the API server refuses the apply: spec.selector: Invalid value: {"matchLabels":{"app":"web2"}}: field is '
        'immutable (spec.selector.matchLabels.app: live "web", the manifest "web2")')


@pytest.mark.parametrize("mode", ["server", "client"])
def test_a_services_cluster_ip(mode: str) -> None:
    found = judged(f"service-clusterip-{mode}", "FW502")
    assert [(v.path, v.message) for v in found] == [(("spec", "clusterIP"), (
        'the API server refuses the apply: spec.clusterIPs[0]: Invalid value: ["10.0.0.51"]: may not change once set '
        '(spec.clusterIP: live "10.0.0.50", the manifest "10.0.0.51")'))]


@pytest.mark.parametrize("mode", ["server", "client"])
def test_a_jobs_template_lands_on_the_image_and_its_go_struct_dump_is_gone(mode: str) -> None:
    found = judged(f"job-template-{mode}", "FW502")
    assert [v.path for v in found] == [CONTAINER + ("image",)]
    assert "core.PodTemplateSpec{" in fixture(f"job-template-{mode}")["refusal"]["message"]
    assert found[0].message == (
        'the API server refuses the apply: spec.template: Invalid value: {"spec":{"containers":[{"args":["--once"],'
        '"image":"registry.example/job:2.0","name":"main"}],"restartPolicy":"Never"}}: field is immutable '
        '(spec.template.spec.containers[0].image: live "registry.example/job:1.0", the manifest '
        '"registry.example/job:2.0")')


def test_a_statefulsets_claim_template_client_side_refused_server_side_a_conflict() -> None:
    storage = ("spec", "volumeClaimTemplates", 0, "spec", "resources", "requests", "storage")
    refused = judged("statefulset-claim-client", "FW502")
    assert [v.path for v in refused] == [storage]
    assert refused[0].message.endswith(
        '(spec.volumeClaimTemplates[0].spec.resources.requests.storage: live "1Gi", the manifest "2Gi")')
    conflict = judged("statefulset-claim-server", "FW503")
    assert [v.path for v in conflict] == [storage]
    assert conflict[0].message.startswith('the API server refuses the apply: conflict with "kubectl-client-side-apply" '
                                          'using apps/v1: .spec.volumeClaimTemplates (live [')
    data = fixture("statefulset-claim-server")  # read-only: the conflict predicted from managedFields, placed alike
    case = LiveCase(manifest=data["manifest"], live=data["live"], result=None, refusal=None, read_only=True)
    assert [v.path for v in RULES["FW503"].check(case, {})] == [storage]


def test_client_side_unknown_fields_are_named_not_dumped() -> None:
    raw = fixture("client-unknown-spec-field")["refusal"]["message"]
    assert raw.startswith(' "" is invalid: patch: Invalid value: "map[metadata:map[annotations:')
    found = judged("client-unknown-spec-field", "FW501")
    assert [(v.path, v.message) for v in found] == [(("spec", "bogus"), (
        'the API server refuses the apply: spec.bogus: strict decoding error: unknown field "spec.bogus"'))]
    inner = judged("client-unknown-container-field", "FW501")
    assert [(v.path, v.message) for v in inner] == [(CONTAINER + ("foo",), (
        'the API server refuses the apply: spec.template.spec.containers[0].foo: strict decoding error: unknown field '
        '"spec.template.spec.containers[0].foo"'))]


def test_client_side_wrong_types_are_found_by_the_schema_and_shown_as_json() -> None:
    found = judged("client-wrong-type-replicas", "FW501", SCHEMA)
    assert [(v.path, v.message) for v in found] == [(("spec", "replicas"), (
        'the API server refuses the apply: spec.replicas: Invalid value: "two": unrecognized type: int32'))]
    port = judged("client-wrong-type-port", "FW501", SCHEMA)
    assert [(v.path, v.message) for v in port] == [(CONTAINER + ("ports", 0, "containerPort"), (
        'the API server refuses the apply: spec.template.spec.containers[name="web"].ports[containerPort="http"]'
        '.containerPort: Invalid value: "http": unrecognized type: int32'))]
    # without the schema the field is unknown: the error alone, without the dump, on the object
    blind = judged("client-wrong-type-port", "FW501")
    assert [(v.path, v.message) for v in blind] == [((), "the API server refuses the apply: unrecognized type: int32")]


def test_server_side_typed_patch_errors_are_invalid_on_the_field() -> None:
    found = judged("server-wrong-type-port", "FW501")
    assert [(v.path, v.message) for v in found] == [(CONTAINER + ("ports", 0, "containerPort"), (
        'the API server refuses the apply: spec.template.spec.containers[name="web"].ports[containerPort="http",'
        'protocol="TCP"].containerPort: expected numeric (int or float), got string'))]


def test_a_create_that_cannot_be_decoded_names_its_field() -> None:
    unknown = judged("create-unknown-field", "FW501")
    assert [v.path for v in unknown] == [CONTAINER + ("foo",)]
    port = judged("create-wrong-type-port", "FW501")
    assert [(v.path, v.message) for v in port] == [(CONTAINER + ("ports", 0, "containerPort"), (
        'the API server refuses the apply: spec.template.spec.containers[name="neu"].ports[containerPort="http"]'
        '.containerPort: Invalid value: "http": json: cannot unmarshal string into Go struct field '
        'ContainerPort.spec.template.spec.containers.ports.containerPort of type int32'))]


def test_no_captured_finding_keeps_a_go_dump() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        if "refusal" not in data:
            continue
        for code in ("FW501", "FW502", "FW503", "FW504"):
            for violation in judged(path.stem, code, SCHEMA):
                assert "map[" not in violation.message and "{MatchLabels" not in violation.message, path.name


def test_admission_denials_on_the_quoted_value_the_named_field_else_the_change() -> None:
    image = judged("admission-policy-quotes-image", "FW504")
    assert [v.path for v in image] == [CONTAINER + ("image",)]
    replicas = judged("admission-policy-failed-expression", "FW504")
    assert [v.path for v in replicas] == [("spec", "replicas")]  # `object.spec.replicas` in the failed expression
    data = fixture("admission-policy-quotes-image")
    data["refusal"]["message"] = data["refusal"]["message"].replace("image registry.example/web:latest uses", "images use")
    data["refusal"]["details"]["causes"] = []
    case = LiveCase(manifest=data["manifest"], live=data["live"], result=None, refusal=data["refusal"])
    assert [v.path for v in RULES["FW504"].check(case, {})] == [CONTAINER + ("image",)]  # the one change
    moved = case._replace(manifest={**case.manifest, "spec": {**case.manifest["spec"], "replicas": 4}})
    assert [v.path for v in RULES["FW504"].check(moved, {})] == [("spec", "replicas")]  # the first change
    quoting = moved._replace(refusal=fixture("admission-policy-quotes-image")["refusal"])
    assert [v.path for v in RULES["FW504"].check(quoting, {})] == [CONTAINER + ("image",)]  # the quoted value first
    new = case._replace(live=None)
    assert [v.path for v in RULES["FW504"].check(new, {})] == [()]  # a new object, nothing quoted


def test_the_quoted_value_skips_the_objects_identity_and_prefers_the_longest() -> None:
    manifest = {"kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"a": "web", "b": "registry.example/web:latest"}}
    said = 'deployments.apps "web" is forbidden: ... denied request: web uses registry.example/web:latest'
    assert quoted_field(manifest, said) == ("spec", "b")
    assert quoted_field(manifest, "denied request: nothing here") == ()


# --- Go values -----------------------------------------------------------------------------------

def test_go_literals_read_as_json_only_when_plain() -> None:
    assert go_plain_value('map[string]string{"app":"web", "tier":"a, b"}') == {"app": "web", "tier": "a, b"}
    assert go_plain_value('[]string{"10.0.0.5", "fd00::5"}') == ["10.0.0.5", "fd00::5"]
    assert go_plain_value("[]int32{80, 443}") == [80, 443]
    from fieldwarden.policies.live import MISSING

    assert go_plain_value('v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}}') is MISSING


def test_a_dump_no_value_explains_stays_and_sensitive_values_are_redacted() -> None:
    manifest = {"kind": "Deployment", "spec": {"selector": {"matchLabels": {"app": "web2"}}}}
    message = 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}}: field is immutable'
    case = LiveCase(manifest=manifest, live=None, result=None, refusal=None)
    assert readable(case, "spec.selector", message) == 'Invalid value: {"matchLabels":{"app":"web2"}}: field is immutable'
    assert readable(case, "spec.other", message) == message  # neither the manifest's nor a plain literal
    hidden = case._replace(sensitive=("Deployment:spec.selector",))
    assert readable(hidden, "spec.selector", message) == "Invalid value: <redacted>: field is immutable"


def test_a_wrong_types_sensitive_value_is_redacted() -> None:
    data = fixture("client-wrong-type-replicas")
    hidden = readable_refusal(data["refusal"], data["manifest"], SCHEMA, ("Deployment:spec.replicas",))
    assert hidden["details"]["causes"][0]["message"] == "Invalid value: <redacted>: unrecognized type: int32"


def test_the_schema_walk_finds_the_first_mistyped_field_only() -> None:
    assert SCHEMA is not None
    manifest = {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a", "ports": [
        {"containerPort": 80}, {"containerPort": "http"}]}]}}}}
    assert mistyped(manifest, SCHEMA, "integer") == CONTAINER[:4] + (0, "ports", 1, "containerPort")
    assert mistyped(manifest, SCHEMA, "boolean") is None
