"""`fieldwarden units` on the command line: text by default, exit 0; usage errors exit 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import FIXTURES


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fieldwarden", "units", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_text_lists_each_unit_with_its_kind_defining_file_and_renders(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "repos" / "helm-chart" / "charts" / "ledger", repo / "charts" / "ledger")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done = run(repo)
    assert done.returncode == 0, done.stderr
    assert "charts/ledger (helm, ci/ha-values.yaml)\n  kind: chart + value set\n  defined by: charts/ledger/Chart.yaml\n" \
           "  renders: chart charts/ledger with charts/ledger/values.yaml, charts/ledger/ci/ha-values.yaml\n" in done.stdout
    assert done.stdout.endswith(" units\n") and done.stderr == ""


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run(tmp_path, "--format", "xml").returncode == 2
    done = run(tmp_path, "missing")
    assert done.returncode == 2 and "no such file or folder: missing" in done.stderr
