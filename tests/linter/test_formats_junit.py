"""`--format junit` through the real CLI, validated against the Jenkins xUnit plugin's published JUnit XSD.

GitLab shows a testcase's `classname` as its suite and keys tests by classname and name (the first of
two equal ones wins); Jenkins and Azure DevOps read the same file. See linter/formats.py `junit`.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from lxml import etree

from fieldwarden.cli import main
from tests.helpers import FIXTURES, write

XSD = etree.XMLSchema(etree.parse(str(FIXTURES / "formats" / "junit-10.xsd")))

NO_SELECTOR = (FIXTURES / "formats" / "no-selector.yaml").read_text(encoding="utf-8")  # FW101, FW201
LONELY_SERVICE = (FIXTURES / "formats" / "lonely-service.yaml").read_text(encoding="utf-8")  # FW103
CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"
SELECT = ["--select", "FW101,FW103,FW201"]  # an error, a warning and an info


def junit(args: list[str], monkeypatch: pytest.MonkeyPatch, cwd: Path) -> tuple[int, etree._Element]:
    """Run `fieldwarden lint --format junit ARGS` from `cwd`; the exit code and the parsed, validated report."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(cwd)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lint", "--format", "junit", *args])
    report = etree.fromstring(out.getvalue().encode("utf-8"))
    XSD.assertValid(report)
    return code, report


def cases(report: etree._Element) -> dict[tuple[str, str], etree._Element]:
    found = {(case.get("classname"), case.get("name")): case for case in report.iter("testcase")}
    assert len(found) == len(list(report.iter("testcase")))  # (classname, name) unique: GitLab keeps one of two
    return found


def test_findings_are_failing_testcases_with_file_line_column_code_and_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "k8s/web.yaml", NO_SELECTOR)
    write(tmp_path, "k8s/svc.yaml", LONELY_SERVICE)
    code, report = junit([*SELECT, "k8s"], monkeypatch, tmp_path)
    assert code == 1
    found = cases(report)
    assert sorted(found) == [
        ("k8s/svc.yaml", "FW103 service-selects-nothing: Service/default/lonely spec.selector"),
        ("k8s/web.yaml", "FW101 selector-missing: Deployment/default/web spec.selector"),
        ("k8s/web.yaml", "FW201 strategy-type-missing: Deployment/default/web spec.strategy.type"),
    ]
    failure = found["k8s/web.yaml", "FW101 selector-missing: Deployment/default/web spec.selector"].find("failure")
    assert failure.get("type") == "error"
    assert failure.get("message").startswith("5:1: FW101 error: Deployment/default/web: ")
    first, *rest = failure.text.split("\n")
    assert first.startswith("k8s/web.yaml:5:1: FW101 error: Deployment/default/web: ")
    assert rest[-1] == "https://fieldwarden.github.io/fieldwarden/rules/FW101/"
    assert rest[0].startswith("help: ")
    warning = found["k8s/svc.yaml", "FW103 service-selects-nothing: Service/default/lonely spec.selector"]
    assert warning.find("failure").get("type") == "warning"
    assert warning.find("failure").text.startswith("k8s/svc.yaml:6:3: FW103 warning: ")
    # one suite per file, its counts those of its cases; the totals on <testsuites>
    suites = {suite.get("name"): suite for suite in report.iter("testsuite")}
    assert set(suites) == {"k8s/web.yaml", "k8s/svc.yaml"}
    assert (suites["k8s/web.yaml"].get("tests"), suites["k8s/web.yaml"].get("failures")) == ("2", "1")
    assert (report.get("tests"), report.get("failures"), report.get("errors")) == ("3", "2", "0")


def test_what_does_not_fail_the_run_is_a_passing_testcase_with_the_finding_as_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "web.yaml", NO_SELECTOR)
    code, report = junit(["--select", "FW201", "web.yaml"], monkeypatch, tmp_path)
    assert code == 0  # info does not reach the default fail-on (warning)
    [case] = report.iter("testcase")
    assert case.find("failure") is None
    assert case.find("system-out").text.startswith("web.yaml:5:1: FW201 info: ")
    # the file's own fail-on decides, as it does for the exit code
    write(tmp_path, ".fieldwarden.yaml", "fail-on: info\n")
    code, report = junit(["--select", "FW201", "web.yaml"], monkeypatch, tmp_path)
    assert code == 1
    [case] = report.iter("testcase")
    assert case.find("failure").get("type") == "info"


def test_a_clean_run_is_one_passing_testcase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "cm.yaml", CLEAN)
    code, report = junit(["cm.yaml"], monkeypatch, tmp_path)
    assert code == 0
    assert [(c.get("classname"), c.get("name"), len(c)) for c in report.iter("testcase")] == [
        ("fieldwarden", "fieldwarden lint", 0)]
    assert (report.get("tests"), report.get("failures")) == ("1", "0")


def test_a_suppressed_finding_shown_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "web.yaml", "# fieldwarden: ignore[FW101]\n" + NO_SELECTOR)
    code, report = junit(["--select", "FW101", "--show-suppressed", "web.yaml"], monkeypatch, tmp_path)
    assert code == 0
    [case] = report.iter("testcase")
    assert case.find("failure") is None and "suppressed by" in case.find("skipped").get("message")
    [suite] = report.iter("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "0", "1")


def test_test_names_stay_when_lines_move(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GitLab compares a branch's test names with the target branch's: a moved line is not a new failure."""
    path = write(tmp_path, "web.yaml", NO_SELECTOR)
    _, before = junit([*SELECT, "web.yaml"], monkeypatch, tmp_path)
    path.write_text("# a comment\n\n" + NO_SELECTOR, encoding="utf-8")
    _, after = junit([*SELECT, "web.yaml"], monkeypatch, tmp_path)
    assert sorted(cases(before)) == sorted(cases(after))
    [failure] = after.iter("failure")
    assert failure.text.startswith("web.yaml:7:1: FW101")  # the place moved with the line


def test_two_findings_of_one_field_get_distinct_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duplicate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: a\n  k: b\n  k: c\n"
    write(tmp_path, "cm.yaml", duplicate)
    _, report = junit(["--select", "FW002", "cm.yaml"], monkeypatch, tmp_path)
    names = sorted(name for _, name in cases(report))
    assert len(names) == 2 and len(set(names)) == 2  # unique, so GitLab shows both


def test_hostile_file_names_are_valid_xml_and_read_back(tmp_path: Path) -> None:
    """A name with a newline, an escape and `##[`: the report stays valid XML and no line of it starts a
    workflow command; newline and `##[` read back as they are, the escape (no XML character) as `\\x1b`."""
    name = "evil\n::add-mask::x\x1b[31m##[y].yaml"
    (tmp_path / name).write_text(NO_SELECTOR, encoding="utf-8")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    done = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--no-context", "--select", "FW101",
                           "--format", "junit", "."], cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert done.returncode == 1, done.stderr
    for line in done.stdout.decode().splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line
    report = etree.fromstring(done.stdout)
    XSD.assertValid(report)
    [case] = report.iter("testcase")
    assert case.get("classname") == "evil\n::add-mask::x\\x1b[31m##[y].yaml"
