"""FW502 apply-changes-immutable-field: refused by the dry run, or predicted from the live object."""

from __future__ import annotations

from typing import Any

from fieldwarden.policies.rules import apply_changes_immutable_field as rule
from tests.policies.rules.live_samples import RECREATE_REFUSED, SELECTOR_REFUSED, case, deployment, live


def test_the_dry_runs_immutable_selector_is_reported_on_the_selector() -> None:
    manifest = deployment(selector={"matchLabels": {"app": "web2"}})
    found = list(rule.check(case(manifest, live(deployment()), refusal=SELECTOR_REFUSED), {}))
    assert [v.path for v in found] == [("spec", "selector", "matchLabels", "app")]  # the changed value's own line
    assert found[0].message == ('the API server refuses the apply: spec.selector: Invalid value: {"matchLabels":{"app":'
                                '"web2"}}: field is immutable (spec.selector.matchLabels.app: live "web", the manifest '
                                '"web2")')
    assert not list(rule.check(case(manifest, live(deployment()), refusal=RECREATE_REFUSED), {}))


def test_read_only_predicts_the_selector_change_and_ignores_what_the_server_added() -> None:
    manifest = deployment(selector={"matchLabels": {"app": "web2"}})
    found = list(rule.check(case(manifest, live(deployment()), read_only=True), {}))
    assert [v.path for v in found] == [("spec", "selector", "matchLabels", "app")]
    assert found[0].message == (
        'spec.selector cannot change once the object exists (live {"matchLabels":{"app":"web"}}, the manifest '
        '{"matchLabels":{"app":"web2"}}): the apply will be refused (predicted from the live object: --read-only)')
    same = deployment()
    assert not list(rule.check(case(same, live(same), read_only=True), {}))
    assert not list(rule.check(case(manifest, None, read_only=True), {}))  # a new object changes nothing


def statefulset(**spec: Any) -> dict[str, Any]:
    base = deployment(**spec)
    base["kind"] = "StatefulSet"
    base["spec"].setdefault("serviceName", "web")
    return base


def test_a_statefulset_spec_refusal_is_shown_on_each_field_that_changes() -> None:
    manifest = statefulset(serviceName="web-headless", volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {
        "resources": {"requests": {"storage": "2Gi"}}}}])
    stored = live(statefulset(volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {
        "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"}}]))
    refusal = {"kind": "Status", "code": 422, "reason": "Invalid", "message": "...", "details": {"causes": [{
        "reason": "FieldValueForbidden", "field": "spec",
        "message": "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                   "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                   "'minReadySeconds' are forbidden"}]}}
    found = list(rule.check(case(manifest, stored, refusal=refusal), {}))
    storage = ("spec", "volumeClaimTemplates", 0, "spec", "resources", "requests", "storage")
    assert sorted(v.path for v in found) == [("spec", "serviceName"), storage]
    assert all("updates to statefulset spec" in v.message for v in found)
    # read-only finds the same two; a defaulted volumeMode is not a change
    predicted = list(rule.check(case(manifest, stored, read_only=True), {}))
    assert sorted(v.path for v in predicted) == [("spec", "serviceName"), storage]


def test_an_immutable_configmap_keeps_its_data() -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}, "immutable": True}
    stored = {**manifest, "data": {"a": "1"}}
    assert [v.path for v in rule.check(case(manifest, stored, read_only=True), {})] == [("data", "a")]
    mutable = {**stored, "immutable": False}
    assert not list(rule.check(case(manifest, mutable, read_only=True), {}))
