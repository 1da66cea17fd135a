"""FW204 strategy-value-invalid."""

from pathlib import Path

import pytest

from tests.helpers import lint, write

HEAD = """\
apiVersion: apps/v1
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


def manifest(kind: str, block: str) -> str:
    count = "minReadySeconds: 0" if kind == "DaemonSet" else "replicas: 3"
    body = "".join("  " + line + "\n" for line in block.strip("\n").splitlines())
    return HEAD.format(kind=kind, count=count) + body


def rolling(kind: str, *items: str, kind_type: str = "RollingUpdate") -> str:
    """rollingUpdate with `items` one per line, from line 17 on, column 7."""
    field = "strategy" if kind == "Deployment" else "updateStrategy"
    lines = "".join(f"\n    {item}" for item in items)
    return manifest(kind, f"{field}:\n  type: {kind_type}\n  rollingUpdate:{lines}")


def hits(tmp_path: Path, text: str) -> tuple[int, list[tuple[str, int, int, str]]]:
    path = write(tmp_path, "web.yaml", text)
    run = lint(["--select", "FW204", "--no-context", str(path)])
    return run.code, run.hits()


# --- types ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "kind_type"),
    [
        ("Deployment", "Rolling"),
        ("Deployment", "recreate"),
        ("Deployment", "rollingupdate"),
        ("Deployment", "OnDelete"),
        ("StatefulSet", "ondelete"),
        ("StatefulSet", "recreate"),
        ("DaemonSet", "Recreate"),
        ("DaemonSet", "1"),
        ("DaemonSet", "[RollingUpdate]"),
    ],
)
def test_unknown_type_points_at_type(tmp_path: Path, kind: str, kind_type: str) -> None:
    field = "strategy" if kind == "Deployment" else "updateStrategy"
    text = manifest(kind, f"{field}:\n  type: {kind_type}")
    assert hits(tmp_path, text) == (1, [("web.yaml", 15, 5, "FW204")])


@pytest.mark.parametrize(
    ("kind", "kind_type"),
    [("Deployment", "RollingUpdate"), ("Deployment", "Recreate"), ("StatefulSet", "OnDelete"),
     ("DaemonSet", "RollingUpdate"), ("DaemonSet", '""'), ("StatefulSet", "null")],
)
def test_known_empty_or_null_type_passes(tmp_path: Path, kind: str, kind_type: str) -> None:
    field = "strategy" if kind == "Deployment" else "updateStrategy"
    assert hits(tmp_path, manifest(kind, f"{field}:\n  type: {kind_type}")) == (0, [])


def findings(tmp_path: Path, text: str) -> tuple[int, list[tuple[int, int, str, str]]]:
    path = write(tmp_path, "web.yaml", text)
    run = lint(["--select", "FW204", "--no-context", str(path)])
    return run.code, [(f["line"], f["column"], f["severity"], f["message"]) for f in run.findings]


def test_statefulset_types_are_those_of_apps_v1(tmp_path: Path) -> None:
    assert findings(tmp_path, manifest("StatefulSet", "updateStrategy:\n  type: Rolling")) == (
        1, [(15, 5, "error", 'updateStrategy.type "Rolling" is not a strategy type (RollingUpdate, OnDelete or Recreate)')]
    )
    assert findings(tmp_path, manifest("DaemonSet", "updateStrategy:\n  type: Recreate")) == (
        1, [(15, 5, "error", 'updateStrategy.type "Recreate" is not a strategy type (RollingUpdate or OnDelete)')]
    )


def test_statefulset_recreate_needs_its_alpha_feature_gate(tmp_path: Path) -> None:
    # A warning, not an error: valid where StatefulSetRecreateStrategy is on.
    message = (
        "updateStrategy.type Recreate needs the StatefulSetRecreateStrategy feature gate (alpha in Kubernetes 1.37, "
        "off by default); without it the API server rejects it (must be 'RollingUpdate' or 'OnDelete')"
    )
    assert findings(tmp_path, manifest("StatefulSet", "updateStrategy:\n  type: Recreate")) == (1, [(15, 5, "warning", message)])
    path = write(tmp_path, "web.yaml", manifest("StatefulSet", "updateStrategy:\n  type: Recreate"))
    assert lint(["--select", "FW204", "--no-context", "--fail-on", "error", str(path)]).code == 0
    # its rollingUpdate is FW202's, whatever it holds
    block = "updateStrategy:\n  type: Recreate\n  rollingUpdate:\n    maxUnavailable: 0"
    assert findings(tmp_path, manifest("StatefulSet", block)) == (1, [(15, 5, "warning", message)])


def test_strategy_and_rolling_update_must_be_mappings(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("Deployment", "strategy: RollingUpdate")) == (1, [("web.yaml", 14, 3, "FW204")])
    text = manifest("DaemonSet", "updateStrategy:\n  type: RollingUpdate\n  rollingUpdate: [1, 0]")
    assert hits(tmp_path, text) == (1, [("web.yaml", 16, 5, "FW204")])
    assert hits(tmp_path, manifest("Deployment", "strategy: null")) == (0, [])


# --- Deployment / DaemonSet limits -----------------------------------------------------

BAD_INT_OR_PERCENT = ['"25"', '"0"', "-1", '"-1"', '"-5%"', "abc", "1.5", "1.0", "true", "yes", "25.5%", '" 25%"', "3000000000", "[1]"]
GOOD_INT_OR_PERCENT = ["0", "1", "25%", '"25%"', "0%", "100%"]


@pytest.mark.parametrize("kind", ["Deployment", "DaemonSet"])
@pytest.mark.parametrize("value", BAD_INT_OR_PERCENT)
def test_malformed_max_surge_and_max_unavailable(tmp_path: Path, kind: str, value: str) -> None:
    text = rolling(kind, f"maxUnavailable: {value}")
    assert hits(tmp_path, text) == (1, [("web.yaml", 17, 7, "FW204")])
    safe = "maxUnavailable: 0" if kind == "DaemonSet" else "maxUnavailable: 1"  # DaemonSets use one of the two
    text = rolling(kind, safe, f"maxSurge: {value}")
    assert hits(tmp_path, text) == (1, [("web.yaml", 18, 7, "FW204")])


@pytest.mark.parametrize("value", GOOD_INT_OR_PERCENT)
def test_well_formed_values_pass(tmp_path: Path, value: str) -> None:
    assert hits(tmp_path, rolling("Deployment", f"maxUnavailable: {value}", f"maxSurge: {value}")) == (0, [])
    assert hits(tmp_path, rolling("DaemonSet", f"maxUnavailable: {value}", "maxSurge: 0")) == (0, [])


def test_max_unavailable_over_100_percent(tmp_path: Path) -> None:
    assert hits(tmp_path, rolling("Deployment", "maxUnavailable: 101%")) == (1, [("web.yaml", 17, 7, "FW204")])
    assert hits(tmp_path, rolling("DaemonSet", "maxUnavailable: 150%")) == (1, [("web.yaml", 17, 7, "FW204")])
    # an integer above the pod count is not a percent: the API accepts it
    assert hits(tmp_path, rolling("Deployment", "maxUnavailable: 500")) == (0, [])


def test_max_surge_over_100_percent_only_matters_on_daemonsets(tmp_path: Path) -> None:
    assert hits(tmp_path, rolling("Deployment", "maxSurge: 200%")) == (0, [])
    text = rolling("DaemonSet", "maxUnavailable: 0", "maxSurge: 200%")
    assert hits(tmp_path, text) == (1, [("web.yaml", 18, 7, "FW204")])


def test_daemonset_surge_needs_max_unavailable_zero(tmp_path: Path) -> None:
    # maxUnavailable defaults to 1 on a DaemonSet: maxSurge alone is rejected
    assert hits(tmp_path, rolling("DaemonSet", "maxSurge: 1")) == (1, [("web.yaml", 17, 7, "FW204")])
    assert hits(tmp_path, rolling("DaemonSet", "maxSurge: 25%", "maxUnavailable: 1")) == (1, [("web.yaml", 17, 7, "FW204")])
    assert hits(tmp_path, rolling("DaemonSet", "maxUnavailable: 10%", "maxSurge: 1")) == (1, [("web.yaml", 18, 7, "FW204")])
    assert hits(tmp_path, rolling("DaemonSet", "maxSurge: 1", "maxUnavailable: 0%")) == (0, [])
    assert hits(tmp_path, rolling("DaemonSet", "maxSurge: 0%")) == (0, [])
    # a Deployment may use both
    assert hits(tmp_path, rolling("Deployment", "maxSurge: 1", "maxUnavailable: 1")) == (0, [])


# --- StatefulSet -----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", '"1"', "1.5", "true", "abc", "3000000000", "{}"])
def test_statefulset_partition_must_be_a_non_negative_integer(tmp_path: Path, value: str) -> None:
    assert hits(tmp_path, rolling("StatefulSet", f"partition: {value}")) == (1, [("web.yaml", 17, 7, "FW204")])


@pytest.mark.parametrize("value", ["0", "2", "null", "7"])
def test_statefulset_partition_valid(tmp_path: Path, value: str) -> None:
    assert hits(tmp_path, rolling("StatefulSet", f"partition: {value}")) == (0, [])


@pytest.mark.parametrize("value", ["0", "0%", '"0%"', "-1", "abc", '"2"', "101%", "1.0"])
def test_statefulset_max_unavailable_below_one_or_malformed(tmp_path: Path, value: str) -> None:
    text = rolling("StatefulSet", "partition: 0", f"maxUnavailable: {value}")
    assert hits(tmp_path, text) == (1, [("web.yaml", 18, 7, "FW204")])


@pytest.mark.parametrize("value", ["1", "3", "1%", "50%", "100%"])
def test_statefulset_max_unavailable_valid(tmp_path: Path, value: str) -> None:
    assert hits(tmp_path, rolling("StatefulSet", f"maxUnavailable: {value}")) == (0, [])


# --- interplay --------------------------------------------------------------------------


def test_rolling_update_beside_recreate_or_on_delete_is_fw202s(tmp_path: Path) -> None:
    assert hits(tmp_path, rolling("Deployment", "maxSurge: abc", kind_type="Recreate")) == (0, [])
    assert hits(tmp_path, rolling("StatefulSet", "partition: -1", kind_type="OnDelete")) == (0, [])


def test_every_offending_field_is_reported(tmp_path: Path) -> None:
    text = rolling("Deployment", 'maxSurge: "1"', "maxUnavailable: 150%", kind_type="Rolling")
    assert hits(tmp_path, text) == (
        1,
        [("web.yaml", 15, 5, "FW204"), ("web.yaml", 17, 7, "FW204"), ("web.yaml", 18, 7, "FW204")],
    )


def test_absent_rolling_update_defaults_pass_and_zero_zero_is_fw203s(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("Deployment", "strategy:\n  type: RollingUpdate")) == (0, [])
    assert hits(tmp_path, rolling("Deployment", "maxSurge: 0", "maxUnavailable: 0")) == (0, [])


def test_other_kinds_are_not_judged(tmp_path: Path) -> None:
    text = manifest("ReplicaSet", "strategy:\n  type: Rolling")
    assert hits(tmp_path, text) == (0, [])
