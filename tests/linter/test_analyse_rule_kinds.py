"""analyse reads each object rule's KINDS once per settings (their memo), not once per file and kind met.

An object rule without KINDS on its registry line and in its module (a rule of every kind) made
each lookup go through the registry's __getattr__ and raise AttributeError: on the bench corpus
(1,967 files) ~19,000 times. The findings stay those of the rules of each kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter.analyse import analyse
from fieldwarden.policies import registry
from fieldwarden.policies.config import Settings

TEXT = b"""\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: other}}, spec: {containers: [{name: web, image: web}]}}
"""


def test_kinds_are_read_once_per_rule_across_files(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    original = registry.Rule.__getattr__

    def counting(self: registry.Rule, attribute: str) -> Any:
        if attribute == "KINDS":
            asked.append(self.CODE)
        return original(self, attribute)

    monkeypatch.setattr(registry.Rule, "__getattr__", counting)
    settings = Settings()
    results = [analyse(f"f{n}.yaml", TEXT, "", settings, True, Path(f"f{n}.yaml")) for n in range(40)]
    assert len(asked) == len(set(asked))  # (rules whose line holds KINDS are not asked at all)
    for result in results:  # every file: the Deployment's findings, by the rules of its kind
        assert [(f.line, f.code) for f in result.findings] == [(10, "FW102"), (9, "FW201")]


def test_each_settings_keeps_its_own_rules_for_each_kind() -> None:
    """The rules for each kind are made once per Settings (their memo) and kept across files; two
    configurations in one run (two folders) each lint with their own selection."""
    everything, without = Settings(), Settings({"ignore": ["FW102"]})
    for _ in range(3):
        assert [f.code for f in analyse("a.yaml", TEXT, "", everything, True, Path("a.yaml")).findings] == ["FW102", "FW201"]
        assert [f.code for f in analyse("b.yaml", TEXT, "", without, True, Path("b.yaml")).findings] == ["FW201"]
    assert analyse("c.yaml", TEXT, "", everything, False, Path("c.yaml")).findings == []  # context: no object rules
    assert [f.code for f in analyse("d.yaml", TEXT, "", everything, True, Path("d.yaml")).findings] == ["FW102", "FW201"]
