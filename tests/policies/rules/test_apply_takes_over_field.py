"""FW506 apply-takes-over-field: other managers' fields that a client-side or forced apply changes."""

from __future__ import annotations

import copy

from fieldwarden.policies.live import CLIENT
from fieldwarden.policies.rules import apply_takes_over_field as rule
from tests.policies.rules.live_samples import apply_entry, case, deployment, live

IMAGE_SETTER = apply_entry("kubectl-set", {"f:spec": {"f:template": {"f:spec": {"f:containers": {
    'k:{"name":"web"}': {"f:image": {}}}}}}}, "Update")
CREATOR = apply_entry("kubectl-client-side-apply", {"f:spec": {"f:revisionHistoryLimit": {}}}, "Update")


def test_the_dry_run_changing_another_managers_field_is_reported_with_both_values() -> None:
    manifest = deployment()
    stored = live(manifest, [IMAGE_SETTER, CREATOR])
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    stored["spec"]["revisionHistoryLimit"] = 10
    after = copy.deepcopy(stored)
    after["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    after["spec"]["revisionHistoryLimit"] = 3
    found = list(rule.check(case(manifest, stored, result=after, mode=CLIENT), {}))
    assert [v.path for v in found] == [("spec", "template", "spec", "containers", 0, "image")]  # the creator is not "another"
    assert found[0].message == ('takes .spec.template.spec.containers[name="web"].image over from "kubectl-set" using '
                                'apps/v1 (live "nginx:1.28"); the apply would store "nginx:1.27"')


def test_read_only_predicts_for_client_side_and_forced_applies_only() -> None:
    manifest = deployment()
    stored = live(manifest, [IMAGE_SETTER])
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    assert len(list(rule.check(case(manifest, stored, read_only=True, mode=CLIENT), {}))) == 1
    assert len(list(rule.check(case(manifest, stored, read_only=True, force=True), {}))) == 1
    assert not list(rule.check(case(manifest, stored, read_only=True), {}))  # server-side: a conflict (FW503)


def test_replicas_under_an_hpa_are_left_to_fw505() -> None:
    manifest = deployment(replicas=3)
    stored = live(manifest, [apply_entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, "Update", "scale")],
                  replicas=6)
    after = copy.deepcopy(stored)
    after["spec"]["replicas"] = 3
    assert [v.path for v in rule.check(case(manifest, stored, result=after, force=True), {})] == [("spec", "replicas")]
    assert not list(rule.check(case(manifest, stored, result=after, force=True, hpas=({"kind": "x"},)), {}))


def test_kubectls_other_apply_mode_is_the_same_applier_when_the_manager_is_kubectls() -> None:
    server_side = apply_entry("kubectl", {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"web"}': {"f:image": {}}}}}}})
    manifest = deployment()
    stored = live(manifest, [server_side])
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    moving = case(manifest, stored, read_only=True, mode=CLIENT, field_manager="kubectl-client-side-apply")
    assert not list(rule.check(moving, {}))
    helm = case(manifest, stored, read_only=True, mode=CLIENT, field_manager="helm")
    assert len(list(rule.check(helm, {}))) == 1
