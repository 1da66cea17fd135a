"""FW101 selector-missing."""

from pathlib import Path

import pytest

from tests.helpers import WEB_DEPLOYMENT, lint, write

DEPLOYMENT = WEB_DEPLOYMENT  # `spec:` on line 5, `selector:` on line 6

RC = """\
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  selector: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    metadata:
      labels: {app: migrate}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: migrate:1}]
"""

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          labels: {app: report}
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: report:1}]
"""


def run(tmp_path: Path, text: str, *extra: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "m.yaml", text)
    result = lint(["--select", "FW101", "--no-context", *extra, str(path)])
    assert result.code == (1 if result.hits() else 0), result.stderr
    return result.hits()


def test_complete_workloads_pass(tmp_path: Path) -> None:
    text = "---\n".join(
        [DEPLOYMENT, DEPLOYMENT.replace("Deployment", "StatefulSet"), DEPLOYMENT.replace("Deployment", "DaemonSet"), RC, JOB, CRONJOB]
    )
    assert run(tmp_path, text) == []


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"])
def test_missing_selector_points_at_spec(tmp_path: Path, kind: str) -> None:
    text = DEPLOYMENT.replace("Deployment", kind).replace("  selector:\n    matchLabels: {app: web}\n", "")
    assert run(tmp_path, text) == [("m.yaml", 5, 1, "FW101")]


@pytest.mark.parametrize(
    "selector",
    [
        "  selector:\n",  # null
        "  selector: {}\n",
        "  selector:\n    matchLabels: {}\n",
        "  selector:\n    matchLabels: null\n    matchExpressions: []\n",
    ],
)
def test_null_and_empty_selectors_point_at_the_selector(tmp_path: Path, selector: str) -> None:
    text = DEPLOYMENT.replace("  selector:\n    matchLabels: {app: web}\n", selector)
    assert run(tmp_path, text) == [("m.yaml", 6, 3, "FW101")]


def test_malformed_selector_problems_point_at_the_field(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace(
        "    matchLabels: {app: web}\n",
        "    matchLabels:\n      app: web\n      version: 2\n"
        "    matchExpressions:\n      - key: tier\n        operator: in\n        values: [a]\n"
        "      - {key: track, operator: Exists, values: [x]}\n",
    )
    assert run(tmp_path, text) == [
        ("m.yaml", 9, 7, "FW101"),  # version: 2 is a number
        ("m.yaml", 12, 9, "FW101"),  # operator `in`
        ("m.yaml", 14, 40, "FW101"),  # values with Exists
    ]


def test_labels_written_directly_under_selector(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("    matchLabels: {app: web}\n", "    app: web\n")
    assert run(tmp_path, text) == [("m.yaml", 7, 5, "FW101")]


def test_selector_of_the_wrong_type(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("    matchLabels: {app: web}\n", "").replace("  selector:\n", "  selector: app=web\n")
    assert run(tmp_path, text) == [("m.yaml", 6, 3, "FW101")]


def test_replication_controller_defaulted_selector_is_flagged(tmp_path: Path) -> None:
    missing = RC.replace("  selector: {app: web}\n", "")
    assert run(tmp_path, missing) == [("m.yaml", 5, 1, "FW101")]
    empty = RC.replace("{app: web}\n  template", "{}\n  template")
    assert run(tmp_path, empty) == [("m.yaml", 6, 3, "FW101")]


def test_allow_defaulted_accepts_replication_controller_and_legacy_versions(tmp_path: Path) -> None:
    config = write(tmp_path, "fw.yaml", "rules:\n  selector-missing: {allow-defaulted: true}\n")
    missing = RC.replace("  selector: {app: web}\n", "")
    assert run(tmp_path, missing, "--config", str(config)) == []
    legacy = DEPLOYMENT.replace("apps/v1", "extensions/v1beta1").replace("  selector:\n    matchLabels: {app: web}\n", "")
    assert run(tmp_path, legacy) == [("m.yaml", 5, 1, "FW101")]
    assert run(tmp_path, legacy, "--config", str(config)) == []
    # apps/v1 never defaulted: still an error
    assert run(tmp_path, legacy.replace("extensions/v1beta1", "apps/v1"), "--config", str(config)) == [("m.yaml", 5, 1, "FW101")]
    # an empty selector is only defaulted for ReplicationControllers
    legacy_empty = DEPLOYMENT.replace("apps/v1", "extensions/v1beta1").replace("    matchLabels: {app: web}\n", "").replace("  selector:\n", "  selector: {}\n")
    assert run(tmp_path, legacy_empty, "--config", str(config)) == [("m.yaml", 6, 3, "FW101")]


def test_replication_controller_without_selector_or_template_labels(tmp_path: Path) -> None:
    config = write(tmp_path, "fw.yaml", "rules:\n  FW101: {allow-defaulted: true}\n")
    text = RC.replace("  selector: {app: web}\n", "").replace("    metadata:\n      labels: {app: web}\n", "")
    assert run(tmp_path, text, "--config", str(config)) == [("m.yaml", 5, 1, "FW101")]


def test_replication_controller_map_selector_problems(tmp_path: Path) -> None:
    text = RC.replace("  selector: {app: web}\n", "  selector:\n    matchLabels: {app: web}\n")
    assert run(tmp_path, text) == [("m.yaml", 7, 5, "FW101")]


def test_job_selector_depends_on_manual_selector(tmp_path: Path) -> None:
    assert run(tmp_path, JOB) == []
    manual = JOB.replace("spec:\n  template", "spec:\n  manualSelector: true\n  template")
    assert run(tmp_path, manual) == [("m.yaml", 5, 1, "FW101")]
    manual_empty = JOB.replace("spec:\n  template", "spec:\n  manualSelector: true\n  selector: {}\n  template")
    assert run(tmp_path, manual_empty) == [("m.yaml", 7, 3, "FW101")]
    manual_ok = JOB.replace("spec:\n  template", "spec:\n  manualSelector: true\n  selector:\n    matchLabels: {app: migrate}\n  template")
    assert run(tmp_path, manual_ok) == []
    # a selector without manualSelector (or with a non-boolean) is refused by the server
    unmanual = JOB.replace("spec:\n  template", "spec:\n  manualSelector: \"true\"\n  selector:\n    matchLabels: {app: migrate}\n  template")
    assert run(tmp_path, unmanual) == [("m.yaml", 7, 3, "FW101")]


def test_cronjob_selectors_are_generated(tmp_path: Path) -> None:
    manual = CRONJOB.replace("    spec:\n      template", "    spec:\n      manualSelector: true\n      template")
    assert run(tmp_path, manual) == [("m.yaml", 9, 7, "FW101")]
    selector = CRONJOB.replace("    spec:\n      template", "    spec:\n      selector:\n        matchLabels: {app: report}\n      template")
    assert run(tmp_path, selector) == [("m.yaml", 9, 7, "FW101")]
    both = CRONJOB.replace("    spec:\n      template", "    spec:\n      manualSelector: true\n      selector: {}\n      template")
    assert run(tmp_path, both) == [("m.yaml", 9, 7, "FW101"), ("m.yaml", 10, 7, "FW101")]


def test_hostile_shapes_do_not_crash(tmp_path: Path) -> None:
    text = "\n---\n".join(
        [
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: [1, 2]",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\nspec: null",
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: [x]}",
            "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: d}\nspec: {selector: [a], template: 3}",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: e}\nspec:\n  selector:\n    matchExpressions: [null, 3]",
        ]
    )
    hits = run(tmp_path, text)
    # null / list specs: no selector; a list as RC selector; a null and a number as requirements
    assert [h[1:3] for h in hits] == [(4, 1), (9, 1), (19, 8), (26, 24), (26, 24), (26, 30)]


def test_other_kinds_are_not_judged(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {}}\n"
    assert run(tmp_path, text) == []
