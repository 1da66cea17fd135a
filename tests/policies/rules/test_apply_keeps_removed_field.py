"""FW510 apply-keeps-removed-field: what the manifest dropped and another manager keeps (server-side apply)."""

from __future__ import annotations

import copy

from fieldwarden.policies.live import CLIENT
from fieldwarden.policies.rules import apply_keeps_removed_field as rule
from tests.policies.rules.live_samples import Obj, apply_entry, case, deployment, live

LABELS: Obj = {"f:metadata": {"f:labels": {"f:team": {}, "f:tier": {}}}}
TIER: Obj = {"f:metadata": {"f:labels": {"f:tier": {}}}}
MESSAGE = ('.metadata.labels.tier stays "web": the manifest no longer sets it, but "platform" owns it too, and an apply '
           "removes only what no other manager owns")


def labelled(**labels: str) -> Obj:
    manifest = deployment()
    manifest["metadata"]["labels"] = dict(labels)
    return manifest


def stored(managed: list[Obj]) -> Obj:
    return live(labelled(team="a", tier="web"), managed)


def test_a_label_dropped_from_the_manifest_that_another_applier_shares_stays() -> None:
    state = stored([apply_entry("ci", LABELS), apply_entry("platform", TIER)])
    manifest = labelled(team="a")
    found = list(rule.check(case(manifest, state, result=copy.deepcopy(state), field_manager="ci"), {}))
    assert [(v.path, v.message) for v in found] == [(("metadata", "labels"), MESSAGE)]
    predicted = list(rule.check(case(manifest, state, read_only=True, field_manager="ci"), {}))
    assert [v.message for v in predicted] == [MESSAGE + " (predicted from managedFields: --read-only)"]


def test_what_the_apply_removes_or_the_manifest_still_sets_is_not_reported() -> None:
    alone = stored([apply_entry("ci", LABELS)])  # only the applier owns tier: the apply removes it
    removed = copy.deepcopy(alone)
    del removed["metadata"]["labels"]["tier"]
    assert not list(rule.check(case(labelled(team="a"), alone, result=removed, field_manager="ci"), {}))
    shared = stored([apply_entry("ci", LABELS), apply_entry("platform", TIER)])
    kept = copy.deepcopy(shared)
    assert not list(rule.check(case(labelled(team="a", tier="web"), shared, result=kept, field_manager="ci"), {}))
    # the dry run says the field goes after all: the server is believed
    assert not list(rule.check(case(labelled(team="a"), shared, result=removed, field_manager="ci"), {}))
    # another manager's field the applier never applied is that manager's business
    assert not list(rule.check(case(labelled(team="a"), shared, result=kept, field_manager="deployer"), {}))


def test_client_side_apply_and_runs_without_a_dry_run_are_not_judged() -> None:
    shared = stored([apply_entry("ci", LABELS, "Update"), apply_entry("platform", TIER)])
    assert not list(rule.check(case(labelled(team="a"), shared, result=shared, field_manager="ci", mode=CLIENT), {}))
    assert not list(rule.check(case(labelled(team="a"), shared, field_manager="ci"), {}))  # no result, not read-only
