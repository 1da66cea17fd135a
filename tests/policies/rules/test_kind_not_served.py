"""FW509 kind-not-served: an apiVersion and kind that discovery does not list."""

from __future__ import annotations

from fieldwarden.policies.rules import kind_not_served as rule
from tests.policies.rules.live_samples import case


def test_reported_on_the_api_version_with_the_served_versions() -> None:
    hpa = {"apiVersion": "autoscaling/v2beta2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"}}
    found = list(rule.check(case(hpa, served=False, served_versions=("autoscaling/v2", "autoscaling/v1")), {}))
    assert [v.path for v in found] == [("apiVersion",)]
    assert found[0].message == ('the cluster serves no kind "HorizontalPodAutoscaler" in version "autoscaling/v2beta2": '
                                "the apply fails (no matches for kind); it serves autoscaling/v2, autoscaling/v1")
    assert not list(rule.check(case(hpa), {}))
