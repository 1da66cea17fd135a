"""FW104 pdb-selects-nothing."""

from pathlib import Path

import pytest

from tests.helpers import lint, write

PDB = """\
apiVersion: {version}
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
{selector}"""

DEPLOYMENT = """\
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {namespace}
spec:
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web, tier: front}}
"""


def pdb(selector: str, version: str = "policy/v1") -> str:
    return PDB.format(version=version, selector=selector)


def deployment(namespace: str = "default") -> str:
    return DEPLOYMENT.format(namespace=namespace)


def run(tmp_path: Path, text: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "m.yaml", text)
    result = lint(["--select", "FW104", "--no-context", str(path)])
    assert result.code == (1 if result.hits() else 0), result.stderr
    return result.hits()


SELECTOR_LINE = [("m.yaml", 7, 3, "FW104")]


@pytest.mark.parametrize("version", ["policy/v1", "policy/v1beta1"])
@pytest.mark.parametrize(
    ("selector", "hits"),
    [
        ("  selector:\n    matchLabels: {app: web}\n", []),
        ("  selector:\n    matchLabels: {app: api}\n", SELECTOR_LINE),
        ("  selector:\n    matchExpressions: [{key: tier, operator: In, values: [front, back]}]\n", []),
        ("  selector:\n    matchExpressions: [{key: tier, operator: NotIn, values: [front]}]\n", SELECTOR_LINE),
        ("  selector:\n    matchExpressions: [{key: app, operator: Exists}]\n", []),
        ("  selector:\n    matchExpressions: [{key: app, operator: DoesNotExist}]\n", SELECTOR_LINE),
    ],
)
def test_selector_against_the_namespace_workloads(tmp_path: Path, version: str, selector: str, hits: list[object]) -> None:
    assert run(tmp_path, pdb(selector, version) + deployment()) == hits


def test_null_selector_selects_nothing_in_both_versions(tmp_path: Path) -> None:
    for version in ("policy/v1", "policy/v1beta1"):
        assert run(tmp_path, pdb("  selector:\n", version) + deployment()) == SELECTOR_LINE
        assert run(tmp_path, pdb("", version)) == [("m.yaml", 5, 1, "FW104")]  # missing: points at spec


def test_empty_selector_means_all_pods_in_v1_and_none_in_v1beta1(tmp_path: Path) -> None:
    assert run(tmp_path, pdb("  selector: {}\n") + deployment()) == []
    assert run(tmp_path, pdb("  selector: {}\n")) == []
    assert run(tmp_path, pdb("  selector: {}\n", "policy/v1beta1") + deployment()) == SELECTOR_LINE
    assert run(tmp_path, pdb("  selector:\n    matchLabels: {}\n", "policy/v1beta1")) == SELECTOR_LINE


def test_only_workloads_of_the_same_namespace_count(tmp_path: Path) -> None:
    selector = "  selector:\n    matchLabels: {app: web}\n"
    assert run(tmp_path, pdb(selector) + deployment("shop")) == []  # nothing in `default`: not judged
    text = pdb(selector) + deployment("shop") + deployment("default").replace("app: web", "app: api")
    assert run(tmp_path, text) == SELECTOR_LINE
    text = pdb(selector).replace("  name: web\n", "  name: web\n  namespace: shop\n") + deployment("shop")
    assert run(tmp_path, text) == []


def test_invalid_selector(tmp_path: Path) -> None:
    text = pdb("  selector:\n    matchExpressions: [{key: app, operator: Equals, values: [web]}]\n")
    # reported whatever the set holds; set rules locate down to the selector itself
    assert run(tmp_path, text) == SELECTOR_LINE


def test_other_kinds_are_not_judged(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {selector: null}\n"
    assert run(tmp_path, text + deployment()) == []
