"""FW201 strategy-type-missing."""

from pathlib import Path

from tests.helpers import lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""


def test_deployment_without_strategy_points_at_spec(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", DEPLOYMENT)
    run = lint(["--select", "FW201", "--no-context", str(path)])
    assert run.code == 1
    assert run.hits() == [("web.yaml", 5, 1, "FW201")]


def test_strategy_without_type_points_at_strategy(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", DEPLOYMENT.replace("spec:\n  selector", "spec:\n  strategy:\n    rollingUpdate: {maxSurge: 1}\n  selector"))
    run = lint(["--select", "FW201", "--no-context", str(path)])
    assert run.hits() == [("web.yaml", 6, 3, "FW201")]


def test_explicit_type_passes(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", DEPLOYMENT.replace("spec:\n  selector", "spec:\n  strategy:\n    type: Recreate\n  selector"))
    run = lint(["--select", "FW201", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])


def test_statefulset_and_daemonset_need_update_strategy(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("Deployment", "StatefulSet") + "---\n" + DEPLOYMENT.replace("Deployment", "DaemonSet")
    path = write(tmp_path, "sets.yaml", text)
    run = lint(["--select", "FW201", "--no-context", str(path)])
    assert run.hits() == [("sets.yaml", 5, 1, "FW201"), ("sets.yaml", 18, 1, "FW201")]
    fixed = text.replace("spec:\n  selector", "spec:\n  updateStrategy: {type: OnDelete}\n  selector")
    write(tmp_path, "sets.yaml", fixed)
    assert lint(["--select", "FW201", "--no-context", str(path)]).hits() == []


def test_other_kinds_are_not_judged(tmp_path: Path) -> None:
    path = write(tmp_path, "job.yaml", DEPLOYMENT.replace("apps/v1", "batch/v1").replace("Deployment", "Job"))
    assert lint(["--select", "FW201", "--no-context", str(path)]).hits() == []
