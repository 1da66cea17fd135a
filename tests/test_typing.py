"""mypy --strict over the installed package layout (policies/, linter/, webhook/ under fieldwarden)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
# The distribution maps root folders into one import package; mypy cannot follow
# setuptools' package-dir mapping, so the test lays the same tree out with symlinks.
LAYOUT = {"policies": "policies", "linter": "linter", "webhook": "webhook"}


def test_package_is_strictly_typed(tmp_path: Path) -> None:
    package = tmp_path / "fieldwarden"
    package.mkdir()
    for source in (REPO / "fieldwarden").glob("*.py"):
        (package / source.name).symlink_to(source)
    for name, folder in LAYOUT.items():
        (package / name).symlink_to(REPO / folder, target_is_directory=True)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", str(REPO / "pyproject.toml"), "-p", "fieldwarden"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "MYPYPATH": ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
