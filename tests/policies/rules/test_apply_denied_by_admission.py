"""FW504 apply-denied-by-admission: webhook and ValidatingAdmissionPolicy denials, placed on a field when named."""

from __future__ import annotations

from fieldwarden.policies.live import refusal_kind
from fieldwarden.policies.rules import apply_denied_by_admission as rule
from tests.policies.rules.live_samples import POLICY_DENIED, RBAC_FORBIDDEN, SCALE_CONFLICT, case, deployment


def test_a_policy_denial_is_reported_whole_at_the_object() -> None:
    found = list(rule.check(case(deployment(), refusal=POLICY_DENIED), {}))
    assert [v.path for v in found] == [()]
    assert found[0].message == ("the cluster's admission control denies the apply: deployments.apps \"web\" is forbidden: "
                                "ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: image "
                                "nginx:latest uses the latest tag")


def test_a_webhook_message_naming_a_field_of_the_manifest_is_placed_there() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": 30,
                                                                                  "containers": [{"name": "a"}]}}
    denied = {"kind": "Status", "code": 403, "reason": "Forbidden", "message":
              'admission webhook "image-only-pod-updates.fieldwarden.io" denied the request: [FW401 '
              'pod-update-not-image-only] spec.activeDeadlineSeconds changed'}
    found = list(rule.check(case(pod, refusal=denied), {}))
    assert [v.path for v in found] == [("spec", "activeDeadlineSeconds")]


def test_rbac_and_conflicts_are_not_admission() -> None:
    assert refusal_kind(RBAC_FORBIDDEN) == "forbidden" and refusal_kind(SCALE_CONFLICT) == "conflict"
    assert not list(rule.check(case(deployment(), refusal=SCALE_CONFLICT), {}))


def test_a_webhook_that_cannot_be_called_fails_the_apply_as_admission() -> None:
    down = {"kind": "Status", "code": 500, "reason": "InternalError", "message":
            'Internal error occurred: failed calling webhook "autoscaler-ownership.fieldwarden.io": failed to call '
            'webhook: Post "https://127.0.0.1:9/mutate?timeout=5s": dial tcp 127.0.0.1:9: connect: connection refused'}
    found = list(rule.check(case(deployment(), refusal=down), {}))
    assert [v.path for v in found] == [()] and "failed calling webhook" in found[0].message
