"""FW302 multiple-hpas."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import git_repo, lint, write


def hpa(name: str, target: str = "web", ref_api: str = "apps/v1", namespace: str = "") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return f"""\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}{ns}
spec:
  maxReplicas: 10
  scaleTargetRef:
    apiVersion: {ref_api}
    kind: Deployment
    name: {target}
"""


KEDA = """\
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: web-keda
spec:
  scaleTargetRef: {name: web}
"""


def run_one(tmp_path: Path, text: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "all.yaml", text)
    return lint(["--select", "FW302", "--no-context", str(path)]).hits()


def test_two_hpas_on_one_deployment_both_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", hpa("cpu") + "---\n" + hpa("memory"))
    run = lint(["--select", "FW302", "--no-context", str(path)])
    assert run.code == 1
    assert run.hits() == [("all.yaml", 7, 3, "FW302"), ("all.yaml", 18, 3, "FW302")]
    first, second = sorted(run.findings, key=lambda f: f["line"])
    assert "HorizontalPodAutoscaler/default/memory (" in first["message"]
    assert "HorizontalPodAutoscaler/default/cpu (" in second["message"]
    assert first["field"] == "spec.scaleTargetRef"


def test_hpa_and_scaled_object_with_default_ref(tmp_path: Path) -> None:
    assert run_one(tmp_path, hpa("web") + "---\n" + KEDA) == [("all.yaml", 7, 3, "FW302"), ("all.yaml", 17, 3, "FW302")]


def test_legacy_group_is_the_same_workload(tmp_path: Path) -> None:
    text = hpa("a") + "---\n" + hpa("b", ref_api="extensions/v1beta1")
    assert run_one(tmp_path, text) == [("all.yaml", 7, 3, "FW302"), ("all.yaml", 18, 3, "FW302")]


def test_three_autoscalers_name_the_other_two(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", hpa("a") + "---\n" + hpa("b") + "---\n" + KEDA)
    run = lint(["--select", "FW302", "--no-context", str(path)])
    assert len(run.hits()) == 3
    first = min(run.findings, key=lambda f: f["line"])
    assert "/b (" in first["message"] and "/web-keda (" in first["message"] and "/a (" not in first["message"]


def test_only_targets_are_reported_context_counts(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    write(root, "hpa-cpu.yaml", hpa("cpu"))
    write(root, "hpa-memory.yaml", hpa("memory"))  # another file of the same apply unit (folder)
    run = lint(["--select", "FW302", "hpa-cpu.yaml"], cwd=root)
    # the other HPA's conflict is this file's doing too: reported there as well (issue 22, item 8)
    assert run.hits() == [("hpa-cpu.yaml", 7, 3, "FW302"), ("hpa-memory.yaml", 7, 3, "FW302")]
    assert "hpa-memory.yaml:4" in run.findings[0]["message"]


def test_distinct_workloads_and_namespaces_pass(tmp_path: Path) -> None:
    assert run_one(tmp_path, hpa("a") + "---\n" + hpa("b", target="api")) == []
    assert run_one(tmp_path, hpa("a") + "---\n" + hpa("b", namespace="prod")) == []
    assert run_one(tmp_path, hpa("a") + "---\n" + hpa("b", ref_api="argoproj.io/v1alpha1")) == []


def test_unset_namespace_is_default(tmp_path: Path) -> None:
    text = hpa("a") + "---\n" + hpa("b", namespace="default")
    assert run_one(tmp_path, text) == [("all.yaml", 7, 3, "FW302"), ("all.yaml", 19, 3, "FW302")]


def test_one_autoscaler_defined_twice_is_not_two(tmp_path: Path) -> None:
    # The duplicate definition is FW305's finding, not two autoscalers.
    assert run_one(tmp_path, hpa("a") + "---\n" + hpa("a")) == []


def test_single_autoscaler_passes(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", hpa("a"))
    run = lint(["--select", "FW302", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])
