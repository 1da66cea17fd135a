"""FW203 rollout-cannot-progress."""

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


def manifest(kind: str, rolling: str, kind_type: str | None = "RollingUpdate") -> str:
    """A workload whose strategy has `rolling` (flow mapping body) as rollingUpdate, on line 16."""
    field = "strategy" if kind == "Deployment" else "updateStrategy"
    count = "minReadySeconds: 0" if kind == "DaemonSet" else "replicas: 3"
    type_line = f"    type: {kind_type}\n" if kind_type is not None else "    dummy: 0\n"
    return (
        HEAD.format(kind=kind, count=count)
        + f"  {field}:\n"
        + type_line
        + "    rollingUpdate:\n"
        + "".join(f"      {item.strip()}\n" for item in rolling.split(",") if item.strip())
    )


def hits(tmp_path: Path, text: str) -> tuple[int, list[tuple[str, int, int, str]]]:
    path = write(tmp_path, "web.yaml", text)
    run = lint(["--select", "FW203", "--no-context", str(path)])
    return run.code, run.hits()


@pytest.mark.parametrize(
    "rolling",
    [
        "maxSurge: 0, maxUnavailable: 0",
        'maxSurge: "0%", maxUnavailable: 0',
        "maxSurge: 0, maxUnavailable: 0%",
        'maxSurge: 0%, maxUnavailable: "0%"',
        "maxSurge: 000%, maxUnavailable: 0",
    ],
)
def test_deployment_both_zero_int_or_percent(tmp_path: Path, rolling: str) -> None:
    # maxUnavailable is the second item: line 18, column 7
    assert hits(tmp_path, manifest("Deployment", rolling)) == (1, [("web.yaml", 18, 7, "FW203")])


def test_points_at_max_unavailable_whatever_the_order(tmp_path: Path) -> None:
    text = manifest("Deployment", "maxUnavailable: 0, maxSurge: 0")
    assert hits(tmp_path, text) == (1, [("web.yaml", 17, 7, "FW203")])


@pytest.mark.parametrize(
    "rolling",
    [
        "maxUnavailable: 0",  # maxSurge defaults to 25%
        "maxSurge: 0",  # maxUnavailable defaults to 25%
        "maxUnavailable: 0%",
        "maxSurge: 0%, maxUnavailable: 1",
        "maxSurge: 1%, maxUnavailable: 0",  # 1% of 3 rounds up to 1 surge pod
        "maxSurge: 0%, maxUnavailable: 10%",  # 10% of 3 rounds down to 0; the controller allows 1
        "maxSurge: 0, maxUnavailable: 1%",  # not zero as written, which is what the API checks
        "maxSurge: null, maxUnavailable: 0",  # null is absent: defaulted
    ],
)
def test_deployment_progressing_or_defaulted_limits_pass(tmp_path: Path, rolling: str) -> None:
    assert hits(tmp_path, manifest("Deployment", rolling)) == (0, [])


def test_deployment_without_type_is_defaulted_to_rolling_update(tmp_path: Path) -> None:
    text = manifest("Deployment", "maxSurge: 0, maxUnavailable: 0", kind_type=None)
    assert hits(tmp_path, text) == (1, [("web.yaml", 18, 7, "FW203")])
    text = manifest("Deployment", "maxSurge: 0, maxUnavailable: 0", kind_type='""')
    assert hits(tmp_path, text) == (1, [("web.yaml", 18, 7, "FW203")])


def test_other_types_are_not_checked(tmp_path: Path) -> None:
    for kind_type in ("Recreate", "Rolling"):  # FW202 and FW204 report these
        assert hits(tmp_path, manifest("Deployment", "maxSurge: 0, maxUnavailable: 0", kind_type)) == (0, [])
    assert hits(tmp_path, manifest("DaemonSet", "maxUnavailable: 0", "OnDelete")) == (0, [])


def test_daemonset_max_unavailable_zero_alone_can_never_progress(tmp_path: Path) -> None:
    # the DaemonSet trap: maxSurge defaults to 0 there, not 25%
    assert hits(tmp_path, manifest("DaemonSet", "maxUnavailable: 0")) == (1, [("web.yaml", 17, 7, "FW203")])
    assert hits(tmp_path, manifest("DaemonSet", "maxUnavailable: 0%")) == (1, [("web.yaml", 17, 7, "FW203")])
    assert hits(tmp_path, manifest("DaemonSet", "maxUnavailable: 0", kind_type=None)) == (1, [("web.yaml", 17, 7, "FW203")])
    both = manifest("DaemonSet", "maxSurge: 0%, maxUnavailable: 0")
    assert hits(tmp_path, both) == (1, [("web.yaml", 18, 7, "FW203")])


@pytest.mark.parametrize("rolling", ["maxUnavailable: 0, maxSurge: 1", "maxSurge: 0", "maxUnavailable: 1", "", "maxUnavailable: 0, maxSurge: 10%"])
def test_daemonset_progressing_or_defaulted_limits_pass(tmp_path: Path, rolling: str) -> None:
    text = manifest("DaemonSet", rolling)
    if not rolling:
        text = text.replace("rollingUpdate:\n", "rollingUpdate: {}\n")
    assert hits(tmp_path, text) == (0, [])


def test_malformed_values_are_left_to_fw204(tmp_path: Path) -> None:
    for rolling in ('maxSurge: abc, maxUnavailable: 0', 'maxSurge: "0", maxUnavailable: 0', "maxSurge: 0, maxUnavailable: false"):
        assert hits(tmp_path, manifest("Deployment", rolling)) == (0, [])
    assert hits(tmp_path, manifest("DaemonSet", "maxUnavailable: 0, maxSurge: -1")) == (0, [])


def test_statefulsets_are_not_judged(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("StatefulSet", "maxUnavailable: 0")) == (0, [])


def test_malformed_strategy_never_crashes(tmp_path: Path) -> None:
    text = manifest("Deployment", "maxSurge: 0").replace("    rollingUpdate:\n      maxSurge: 0\n", "    rollingUpdate: [0, 0]\n")
    assert hits(tmp_path, text) == (0, [])
    text = manifest("Deployment", "maxSurge: 0").split("  strategy:")[0] + "  strategy: RollingUpdate\n"
    assert hits(tmp_path, text) == (0, [])
