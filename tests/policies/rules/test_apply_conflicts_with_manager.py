"""FW503 apply-conflicts-with-manager: the dry run's 409, or conflicts predicted from managedFields."""

from __future__ import annotations

from fieldwarden.policies.live import CLIENT
from fieldwarden.policies.rules import apply_conflicts_with_manager as rule
from tests.policies.rules.live_samples import SCALE_CONFLICT, apply_entry, case, deployment, live

OURS = apply_entry("kubectl", {"f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
    'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}}}}})
SCALER = apply_entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, "Update", "scale")
IMAGE_SETTER = apply_entry("kubectl-set", {"f:spec": {"f:template": {"f:spec": {"f:containers": {
    'k:{"name":"web"}': {"f:image": {}}}}}}}, "Update")


def test_the_dry_runs_conflict_is_reported_on_the_field_with_both_values() -> None:
    manifest = deployment(replicas=3)
    stored = live(manifest, [OURS, SCALER], replicas=5)
    found = list(rule.check(case(manifest, stored, refusal=SCALE_CONFLICT), {}))
    assert [v.path for v in found] == [("spec", "replicas")]
    assert found[0].message == ('the API server refuses the apply: conflict with "kube-controller-manager" with '
                                'subresource "scale" using apps/v1: .spec.replicas (live 5, the manifest 3)')
    assert "--force-conflicts" in found[0].hint


def test_read_only_predicts_conflicts_with_other_managers_only_where_values_differ() -> None:
    manifest = deployment(replicas=3)
    manifest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.25"
    stored = live(deployment(), [OURS, SCALER, IMAGE_SETTER], replicas=5)
    found = list(rule.check(case(manifest, stored, read_only=True), {}))
    assert [v.path for v in found] == [("spec", "replicas"), ("spec", "template", "spec", "containers", 0, "image")]
    assert found[1].message.startswith('conflict with "kubectl-set" using apps/v1: '
                                       '.spec.template.spec.containers[name="web"].image (live "nginx:1.27", the '
                                       'manifest "nginx:1.25"): the apply will be refused')
    agreeing = deployment(replicas=5)
    assert not list(rule.check(case(agreeing, stored, read_only=True), {}))  # same values: shared ownership


def test_kubectl_scale_is_another_manager_than_kubectl_apply() -> None:
    scaled_by_hand = apply_entry("kubectl", {"f:spec": {"f:replicas": {}}}, "Update", "scale")
    manifest = deployment(replicas=3)
    stored = live(manifest, [OURS, scaled_by_hand], replicas=5)
    found = list(rule.check(case(manifest, stored, read_only=True), {}))
    assert [v.message.split(":")[0] for v in found] == ['conflict with "kubectl" with subresource "scale" using apps/v1']


def test_no_conflict_is_predicted_for_client_side_or_forced_applies() -> None:
    manifest = deployment(replicas=3)
    stored = live(manifest, [OURS, SCALER], replicas=5)
    assert not list(rule.check(case(manifest, stored, read_only=True, mode=CLIENT), {}))
    assert not list(rule.check(case(manifest, stored, read_only=True, force=True), {}))
    assert not list(rule.check(case(manifest, None, read_only=True), {}))
