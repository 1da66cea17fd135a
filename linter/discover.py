"""Which files to lint, which to load as context, and where the project's root is."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
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
    if not patterns:
        return False
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


_LISTING = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
_STARTED: dict[str, tuple[int, int]] = {}  # repository root -> (pid, pipe) of a listing already running


def start_listing(start: str) -> None:
    """Start git's listing of the repository around `start` now, ahead of need.

    A one-file run would otherwise wait ~2 ms for git; started before the rules are
    imported, git runs on another core meanwhile. `project_files` collects it when it is
    asked for that repository; a listing nobody asks for ends with the run.
    """
    if not hasattr(os, "posix_spawnp"):  # pragma: no cover - Windows
        return
    root = find_git_root(Path(os.path.abspath(start)))
    if root is not None and os.fspath(root) not in _STARTED:
        started = _spawn_git(root, *_LISTING)
        if started is not None:
            _STARTED[os.fspath(root)] = started


def _git_output(root: Path, *args: str) -> bytes | None:
    """Standard output of `git -C root ARGS`, or None when git is missing or fails."""
    started = _STARTED.pop(os.fspath(root), None) if args == _LISTING else None
    if started is None:
        if not hasattr(os, "posix_spawnp"):  # pragma: no cover - Windows
            import subprocess

            try:
                return subprocess.run(["git", "-C", os.fspath(root), *args], capture_output=True,
                                      timeout=30, check=True).stdout
            except (OSError, subprocess.SubprocessError):
                return None
        started = _spawn_git(root, *args)
    return _collect(*started) if started is not None else None


def _spawn_git(root: Path, *args: str) -> tuple[int, int] | None:
    """Start `git -C root ARGS`: its pid and the pipe its standard output goes to.

    Spawned directly: importing subprocess (with signal, selectors and locale) costs
    ~3 ms, 5% of a pre-commit run on one small file.
    """
    read, write = os.pipe()  # both ends close on exec; the child gets `write` as its stdout
    try:
        pid = os.posix_spawnp(
            "git", ["git", "-C", os.fspath(root), *args], os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, write, 1), (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)],
        )
    except OSError:
        os.close(read)
        return None
    finally:
        os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> bytes | None:
    """The output of a git started by _spawn_git, once it has exited (None if it failed)."""
    with open(read, "rb") as pipe:
        output = pipe.read()
    _, status = os.waitpid(pid, 0)
    return output if os.waitstatus_to_exitcode(status) == 0 else None


def _parts(name: str) -> list[str]:
    return name.split("/")


_GO_FILES: dict[str, tuple[str, ...]] = {}  # repository root -> the .go files its last listing held


def go_files(root: Path | str) -> tuple[str, ...] | None:
    """The `.go` files (project-relative) of the git listing `project_files` made of `root`, None if it made none.

    Go tests name their test data (units/gotests.py); the listing is read once for both.
    """
    return _GO_FILES.get(os.path.abspath(root))


def project_files(root: Path) -> list[Path]:
    """Every manifest file of the project: git's view (tracked + untracked, not ignored) if any."""
    if (root / ".git").exists():
        listing = _git_output(root, *_LISTING)
        if listing is not None:
            listed = listing.decode("utf-8", "surrogateescape").split("\0")
            names = {name for name in listed if is_manifest_name(name)}
            _GO_FILES[os.path.abspath(root)] = tuple(name for name in listed if name.endswith(".go"))
            base = os.fspath(root)
            # sorted as paths compare (part by part), before making 2,000 Path objects
            return [root / name for name in sorted(names, key=_parts) if os.path.isfile(os.path.join(base, name))]
    return list(walk(root))
