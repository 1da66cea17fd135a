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


# --- pod sources of real projects (tests/fixtures/rules/pod_sources) -----------------------

POD_SOURCES = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "pod_sources"


def fixture_findings(tmp_path: Path, name: str) -> tuple[int, list[tuple[int, str, str]]]:
    """Exit code and (line, severity, message) of FW104 for one fixture file, linted alone."""
    write(tmp_path, name, (POD_SOURCES / name).read_text(encoding="utf-8"))
    result = lint(["--select", "FW104", "--no-context", name], cwd=tmp_path)
    return result.code, sorted((f["line"], f["severity"], f["message"]) for f in result.findings)


def test_leader_worker_set_worker_pods_are_protected(tmp_path: Path) -> None:
    assert fixture_findings(tmp_path, "lws-vllm.yaml") == (0, [])
    text = (POD_SOURCES / "lws-vllm.yaml").read_text(encoding="utf-8").replace("role: worker\n---", "role: workers\n---")
    write(tmp_path, "typo.yaml", text)
    result = lint(["--select", "FW104", "--no-context", "typo.yaml"], cwd=tmp_path)
    assert [(f["line"], f["severity"], f["message"]) for f in result.findings] == [
        (59, "warning", "selector leaderworkerset.sigs.k8s.io/name=vllm,role=workers matches no pod template "
         "in namespace inference (2 pod templates checked)"),
    ]


def test_budget_on_operator_labels_is_information_only(tmp_path: Path) -> None:
    assert fixture_findings(tmp_path, "cloudnative-pg.yaml") == (
        0,
        [(30, "info", "selector cnpg.io/cluster=pg,cnpg.io/instanceRole=replica matches no pod template in namespace "
          "shop (1 pod template checked); Cluster/shop/pg (cloudnative-pg.yaml:6) in this namespace has an operator "
          "that may make the pods with labels of its own, which no manifest shows")],
    )


def test_strimzi_component_pod_template_labels_are_protected(tmp_path: Path) -> None:
    assert fixture_findings(tmp_path, "strimzi.yaml") == (0, [])


def test_a_prometheus_without_pod_metadata_makes_a_miss_information_only(tmp_path: Path) -> None:
    code, found = fixture_findings(tmp_path, "prometheus-plain.yaml")
    assert code == 0
    assert [(f[0], f[1]) for f in found] == [(33, "info")]
    assert "Prometheus/monitoring/prometheus (prometheus-plain.yaml:7) in this namespace" in found[0][2]


def test_placeholder_selectors_are_not_judged(tmp_path: Path) -> None:
    assert fixture_findings(tmp_path, "placeholders.yaml") == (0, [])  # matchLabels {app: CHANGEME}
