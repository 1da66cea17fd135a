"""Object rules that declare KINDS report on no other kind: the linter skips them for other kinds.

linter/analyse.py runs a rule with a `KINDS` constant only on objects whose (group, kind) is in it
(issue 23: most objects of a repository are ConfigMaps and Services, which the workload rules
never judge). Here every object of the test fixtures, and each of them relabelled as every other
kind that some rule names, is checked by every such rule directly: a finding on a kind outside
the rule's KINDS would be a finding the linter no longer reports.
"""

from __future__ import annotations

import copy
from typing import Any

from fieldwarden.linter.loader import decode, load
from fieldwarden.policies.config import Settings
from fieldwarden.policies.kube import group_kind, is_kubernetes_object
from fieldwarden.policies.registry import RULES
from fieldwarden.policies.rule import OBJECT
from tests.helpers import FIXTURES

KINDED = {code: rule for code, rule in RULES.items() if rule.SCOPE == OBJECT and hasattr(rule, "KINDS")}
OTHER_KINDS = [("", "Pod"), ("", "ConfigMap"), ("apps", "ReplicaSet"), ("", "ReplicationController")]


SAMPLES = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 5}}
  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: db}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: other}}, spec: {containers: [{name: web, image: web}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}
  template: {metadata: {labels: {app: api}}, spec: {containers: [{name: api, image: api}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy: {type: Sometimes}
  template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: agent}]}}
"""


def _fixture_objects() -> list[dict[str, Any]]:
    objects = [document.data for document in load(SAMPLES).documents]  # (no fixture holds a FW102, FW202, FW204 or FW205)
    for path in sorted(FIXTURES.rglob("*.y*ml")):
        text, _ = decode(path.read_bytes())
        if text is None or "{{" in text:
            continue
        for document in load(text).documents:
            data = document.data
            items = data.get("items") if isinstance(data, dict) and isinstance(data.get("items"), list) else [data]
            objects.extend(item for item in items if is_kubernetes_object(item))
    return objects


def _as(obj: dict[str, Any], group: str, kind: str, version: str = "v1") -> dict[str, Any]:
    """A copy of the object relabelled as the kind (core kinds are always v1)."""
    changed = copy.deepcopy(obj)
    changed["apiVersion"] = f"{group}/{version}" if group else "v1"
    changed["kind"] = kind
    return changed


def test_the_workload_rules_declare_their_kinds() -> None:
    assert set(KINDED) == {"FW101", "FW102", "FW201", "FW202", "FW203", "FW204", "FW205"}
    assert all(("", "ConfigMap") not in rule.KINDS for rule in KINDED.values())


def test_a_rule_reports_only_on_the_kinds_it_declares() -> None:
    settings = Settings()
    objects = _fixture_objects()
    kinds = sorted({kind for rule in KINDED.values() for kind in rule.KINDS} | set(OTHER_KINDS))
    for code, rule in KINDED.items():
        conf = settings.rule_conf(code)
        reported = 0
        for obj in objects:
            if not list(rule.check(obj, conf)):
                continue
            reported += 1
            assert group_kind(obj) in rule.KINDS, (code, obj.get("kind"))
            for group, kind in kinds:
                if list(rule.check(_as(obj, group, kind), conf)):
                    assert (group, kind) in rule.KINDS, (code, obj["kind"], "as", kind)
        assert reported, code  # each rule has findings to relabel
