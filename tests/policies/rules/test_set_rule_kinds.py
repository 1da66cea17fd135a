"""Set rules pick the kinds they judge from kube.kinds_of (made once per unit's list, issue 23 row b).

Each rule used to ask group_kind of every object itself (about 300,000 calls on the bench corpus's
20,001 objects, 15 per object); now the unit's kinds are made once. What a rule finds must not
change: the kind tests the rules skip on are the ones their helpers (scale_target, vpa_target,
pod_source) make first, checked here on every fixture object relabelled as each kind, and a list
changed in place between two runs is judged as it is then.
"""

from __future__ import annotations

from typing import Any

from fieldwarden.policies.autoscalers import HPA, SCALED_OBJECT, VPA, scale_target, vpa_target
from fieldwarden.policies.kube import group_kind, object_key
from fieldwarden.policies.rule import SetObject
from fieldwarden.policies.rules import pdb_selects_nothing, service_selects_nothing
from fieldwarden.policies.rules._workload_selectors import pod_source
from tests.policies.test_rule_kinds import _as as relabelled, _fixture_objects

KINDS = [HPA, SCALED_OBJECT, VPA, ("apps", "Deployment"), ("", "Pod"), ("", "Service"), ("monitoring.coreos.com", "Prometheus")]


def _as(obj: dict[str, Any], group: str, kind: str) -> dict[str, Any]:
    return relabelled(obj, group, kind, "v2")


def test_the_kinds_the_rules_skip_are_those_their_helpers_refuse() -> None:
    objects = _fixture_objects()
    assert len(objects) > 100
    judged = 0
    for obj in objects:
        for group, kind in [group_kind(obj), *KINDS]:
            data = _as(obj, group, kind)
            if (group, kind) not in (HPA, SCALED_OBJECT):
                assert scale_target(data, "default") is None
            if (group, kind) != VPA:
                assert vpa_target(data, "default") is None
            judged += scale_target(data, "default") is not None or vpa_target(data, "default") is not None
            assert pod_source(data, group_kind(data)) == pod_source(data)
    assert judged  # (the fixtures hold autoscalers with targets: the test sees both sides)


def _object(text: dict[str, Any]) -> SetObject:
    return SetObject(object_key(text, "default"), text, f"{text['metadata']['name']}.yaml:1")


def _deployment(app: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": app},
            "spec": {"selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": app}]}}}}


def test_a_units_list_changed_in_place_is_judged_as_it_is_then() -> None:
    service = _object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}})
    budget = _object({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                      "spec": {"selector": {"matchLabels": {"app": "web"}}}})
    objects = [service, _object(_deployment("api")), budget]
    found = list(service_selects_nothing.check_set(objects, [0, 1, 2], {}))
    assert [(index, violation.path) for index, violation in found] == [(0, ("spec", "selector"))]
    assert "matches no pod template in namespace default" in found[0][1].message
    assert [index for index, _ in pdb_selects_nothing.check_set(objects, [0, 1, 2], {})] == [2]
    objects[1] = _object(_deployment("web"))  # the same list, now holding the pods both select
    assert list(service_selects_nothing.check_set(objects, [0, 1, 2], {})) == []
    assert list(pdb_selects_nothing.check_set(objects, [0, 1, 2], {})) == []
    objects[0] = _object(_deployment("other"))  # and the Service gone: nothing judged as one
    assert list(service_selects_nothing.check_set(objects, [0, 1, 2], {})) == []
