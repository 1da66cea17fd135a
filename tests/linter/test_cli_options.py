"""`fieldwarden lint` options as ruff users expect them: exit codes and printed lines."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fieldwarden.cli import main
from tests.helpers import write

BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  uid: abc
spec:
  template: {}
"""
CLEAN = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
"""
TEMPLATED = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Values.name }}}\n"


def run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lint", "--no-context", *args])
    return code, out.getvalue(), err.getvalue()


def test_a_clean_run_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", CLEAN)
    assert run([str(path)], monkeypatch)[:2] == (0, "All checks passed!\n")


def test_quiet_clean_run_prints_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", CLEAN)
    write(tmp_path, "tpl.yaml", TEMPLATED)  # skipped with a notice, which --quiet keeps quiet
    assert run(["-q", str(tmp_path)], monkeypatch) == (0, "", "")
    assert run(["--quiet", str(path)], monkeypatch) == (0, "", "")


def test_quiet_prints_only_the_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    code, out, err = run(["--quiet", "--format", "concise", "--select", "FW201,FW306", str(path)], monkeypatch)
    assert code == 1
    assert [line.split(": ")[1] for line in out.splitlines()] == ["FW306 [*] error", "FW201 info"]
    assert all(line.startswith(f"{path}:") for line in out.splitlines())
    assert err == ""


def test_statistics_counts_per_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "a.yaml", BROKEN)
    write(tmp_path, "b.yaml", BROKEN.replace("  uid: abc\n", ""))
    code, out, _ = run(["--statistics", "--select", "FW201,FW306", str(tmp_path)], monkeypatch)
    assert code == 1
    assert out.splitlines() == ["2\tFW201\tstrategy-type-missing", "1\tFW306\t[*] live-object-export"]
    _, out, _ = run(["--statistics", "--output-format", "json", "--select", "FW201,FW306", str(tmp_path)], monkeypatch)
    assert [(row["code"], row["count"], row["fixable"]) for row in json.loads(out)] == [("FW201", 2, 0), ("FW306", 1, 1)]


def test_exit_zero_keeps_the_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    code, out, _ = run(["--exit-zero", "--select", "FW201", str(path)], monkeypatch)
    assert code == 0
    assert out.startswith(f"{path}:6:1: FW201 info: ")
    # a usage error is still 2
    assert run(["--exit-zero", "--select", "FW999", str(path)], monkeypatch)[0] == 2


def test_output_format_is_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    by_format = run(["--format", "json", str(path)], monkeypatch)
    by_output_format = run(["--output-format", "json", str(path)], monkeypatch)
    assert by_format == by_output_format
    assert {f["code"] for f in json.loads(by_format[1])} >= {"FW201", "FW306"}


@pytest.mark.parametrize(
    ("wrong", "suggestion"),
    [("--fromat", "--format"), ("--exitzero", "--exit-zero"), ("--statistic", "--statistics"), ("--qiuet", "--quiet")],
)
def test_a_wrong_option_shows_the_lint_usage_and_the_close_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], wrong: str, suggestion: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["lint", wrong, "json", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("usage: fieldwarden lint ")
    assert err.rstrip().endswith(f"did you mean {suggestion}?")


def test_a_wrong_option_through_the_real_command(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "fieldwarden", "lint", "--fromat=json", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert process.returncode == 2
    assert process.stdout == ""
    assert process.stderr.startswith("usage: fieldwarden lint ")
    assert process.stderr.splitlines()[-1] == (
        "fieldwarden lint: error: unrecognized arguments: --fromat=json; did you mean --format?"
    )
