"""`fieldwarden lint --diff`: what --fix would change, as a unified diff; nothing written."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fieldwarden.cli import main
from fieldwarden.linter.fix import unified_diff
from tests.helpers import write

EXPORTED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  uid: 0b1c  # from kubectl get -o yaml
data: {a: b}
status:
  phase: whatever
"""
CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"


def run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lint", "--no-context", "--select", "FW306", *args])
    return code, out.getvalue(), err.getvalue()


def test_diff_shows_the_fix_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", EXPORTED)
    code, out, err = run(["--diff", str(path)], monkeypatch)
    assert code == 1
    assert path.read_text() == EXPORTED
    assert out.splitlines()[:2] == [f"--- {path}", f"+++ {path}"]
    assert [line for line in out.splitlines() if line.startswith(("-", "+"))][2:] == [
        "-  uid: 0b1c  # from kubectl get -o yaml", "-status:", "-  phase: whatever",
    ]
    assert err == "Would fix 2 findings.\n"


def test_diff_matches_what_fix_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("patch") is None:
        pytest.skip("no patch(1)")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    crlf = EXPORTED.replace("\n", "\r\n").rstrip("\r\n")  # CRLF and no final line break
    for folder in ("a", "b"):
        (tmp_path / folder / "cm.yaml").write_bytes(crlf.encode())
    monkeypatch.chdir(tmp_path / "a")
    code, diff, _ = run(["--diff", "cm.yaml"], monkeypatch)
    assert code == 1
    subprocess.run(["patch", "-p0", "--binary", "-s"], input=diff.encode(), cwd=tmp_path / "a", check=True, timeout=60)
    monkeypatch.chdir(tmp_path / "b")
    run(["--fix", "cm.yaml"], monkeypatch)
    assert (tmp_path / "a" / "cm.yaml").read_bytes() == (tmp_path / "b" / "cm.yaml").read_bytes()
    assert b"status" not in (tmp_path / "a" / "cm.yaml").read_bytes()


def test_nothing_to_fix_is_exit_0_and_no_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", CLEAN)
    assert run(["--diff", str(path)], monkeypatch) == (0, "", "No fixes available.\n")
    assert run(["--diff", "--quiet", str(path)], monkeypatch) == (0, "", "")


def test_diff_wins_over_fix_and_exit_zero_still_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", EXPORTED)
    code, out, _ = run(["--diff", "--fix", "--exit-zero", str(path)], monkeypatch)
    assert code == 0
    assert out.startswith(f"--- {path}\n")
    assert path.read_text() == EXPORTED


def test_diff_of_stdin_names_the_stdin_filename(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "fieldwarden", "lint", "--no-context", "--diff", "--stdin-filename", "k8s/cm.yaml", "-"],
        input=EXPORTED.encode(), cwd=tmp_path, capture_output=True, timeout=60,
    )
    assert process.returncode == 1
    assert process.stdout.decode().splitlines()[:2] == ["--- k8s/cm.yaml", "+++ k8s/cm.yaml"]


def test_unified_diff_marks_a_missing_final_line_break() -> None:
    diff = unified_diff("x.yaml", b"a: 1\nb: 2", b"a: 1\n")
    assert diff.splitlines() == [
        "--- x.yaml", "+++ x.yaml", "@@ -1,2 +1 @@", " a: 1", "-b: 2", "\\ No newline at end of file",
    ]
    assert unified_diff("x.yaml", b"same\n", b"same\n") == ""
