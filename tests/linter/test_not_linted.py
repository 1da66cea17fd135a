"""A unit that was not linted is an FW007 finding (unit-not-linted), never "All checks passed!".

Helm's engine is detected with `importlib.util.find_spec("helm_python")`; a `None` in
`sys.modules` is Python's own way of making a module unimportable, and find_spec honours it,
so the tests below run the linter as it runs where the `[render]` extra is not installed.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fieldwarden.cli import main
from fieldwarden.linter.units import renders
from tests.helpers import FIXTURES, lint

CHART_REPO = FIXTURES / "repos" / "helm-chart"


@pytest.fixture
def no_helm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Helm's engine not installed (the tool cache forgets what it found)."""
    monkeypatch.setitem(sys.modules, "helm_python", None)
    monkeypatch.setattr(renders, "_TOOLS", {})


@pytest.fixture
def chart_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(CHART_REPO, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _text(args: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(args)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def test_a_chart_without_helms_engine_is_one_fw007_on_its_chart_yaml(no_helm: None, chart_repo: Path) -> None:
    run = lint([], cwd=chart_repo)
    assert run.code == 1
    hits = [f for f in run.findings if f["code"] == "FW007"]
    assert [(f["file"], f["line"], f["severity"]) for f in hits] == [("charts/ledger/Chart.yaml", 1, "error")]
    assert hits[0]["message"] == ("not linted: Helm's engine is not installed; "
                                  "pip install 'fieldwarden[render]' (helm-python-sdk)")
    assert hits[0]["units"] == ["charts/ledger (helm)", "charts/ledger (helm, ci/ha-values.yaml)",
                                "charts/ledger (helm, ci/recreate-values.yaml)"]


def test_quiet_text_and_sarif_say_it_too(no_helm: None, chart_repo: Path) -> None:
    code, out, _ = _text(["lint", "-q"], chart_repo)
    assert code == 1
    assert "charts/ledger/Chart.yaml:1:1: FW007" in out
    assert "All checks passed" not in out
    code, out, _ = _text(["lint", "--format", "sarif"], chart_repo)
    assert code == 1
    results = json.loads(out)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["FW007"]


def test_a_changed_values_file_of_an_unrendered_chart_reports_it(no_helm: None, chart_repo: Path) -> None:
    """pre-commit passes the changed file alone: the chart it belongs to was not linted."""
    run = lint(["charts/ledger/ci/ha-values.yaml"], cwd=chart_repo)
    assert run.code == 1
    assert [(f["file"], f["code"]) for f in run.findings] == [("charts/ledger/Chart.yaml", "FW007")]


def test_its_severity_is_configurable(no_helm: None, chart_repo: Path) -> None:
    (chart_repo / ".fieldwarden.yaml").write_text("rules:\n  FW007: {severity: info}\n")
    run = lint([], cwd=chart_repo)
    assert run.code == 0
    assert [(f["code"], f["severity"]) for f in run.findings] == [("FW007", "info")]
    run = lint(["--ignore", "FW007"], cwd=chart_repo)
    assert run.code == 0 and run.findings == []
