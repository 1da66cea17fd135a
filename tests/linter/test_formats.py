"""Output formats through the real CLI: text, json, sarif 2.1.0, github annotations."""

from __future__ import annotations

import io
import json
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
spec:
  template: {}
"""
CLEAN = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
"""


def run(args: list[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lint", "--no-context", "--select", "FW201", *args])
    return code, out.getvalue(), err.getvalue()


def test_text_is_grep_style_without_colour_off_a_tty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    code, out, _ = run([str(path)], monkeypatch)
    first = out.splitlines()[0]
    assert code == 1
    assert first.startswith(f"{path}:5:1: FW201 Deployment/default/web: ")
    assert first.endswith("[strategy-type-missing]")
    assert "\033[" not in out
    assert out.splitlines()[-1] == "Found 1 finding (1 warning)."


def test_json_carries_every_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    _, out, _ = run(["--format", "json", str(path)], monkeypatch)
    [finding] = json.loads(out)
    assert finding == {
        "file": str(path), "line": 5, "column": 1, "code": "FW201", "name": "strategy-type-missing",
        "severity": "warning", "object": "Deployment/default/web", "field": "spec.strategy.type",
        "message": finding["message"], "hint": finding["hint"], "suppressed": None,
    }
    assert finding["message"] and finding["hint"]


def test_sarif_has_rules_and_real_regions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    _, out, _ = run(["--format", "sarif", str(path)], monkeypatch)
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    [result] = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (result["ruleId"], result["level"], region["startLine"], region["startColumn"]) == ("FW201", "warning", 5, 1)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[result["ruleIndex"]]["id"] == "FW201"


def test_sarif_clean_run_has_empty_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", CLEAN)
    code, out, _ = run(["--format", "sarif", str(path)], monkeypatch)
    assert code == 0
    assert json.loads(out)["runs"][0]["results"] == []


def test_github_annotations_escape_and_auto_detect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "a,b:c.yaml", BROKEN)
    _, out, _ = run([str(path)], monkeypatch, env={"GITHUB_ACTIONS": "true"})
    line = out.strip()
    assert line.startswith("::warning file=")
    assert "a%2Cb%3Ac.yaml,line=5,col=1,title=FW201 strategy-type-missing::" in line


def test_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    report = tmp_path / "report.json"
    code, out, _ = run(["--format", "json", "-o", str(report), str(path)], monkeypatch)
    assert (code, out) == (1, "")
    assert json.loads(report.read_text())[0]["code"] == "FW201"
