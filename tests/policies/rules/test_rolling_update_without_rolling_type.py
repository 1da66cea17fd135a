"""FW202 rolling-update-without-rolling-type."""

from pathlib import Path

from tests.helpers import lint, write

HEAD = """\
apiVersion: {api}
kind: {kind}
metadata:
  name: web
spec:
  {count}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers: [{{name: web, image: nginx}}]
"""  # the strategy block starts on line 14


def manifest(kind: str, block: str, api: str = "apps/v1") -> str:
    count = "minReadySeconds: 0" if kind == "DaemonSet" else "replicas: 3"
    body = "".join("  " + line + "\n" for line in block.strip("\n").splitlines())
    return HEAD.format(api=api, kind=kind, count=count) + body


def hits(tmp_path: Path, text: str) -> tuple[int, list[tuple[str, int, int, str]]]:
    path = write(tmp_path, "web.yaml", text)
    run = lint(["--select", "FW202", "--no-context", str(path)])
    return run.code, run.hits()


RECREATE = """
strategy:
  type: Recreate
  rollingUpdate:
    maxSurge: 1
"""


def test_deployment_recreate_with_rolling_update_points_at_rolling_update(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("Deployment", RECREATE)) == (1, [("web.yaml", 16, 5, "FW202")])


def test_empty_rolling_update_counts_as_present(tmp_path: Path) -> None:
    text = manifest("Deployment", "strategy:\n  type: Recreate\n  rollingUpdate: {}")
    assert hits(tmp_path, text) == (1, [("web.yaml", 16, 5, "FW202")])


def test_null_rolling_update_clears_the_field_and_passes(tmp_path: Path) -> None:
    text = manifest("Deployment", "strategy:\n  type: Recreate\n  rollingUpdate: null")
    assert hits(tmp_path, text) == (0, [])
    text = manifest("Deployment", "strategy:\n  type: Recreate\n  rollingUpdate: ~")
    assert hits(tmp_path, text) == (0, [])


def test_flow_style_points_at_the_key(tmp_path: Path) -> None:
    text = manifest("Deployment", "strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}")
    assert hits(tmp_path, text) == (1, [("web.yaml", 14, 30, "FW202")])


def test_rolling_types_pass(tmp_path: Path) -> None:
    rolling = "strategy:\n  type: RollingUpdate\n  rollingUpdate:\n    maxSurge: 1"
    assert hits(tmp_path, manifest("Deployment", rolling)) == (0, [])
    untyped = "strategy:\n  rollingUpdate:\n    maxSurge: 1"  # defaults to RollingUpdate (FW201's finding)
    assert hits(tmp_path, manifest("Deployment", untyped)) == (0, [])
    assert hits(tmp_path, manifest("Deployment", "strategy:\n  type: Recreate")) == (0, [])


def test_statefulset_on_delete_with_rolling_update(tmp_path: Path) -> None:
    block = "updateStrategy:\n  type: OnDelete\n  rollingUpdate:\n    partition: 0"
    assert hits(tmp_path, manifest("StatefulSet", block)) == (1, [("web.yaml", 16, 5, "FW202")])


def test_daemonset_on_delete_with_rolling_update_is_reported_though_accepted(tmp_path: Path) -> None:
    block = "updateStrategy:\n  type: OnDelete\n  rollingUpdate:\n    maxUnavailable: 2"
    assert hits(tmp_path, manifest("DaemonSet", block)) == (1, [("web.yaml", 16, 5, "FW202")])


def test_statefulset_recreate_with_rolling_update(tmp_path: Path) -> None:
    # apps/v1 (Kubernetes 1.37) has a StatefulSet `Recreate` type; rollingUpdate belongs
    # to RollingUpdate only. Typical: a server-defaulted block left behind by a type change.
    block = "updateStrategy:\n  type: Recreate\n  rollingUpdate:\n    partition: 0\n    maxUnavailable: 1"
    path = write(tmp_path, "web.yaml", manifest("StatefulSet", block))
    run = lint(["--select", "FW202", "--no-context", str(path)])
    assert run.hits() == [("web.yaml", 16, 5, "FW202")]
    assert run.findings[0]["message"] == (
        "spec.updateStrategy.rollingUpdate is set but spec.updateStrategy.type is Recreate; only RollingUpdate uses it"
    )
    assert hits(tmp_path, manifest("StatefulSet", "updateStrategy:\n  type: Recreate")) == (0, [])


def test_recreate_is_no_daemonset_type_and_on_delete_no_deployment_type(tmp_path: Path) -> None:
    # FW204 reports those types, not FW202.
    block = "updateStrategy:\n  type: Recreate\n  rollingUpdate:\n    maxUnavailable: 1"
    assert hits(tmp_path, manifest("DaemonSet", block)) == (0, [])
    block = "strategy:\n  type: OnDelete\n  rollingUpdate:\n    maxSurge: 1"
    assert hits(tmp_path, manifest("Deployment", block)) == (0, [])


def test_legacy_extensions_deployment_is_checked(tmp_path: Path) -> None:
    text = manifest("Deployment", RECREATE, api="extensions/v1beta1")
    assert hits(tmp_path, text) == (1, [("web.yaml", 16, 5, "FW202")])


def test_several_documents_each_located(tmp_path: Path) -> None:
    text = manifest("Deployment", RECREATE) + "---\n" + manifest(
        "DaemonSet", "updateStrategy:\n  type: OnDelete\n  rollingUpdate: {maxSurge: 0}"
    )
    assert hits(tmp_path, text) == (1, [("web.yaml", 16, 5, "FW202"), ("web.yaml", 34, 5, "FW202")])


def test_malformed_input_never_crashes(tmp_path: Path) -> None:
    for block in ("strategy: Recreate", "strategy: [Recreate]", "strategy:\n  type: [Recreate]\n  rollingUpdate: 1", "strategy: null"):
        assert hits(tmp_path, manifest("Deployment", block)) == (0, [])
    assert hits(tmp_path, manifest("ReplicaSet", RECREATE)) == (0, [])
