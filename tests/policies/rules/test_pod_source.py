"""pod_source looks an operator's label paths up from spec's keys: the same label sets as walking
each path from the object's root, on the real operators' objects of tests/fixtures/rules/pod_sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml

from fieldwarden.policies.rules._workload_selectors import OPERATOR_LABEL_PATHS, pod_source, values_at

POD_SOURCES = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "pod_sources"


def _walked(data: Mapping[str, Any]) -> list[Any]:
    """The label sets as found before: every path walked from the root."""
    return [found for path in OPERATOR_LABEL_PATHS for found in values_at(data, path) if isinstance(found, Mapping)]


def test_every_operator_label_path_starts_at_a_key_of_spec() -> None:
    assert all(path[0] == "spec" and path[1] != "*" for path in OPERATOR_LABEL_PATHS)


def test_operator_objects_give_the_label_sets_walking_from_the_root_gives() -> None:
    operators = 0
    for path in sorted(POD_SOURCES.glob("*.yaml")):
        for data in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(data, dict) or "." not in str(data.get("apiVersion", "")).split("/")[0]:
                continue
            source = pod_source(data)
            if source is not None and not source.visible:
                operators += 1
                assert source.labels == _walked(data), (path.name, data.get("kind"))
    assert operators >= 5


def test_a_spec_that_is_not_a_map_has_no_operator_labels() -> None:
    for spec in (None, [], "x", {"template": "x"}, {"other": {"metadata": {"labels": {"a": "b"}}}}):
        data = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": spec}
        assert pod_source(data) is None and _walked(data) == []
