"""`--format gitlab` through the real CLI: GitLab Code Quality JSON, validated against a JSON Schema
written from GitLab's documentation of the report (tests/fixtures/formats/gitlab-code-quality.schema.json)."""

from __future__ import annotations

import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fieldwarden.cli import main
from tests.helpers import FIXTURES, lint, write

SCHEMA = json.loads((FIXTURES / "formats" / "gitlab-code-quality.schema.json").read_text(encoding="utf-8"))

NO_SELECTOR = (FIXTURES / "formats" / "no-selector.yaml").read_text(encoding="utf-8")  # FW101, FW201
LONELY_SERVICE = (FIXTURES / "formats" / "lonely-service.yaml").read_text(encoding="utf-8")  # FW103
SELECT = ["--select", "FW101,FW103,FW201"]  # an error, a warning and an info


def gitlab(args: list[str], monkeypatch: pytest.MonkeyPatch, cwd: Path) -> tuple[int, list[dict[str, Any]]]:
    """`fieldwarden lint --format gitlab ARGS` from `cwd`: the exit code and the validated report."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    monkeypatch.chdir(cwd)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lint", "--format", "gitlab", *args])
    text = out.getvalue()
    assert text.startswith("[")  # no byte order mark: GitLab's parser refuses one
    report = json.loads(text)
    jsonschema.validate(report, SCHEMA)
    return code, report


def git_repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_issues_carry_severity_rule_path_from_the_repository_root_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(tmp_path / "repo")
    write(repo, "deploy/k8s/web.yaml", NO_SELECTOR)
    write(repo, "deploy/k8s/svc.yaml", LONELY_SERVICE)
    code, report = gitlab([*SELECT, "k8s"], monkeypatch, repo / "deploy")  # linted from a subfolder
    assert code == 1
    found = sorted((i["check_name"], i["severity"], i["location"]["path"], i["location"]["lines"]["begin"])
                   for i in report)
    # the lines are those of the text and JSON formats
    located = sorted((f["code"], f["line"]) for f in lint([*SELECT, "k8s"], cwd=repo / "deploy").findings)
    assert [(name.split()[0], line) for name, _, _, line in found] == located
    assert found == [
        ("FW101 selector-missing", "major", "deploy/k8s/web.yaml", 5),
        ("FW103 service-selects-nothing", "minor", "deploy/k8s/svc.yaml", 6),
        ("FW201 strategy-type-missing", "info", "deploy/k8s/web.yaml", 5),
    ]
    [error] = [i for i in report if i["check_name"].startswith("FW101")]
    assert error["description"].startswith("FW101 Deployment/default/web: ")


def test_ci_project_dir_is_the_root_under_gitlab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "project/k8s/web.yaml", NO_SELECTOR)
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.chdir(tmp_path / "project" / "k8s")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["lint", "--format", "gitlab", "--select", "FW101", "web.yaml"])
    [issue] = json.loads(out.getvalue())
    assert issue["location"]["path"] == "k8s/web.yaml"


def test_fingerprints_stay_when_lines_move_and_differ_between_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(tmp_path)
    path = write(repo, "web.yaml", NO_SELECTOR)
    _, before = gitlab([*SELECT, "web.yaml"], monkeypatch, repo)
    path.write_text("# moved down\n\n\n" + NO_SELECTOR, encoding="utf-8")
    _, after = gitlab([*SELECT, "web.yaml"], monkeypatch, repo)
    assert [i["fingerprint"] for i in before] == [i["fingerprint"] for i in after]
    assert [i["location"]["lines"]["begin"] for i in after] == [i["location"]["lines"]["begin"] + 3 for i in before]
    assert len({i["fingerprint"] for i in after}) == len(after) == 2
    # another object, same rule and file: another fingerprint
    path.write_text(NO_SELECTOR.replace("name: web", "name: api"), encoding="utf-8")
    _, renamed = gitlab([*SELECT, "web.yaml"], monkeypatch, repo)
    assert not {i["fingerprint"] for i in renamed} & {i["fingerprint"] for i in before}


def test_repeated_findings_get_distinct_fingerprints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GitLab's widget shows one entry per fingerprint: a key given three times is two issues, two entries."""
    write(git_repo(tmp_path), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: a\n  k: b\n  k: c\n")
    _, report = gitlab(["--select", "FW002", "cm.yaml"], monkeypatch, tmp_path)
    assert len(report) == 2 and len({i["fingerprint"] for i in report}) == 2


def test_a_clean_run_is_an_empty_array_and_suppressed_findings_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(git_repo(tmp_path), "web.yaml", "# fieldwarden: ignore[FW101]\n" + NO_SELECTOR)
    code, report = gitlab(["--select", "FW101", "--show-suppressed", "web.yaml"], monkeypatch, tmp_path)
    assert (code, report) == (0, [])


@pytest.mark.parametrize("change", [
    {"severity": "error"},  # not one of GitLab's five
    {"location": {"path": "/abs/web.yaml", "lines": {"begin": 5}}},  # not relative
    {"location": {"path": "web.yaml"}},  # no line
    {"fingerprint": None},
])
def test_the_schema_refuses_what_gitlab_does_not_read(change: dict[str, Any]) -> None:
    issue = {"description": "d", "check_name": "FW101 selector-missing", "fingerprint": "f", "severity": "major",
             "location": {"path": "web.yaml", "lines": {"begin": 5}}}
    jsonschema.validate([issue], SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**issue, **change}], SCHEMA)
