"""FW507 defaulted-field-left-behind: what the apply keeps that a new object from the manifest would not get."""

from __future__ import annotations

import copy

from fieldwarden.policies.rules import defaulted_field_left_behind as rule
from tests.policies.rules.live_samples import apply_entry, case, deployment, live

CREATED = apply_entry("kubectl-client-side-apply", {"f:spec": {"f:template": {"f:spec": {"f:containers": {
    'k:{"name":"web"}': {"f:imagePullPolicy": {}, "f:image": {}}}}}}}, "Update")


def test_an_image_pull_policy_defaulted_for_latest_stays_after_pinning() -> None:
    manifest = deployment()  # nginx:1.27 now; created as nginx:latest -> Always
    stored = live(manifest, [CREATED])
    stored["spec"]["template"]["spec"]["containers"][0].update(imagePullPolicy="Always", image="nginx:latest")
    after = copy.deepcopy(stored)
    after["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    fresh = live(manifest)  # imagePullPolicy IfNotPresent
    found = list(rule.check(case(manifest, stored, result=after, fresh=fresh), {}))
    assert [v.path for v in found] == [("spec", "template", "spec", "containers", 0)]
    assert found[0].message == ('spec.template.spec.containers[name=web].imagePullPolicy stays "Always" (the server set '
                                'it when the object was created); a new object from this manifest gets "IfNotPresent"')


def test_fields_of_other_writers_values_the_apply_changes_and_allocations_are_not_reported() -> None:
    manifest = deployment()
    stored = live(manifest, [apply_entry("kubectl-edit", {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"web"}': {"f:imagePullPolicy": {}}}}}}}, "Update")])
    stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    assert not list(rule.check(case(manifest, stored, result=stored, fresh=live(manifest)), {}))  # kubectl-edit's
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    stored_service = {**service, "metadata": {"name": "s", "managedFields": []},
                      "spec": {"ports": [{"port": 80, "nodePort": 30001}], "clusterIP": "10.0.0.7"}}
    fresh_service = {**service, "spec": {"ports": [{"port": 80, "nodePort": 30002}], "clusterIP": "10.0.0.9"}}
    assert not list(rule.check(case(service, stored_service, result=stored_service, fresh=fresh_service), {}))
    assert not list(rule.check(case(manifest, stored, result=stored), {}))  # no fresh object: nothing to compare


def test_replicas_an_hpa_set_are_not_a_default_even_when_before_first_apply_owns_them() -> None:
    # managedFields reset, then a first server-side apply: "before-first-apply" owns everything, the HPA's
    # count included (tests/e2e/test_live_ownership.py builds this state on a real API server)
    first = apply_entry("before-first-apply", {"f:spec": {"f:replicas": {}}}, "Update")
    manifest = deployment()  # replicas left out, as FW301 advises under an HPA
    stored = live(manifest, [first], replicas=5)
    after = copy.deepcopy(stored)
    after["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}
    fresh = live(manifest)  # a new object gets replicas 1
    assert not list(rule.check(case(manifest, stored, result=after, fresh=fresh, hpas=(hpa,)), {}))
    unscaled = list(rule.check(case(manifest, stored, result=after, fresh=fresh), {}))  # no HPA: a default left behind
    assert [v.message for v in unscaled] == [
        "spec.replicas stays 5 (the server set it when the object was created); a new object from this manifest gets 1"]
