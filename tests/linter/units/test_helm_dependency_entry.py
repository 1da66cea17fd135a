"""A dependency's entry is found in the `dependencies:` list only (linter/units/helm.py dependency_entry).

The shape is argoproj/argo-cd's `manifests/ha/base/redis-ha/chart` at 37ee0097cf
(tests/fixtures/repos/argocd-redis-ha): a chart named `redis-ha` whose dependency is `redis-ha`.
"""

from __future__ import annotations

from fieldwarden.linter.units.helm import dependency_entry

CHART = ["apiVersion: v2", "name: redis-ha", "version: 2.0", "dependencies:", "  - name: common",
         "    repository: oci://x", "  - alias: cache", "    name: redis-ha  # the subchart", "annotations:",
         "  name: redis-ha"]


def test_the_charts_own_name_is_not_the_dependencys_entry() -> None:
    assert dependency_entry(CHART, "redis-ha", ("name",)) == (8, 11)
    assert dependency_entry(["name: redis-ha", "version: 2.0"], "redis-ha", ("name",)) is None


def test_an_alias_is_found_where_asked_and_list_items_may_start_the_line() -> None:
    assert dependency_entry(CHART, "cache", ("name", "alias")) == (7, 12)
    assert dependency_entry(["dependencies:", "- name: redis-ha", "  version: 4.35.10"], "redis-ha", ("name",)) == (2, 9)
    assert dependency_entry(CHART, "cache", ("name",)) is None
