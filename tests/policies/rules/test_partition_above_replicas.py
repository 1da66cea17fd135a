"""FW205 partition-above-replicas."""

from pathlib import Path

import pytest

from tests.helpers import lint, write

TEXT = """\
apiVersion: apps/v1
kind: {kind}
metadata:
  name: web
spec:
  {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers: [{{name: web, image: nginx}}]
  updateStrategy:
    {type}
    rollingUpdate:
      partition: {partition}
"""  # partition: line 17, column 7


def manifest(partition: str, replicas: str | None = "3", kind_type: str | None = "RollingUpdate", kind: str = "StatefulSet") -> str:
    return TEXT.format(
        kind=kind,
        replicas=f"replicas: {replicas}" if replicas is not None else "serviceName: web",
        type=f"type: {kind_type}" if kind_type is not None else "# type defaults to RollingUpdate",
        partition=partition,
    )


def hits(tmp_path: Path, text: str) -> tuple[int, list[tuple[str, int, int, str]]]:
    path = write(tmp_path, "web.yaml", text)
    run = lint(["--select", "FW205", "--no-context", str(path)])
    return run.code, run.hits()


@pytest.mark.parametrize(("partition", "replicas"), [("3", "3"), ("5", "3"), ("1", None), ("4", None), ("2147483647", "2")])
def test_partition_at_or_above_replicas_points_at_partition(tmp_path: Path, partition: str, replicas: str | None) -> None:
    assert hits(tmp_path, manifest(partition, replicas)) == (1, [("web.yaml", 17, 7, "FW205")])


@pytest.mark.parametrize(("partition", "replicas"), [("2", "3"), ("0", "3"), ("0", None), ("null", "3"), ("5", "0"), ("1", "0")])
def test_partition_below_replicas_or_nothing_to_update_passes(tmp_path: Path, partition: str, replicas: str | None) -> None:
    assert hits(tmp_path, manifest(partition, replicas)) == (0, [])


def test_type_absent_counts_as_rolling_update(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("5", kind_type=None)) == (1, [("web.yaml", 17, 7, "FW205")])
    assert hits(tmp_path, manifest("5", kind_type='""')) == (1, [("web.yaml", 17, 7, "FW205")])


def test_on_delete_and_unknown_types_are_left_to_other_rules(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("5", kind_type="OnDelete")) == (0, [])  # FW202
    assert hits(tmp_path, manifest("5", kind_type="Rolling")) == (0, [])  # FW204


@pytest.mark.parametrize(("partition", "replicas"), [('"5"', "3"), ("5.0", "3"), ("true", "3"), ("-1", "3"), ("5", '"3"'), ("5", "true"), ("[5]", "3")])
def test_malformed_values_are_left_to_fw204(tmp_path: Path, partition: str, replicas: str) -> None:
    assert hits(tmp_path, manifest(partition, replicas)) == (0, [])


def test_only_statefulsets_have_partitions(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("5", kind="DaemonSet")) == (0, [])
    assert hits(tmp_path, manifest("5", kind="Deployment")) == (0, [])


def test_warning_does_not_fail_below_fail_on_error(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", manifest("3"))
    run = lint(["--select", "FW205", "--no-context", "--fail-on", "error", str(path)])
    assert (run.code, run.hits()) == (0, [("web.yaml", 17, 7, "FW205")])


def ordinals(start: str, partition: str, replicas: str = "3") -> str:
    return manifest(partition, replicas).replace("  selector:", f"  ordinals: {{start: {start}}}\n  selector:")


def findings(tmp_path: Path, text: str) -> list[tuple[int, int, str, str]]:
    path = write(tmp_path, "web.yaml", text)
    run = lint(["--select", "FW205", "--no-context", str(path)])
    return [(f["line"], f["column"], f["message"], f["hint"]) for f in run.findings]


def test_partition_counts_from_the_start_ordinal(tmp_path: Path) -> None:
    # Pods web-5, web-6, web-7. The controller updates ordinals >= start + partition:
    # partition 1 updates web-6 and web-7, partition 2 only web-7.
    for partition in ("0", "1", "2"):
        assert findings(tmp_path, ordinals("5", partition)) == []
    # partition 6, meant as "web-6 and up", stands for ordinal 11: nothing is updated.
    assert findings(tmp_path, ordinals("5", "6")) == [(
        18, 7,
        "partition 6 is above the pod count (spec.replicas is 3): it counts from spec.ordinals.start 5, so it holds "
        "back every pod below ordinal 11, and the pods are web-5..web-7: template changes never roll out",
        "write the partition relative to the start ordinal: below 3 (partition = ordinal - 5; 0 updates every pod), "
        "or suppress while staging",
    )]
    assert [line for line, *_ in findings(tmp_path, ordinals("5", "3"))] == [18]


def test_start_ordinal_zero_or_one_pod(tmp_path: Path) -> None:
    [(_, _, message, _)] = findings(tmp_path, ordinals("0", "3"))
    assert message == "partition 3 equals the pod count (spec.replicas is 3): template changes never roll out"
    [(_, _, message, _)] = findings(tmp_path, ordinals("1", "1", replicas="1"))
    assert "so it holds back every pod below ordinal 2, and the pods are web-1:" in message


def test_recreate_has_no_partition(tmp_path: Path) -> None:
    assert hits(tmp_path, manifest("5", kind_type="Recreate")) == (0, [])
