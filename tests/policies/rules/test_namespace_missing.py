"""FW508 namespace-missing: once, on the first object, with the API server's message."""

from __future__ import annotations

from fieldwarden.policies.rules import namespace_missing as rule
from tests.policies.rules.live_samples import NAMESPACE_NOT_FOUND, case, deployment


def test_reported_on_the_namespace_with_the_count_and_the_servers_message() -> None:
    found = list(rule.check(case(deployment(), refusal=NAMESPACE_NOT_FOUND, missing_namespace=3), {}))
    assert [v.path for v in found] == [("metadata", "namespace")]
    assert found[0].message == ('the namespace does not exist in the cluster (namespaces "nope" not found): 3 objects '
                                'of these manifests go there, and the apply fails for each')
    assert not list(rule.check(case(deployment()), {}))  # not the first object: nothing
