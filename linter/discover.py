"""Which files to lint, which to load as context, and where the project's root is."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path
from typing import Iterable, Iterator

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
CONFIG_NAMES = (".fieldwarden.yaml", ".fieldwarden.yml")
_SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".fieldwarden_cache", ".tox", ".nox", ".venv", "venv", "__pycache__"}
)


def find_config(start: Path) -> Path | None:
    """The nearest `.fieldwarden.yaml`, or pyproject.toml with [tool.fieldwarden], upward."""
    for folder in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                if "[tool.fieldwarden" in pyproject.read_text(encoding="utf-8", errors="replace"):
                    return pyproject
            except OSError:
                pass
    return None


def find_git_root(start: Path) -> Path | None:
    """The nearest folder upward holding `.git` (a folder, or a file for worktrees)."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def is_manifest_name(name: str) -> bool:
    """`*.yaml`, `*.yml` or `*.json`."""
    return name.lower().endswith(MANIFEST_SUFFIXES)


def excluded(path: Path, root: Path, patterns: Iterable[str]) -> bool:
    """Whether `path` matches an exclude glob (relative to `root`; `dir/` and `**` work)."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")
    if relative.startswith("../"):
        relative = path.as_posix()
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.strip().lstrip("./") if pattern.startswith("./") else pattern.strip()
        bare = pattern.rstrip("/").removesuffix("/**")
        if "/" not in bare:
            if any(fnmatch.fnmatchcase(part, bare) for part in parts):
                return True
        elif fnmatch.fnmatchcase(relative, bare) or fnmatch.fnmatchcase(relative, bare + "/*") or relative.startswith(bare + "/"):
            return True
    return False


def is_helm_template(path: Path) -> bool:
    """A file inside a chart's `templates/` folder (a Chart.yaml beside that folder)."""
    parent = path.parent
    while parent.name and parent != parent.parent:
        if parent.name == "templates" and (parent.parent / "Chart.yaml").is_file():
            return True
        parent = parent.parent
    return False


def walk(folder: Path) -> Iterator[Path]:
    """Manifest files below a folder, sorted, not following symlinked folders."""
    stack = [folder]
    found: list[Path] = []
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIP_DIRS:
                        stack.append(Path(entry.path))
                elif is_manifest_name(entry.name):
                    found.append(Path(entry.path))
            except OSError:
                continue
    return iter(sorted(found))


def project_files(root: Path) -> list[Path]:
    """Every manifest file of the project: git's view (tracked + untracked, not ignored) if any."""
    if (root / ".git").exists():
        try:
            listing = subprocess.run(
                ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                capture_output=True,
                timeout=30,
                check=True,
            ).stdout
            names = {name for name in listing.decode("utf-8", "surrogateescape").split("\0") if name}
            return sorted(root / name for name in names if is_manifest_name(name) and (root / name).is_file())
        except (OSError, subprocess.SubprocessError):
            pass
    return list(walk(root))
