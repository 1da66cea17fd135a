"""FW102 selector-template-mismatch."""

from pathlib import Path

import pytest

from tests.helpers import Run, lint, write

TEMPLATE = """\
apiVersion: apps/v1
kind: {kind}
metadata:
  name: db
spec:
  selector:
{selector}
  template:
    metadata:
      labels: {labels}
    spec:
      containers: [{{name: db, image: postgres}}]
"""


def manifest(selector: str, labels: str = "{app: db, role: primary}", kind: str = "StatefulSet") -> str:
    return TEMPLATE.format(kind=kind, selector=selector, labels=labels)


def run(tmp_path: Path, text: str) -> Run:
    path = write(tmp_path, "m.yaml", text)
    result = lint(["--select", "FW102", "--no-context", str(path)])
    assert result.code == (1 if result.hits() else 0), result.stderr
    return result


SELECTOR_LINE = [("m.yaml", 6, 3, "FW102")]


@pytest.mark.parametrize(
    ("selector", "verdict"),
    [
        ("    matchLabels: {app: db}", []),
        ("    matchLabels: {app: db, role: primary}", []),
        ("    matchLabels: {app: database}", SELECTOR_LINE),
        ("    matchLabels: {app: db, tier: data}", SELECTOR_LINE),
        ("    matchExpressions: [{key: role, operator: In, values: [primary, replica]}]", []),
        ("    matchExpressions: [{key: role, operator: In, values: [replica]}]", SELECTOR_LINE),
        ("    matchExpressions: [{key: zone, operator: In, values: [a]}]", SELECTOR_LINE),
        ("    matchExpressions: [{key: role, operator: NotIn, values: [backup]}]", []),
        ("    matchExpressions: [{key: zone, operator: NotIn, values: [a]}]", []),  # absent key passes NotIn
        ("    matchExpressions: [{key: role, operator: NotIn, values: [primary]}]", SELECTOR_LINE),
        ("    matchExpressions: [{key: role, operator: Exists}]", []),
        ("    matchExpressions: [{key: zone, operator: Exists}]", SELECTOR_LINE),
        ("    matchExpressions: [{key: zone, operator: DoesNotExist}]", []),
        ("    matchExpressions: [{key: role, operator: DoesNotExist}]", SELECTOR_LINE),
        # matchLabels AND matchExpressions
        ("    matchLabels: {app: db}\n    matchExpressions: [{key: role, operator: NotIn, values: [primary]}]", SELECTOR_LINE),
    ],
)
def test_operators(tmp_path: Path, selector: str, verdict: list[tuple[str, int, int, str]]) -> None:
    assert run(tmp_path, manifest(selector)).hits() == verdict


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"])
def test_every_apps_kind(tmp_path: Path, kind: str) -> None:
    assert run(tmp_path, manifest("    matchLabels: {app: web}", kind=kind)).hits() == SELECTOR_LINE


def test_message_names_the_first_unsatisfied_requirement_in_written_order(tmp_path: Path) -> None:
    selector = (
        "    matchLabels: {app: db, tier: data}\n"
        "    matchExpressions:\n"
        "      - {key: role, operator: In, values: [replica]}\n"
        "      - {key: zone, operator: Exists}"
    )
    [finding] = run(tmp_path, manifest(selector)).findings
    assert "requirement tier=data does" in finding["message"] and "no tier label" in finding["message"]
    selector = "    matchExpressions:\n      - {key: zone, operator: Exists}\n      - {key: role, operator: In, values: [replica]}"
    [finding] = run(tmp_path, manifest(selector)).findings
    assert "requirement zone does" in finding["message"]


def test_template_without_labels(tmp_path: Path) -> None:
    text = manifest("    matchLabels: {app: db}").replace("    metadata:\n      labels: {app: db, role: primary}\n", "")
    result = run(tmp_path, text)
    assert result.hits() == SELECTOR_LINE
    assert "no labels" in result.findings[0]["message"]


def test_template_label_that_is_not_a_string(tmp_path: Path) -> None:
    result = run(tmp_path, manifest('    matchLabels: {version: "2"}', labels="{version: 2}"))
    assert result.hits() == SELECTOR_LINE
    assert "not a string" in result.findings[0]["message"]


def test_missing_empty_and_invalid_selectors_are_left_to_fw101(tmp_path: Path) -> None:
    text = "---\n".join(
        [
            manifest("    matchLabels: {}"),
            manifest("    matchExpressions: [{key: role, operator: in, values: [x]}]"),
            manifest("    matchLabels: null").replace("  selector:\n    matchLabels: null\n", ""),
        ]
    )
    assert run(tmp_path, text).hits() == []


RC = """\
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  selector: {selector}
  template:
    metadata:
      labels: {{app: web, tier: front}}
    spec:
      containers: [{{name: web, image: nginx}}]
"""


def test_replication_controller_map_selector(tmp_path: Path) -> None:
    assert run(tmp_path, RC.format(selector="{app: web}")).hits() == []
    assert run(tmp_path, RC.format(selector="{app: web, tier: back}")).hits() == SELECTOR_LINE
    # missing or empty: the server copies the template labels, so it always matches
    assert run(tmp_path, RC.format(selector="{}")).hits() == []
    assert run(tmp_path, RC.format(selector="null")).hits() == []


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
{manual}  selector:
    matchLabels: {{app: migrate}}
  template:
    metadata:
      labels: {{app: migration}}
    spec:
      restartPolicy: Never
      containers: [{{name: m, image: m}}]
"""


def test_job_is_checked_only_with_manual_selector(tmp_path: Path) -> None:
    assert run(tmp_path, JOB.format(manual="  manualSelector: true\n")).hits() == [("m.yaml", 7, 3, "FW102")]
    assert run(tmp_path, JOB.format(manual="")).hits() == []  # FW101 reports the selector itself
    assert run(tmp_path, JOB.format(manual="  manualSelector: true\n").replace("app: migration", "app: migrate")).hits() == []


def test_cronjob_is_not_judged(tmp_path: Path) -> None:
    text = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      manualSelector: true
      selector:
        matchLabels: {app: other}
      template:
        metadata:
          labels: {app: report}
        spec:
          restartPolicy: Never
          containers: [{name: r, image: r}]
"""
    assert run(tmp_path, text).hits() == []
