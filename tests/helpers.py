"""Shared test helpers: run the real CLI in-process and read its JSON report."""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from fieldwarden.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


class Run(NamedTuple):
    code: int
    findings: list[dict[str, Any]]
    stderr: str

    def hits(self, code_prefix: str = "") -> list[tuple[str, int, int, str]]:
        """(file name, line, column, code) of unsuppressed findings, optionally filtered."""
        return sorted(
            (Path(f["file"]).name, f["line"], f["column"], f["code"])
            for f in self.findings
            if f["code"].startswith(code_prefix) and not f["suppressed"]
        )


def lint(args: Sequence[str], cwd: Path | None = None, stdin: bytes | None = None) -> Run:
    """`fieldwarden lint --format json ARGS` in-process (from `cwd`), returning code and findings."""
    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    old_stdin = sys.stdin
    try:
        if cwd is not None:
            os.chdir(cwd)
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["lint", "--format", "json", "--show-suppressed", *args])
    finally:
        os.chdir(old_cwd)
        sys.stdin = old_stdin
    text = out.getvalue()
    return Run(code, json.loads(text) if text.strip() else [], err.getvalue())


def write(folder: Path, name: str, text: str) -> Path:
    """Write a manifest file (creating folders) and return its path."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
