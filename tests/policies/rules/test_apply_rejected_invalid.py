"""FW501 apply-rejected-invalid: field errors of an Invalid dry run, on the manifest's fields."""

from __future__ import annotations

import copy

from fieldwarden.policies.live import CLIENT, LiveCase
from fieldwarden.policies.rules import apply_rejected_invalid as rule
from tests.policies.rules.live_samples import POLICY_DENIED, RECREATE_REFUSED, SELECTOR_REFUSED, case, deployment, live


def test_a_defaulted_rolling_update_under_recreate_is_reported_on_the_strategy_with_a_patch() -> None:
    manifest = deployment(strategy={"type": "Recreate"})
    found = list(rule.check(case(manifest, live(deployment()), refusal=RECREATE_REFUSED), {}))
    assert [v.path for v in found] == [("spec", "strategy")]  # rollingUpdate is not in the manifest: its parent
    assert found[0].message == ("the API server refuses the apply: spec.strategy.rollingUpdate: Forbidden: may not be "
                                "specified when strategy `type` is 'Recreate'")
    assert "server-side apply leaves fields it does not own" in found[0].hint
    assert ("kubectl patch deployment web -n shop --type=merge -p "
            """'{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}'""") in found[0].hint


def test_a_field_of_the_manifest_is_reported_on_itself_and_client_side_says_so() -> None:
    manifest = deployment(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})
    found = list(rule.check(case(manifest, live(deployment()), refusal=RECREATE_REFUSED, mode=CLIENT), {}))
    assert [v.path for v in found] == [("spec", "strategy", "rollingUpdate")]
    assert "the dry run above" in found[0].hint  # the manifest's own field: nothing left over


def test_list_items_are_found_by_name_in_the_live_object() -> None:
    manifest = deployment()
    manifest["spec"]["template"]["spec"]["containers"] = [{"name": "b", "image": ""}, {"name": "a", "image": "x"}]
    stored = live(deployment())
    stored["spec"]["template"]["spec"]["containers"] = [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]
    refusal = copy.deepcopy(RECREATE_REFUSED)
    refusal["details"]["causes"] = [{"reason": "FieldValueRequired", "message": "Required value",
                                     "field": "spec.template.spec.containers[1].image"}]
    found = list(rule.check(case(manifest, stored, refusal=refusal), {}))
    assert [v.path for v in found] == [("spec", "template", "spec", "containers", 0, "image")]


def test_a_schema_error_of_server_side_apply_is_read_from_the_message() -> None:
    refusal = {"kind": "Status", "status": "Failure", "code": 500, "reason": "InternalError", "message":
               "failed to create typed patch object (shop/web; apps/v1, Kind=Deployment): .spec.replics: field not "
               "declared in schema"}
    manifest = deployment(replics=3)
    found = list(rule.check(LiveCase(manifest, None, None, refusal), {}))
    assert [(v.path, v.message) for v in found] == [
        (("spec", "replics"), "the API server refuses the apply: spec.replics: field not declared in schema")]


def test_immutable_fields_and_admission_denials_are_left_to_their_rules() -> None:
    manifest = deployment()
    assert not list(rule.check(case(manifest, live(manifest), refusal=SELECTOR_REFUSED), {}))
    assert not list(rule.check(case(manifest, live(manifest), refusal=POLICY_DENIED), {}))
    assert not list(rule.check(case(manifest, live(manifest), result=live(manifest)), {}))
