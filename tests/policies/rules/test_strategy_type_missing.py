"""FW201 strategy-type-missing."""

from pathlib import Path

from tests.helpers import WEB_DEPLOYMENT, lint, write

DEPLOYMENT = WEB_DEPLOYMENT  # no strategy: FW201 on `spec:`, line 5


def test_deployment_without_strategy_points_at_spec(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", DEPLOYMENT)
    run = lint(["--select", "FW201", "--no-context", str(path)])
    assert run.hits() == [("web.yaml", 5, 1, "FW201")]
    [finding] = run.findings
    assert (finding["severity"], finding["message"]) == ("info", "no explicit spec.strategy.type; the server defaults it")


def test_information_never_fails_a_default_run(tmp_path: Path) -> None:
    # The server's default strategy is stable: shown, but exit 0 unless asked for.
    path = write(tmp_path, "web.yaml", DEPLOYMENT)
    assert lint(["--select", "FW201", "--no-context", str(path)]).code == 0
    assert lint(["--select", "FW201", "--no-context", "--fail-on", "info", str(path)]).code == 1
    config = write(tmp_path, "fw.yaml", "rules:\n  FW201: {severity: warning}\n")
    raised = lint(["--select", "FW201", "--no-context", "--config", str(config), str(path)])
    assert (raised.code, raised.findings[0]["severity"]) == (1, "warning")


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


DAEMONSET = DEPLOYMENT.replace("Deployment", "DaemonSet")


def test_daemonset_update_strategy_without_type_points_at_update_strategy(tmp_path: Path) -> None:
    text = DAEMONSET.replace("spec:\n  selector", "spec:\n  updateStrategy:\n    rollingUpdate: {maxUnavailable: 2}\n  selector")
    path = write(tmp_path, "ds.yaml", text)
    run = lint(["--select", "FW201", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [("ds.yaml", 6, 3, "FW201")])


def test_daemonset_with_type_passes(tmp_path: Path) -> None:
    for kind_type in ("RollingUpdate", "OnDelete"):
        text = DAEMONSET.replace("spec:\n  selector", f"spec:\n  updateStrategy:\n    type: {kind_type}\n  selector")
        path = write(tmp_path, "ds.yaml", text)
        assert lint(["--select", "FW201", "--no-context", str(path)]).hits() == []


def test_daemonset_strategy_field_does_not_count(tmp_path: Path) -> None:
    # `strategy` is the Deployment's field; a DaemonSet's is `updateStrategy`
    text = DAEMONSET.replace("spec:\n  selector", "spec:\n  strategy:\n    type: RollingUpdate\n  selector")
    path = write(tmp_path, "ds.yaml", text)
    assert lint(["--select", "FW201", "--no-context", str(path)]).hits() == [("ds.yaml", 5, 1, "FW201")]


def test_legacy_extensions_daemonset_is_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "ds.yaml", DAEMONSET.replace("apps/v1", "extensions/v1beta1"))
    assert lint(["--select", "FW201", "--no-context", str(path)]).hits() == [("ds.yaml", 5, 1, "FW201")]
