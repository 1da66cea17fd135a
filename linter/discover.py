"""Which files to lint, which to load as context, and where the project's root is."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path
    from typing import Callable, Iterable, Iterator

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
CONFIG_NAMES = (".fieldwarden.yaml", ".fieldwarden.yml")
_SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".fieldwarden_cache", ".tox", ".nox", ".venv", "venv", "__pycache__"}
)


def find_git_root(start: Path) -> Path | None:
    """The nearest folder upward holding `.git` (a folder, or a file for worktrees)."""
    found = git_root(os.fspath(start))
    return None if found is None else type(start)(found)


def git_root(start: str) -> str | None:
    """The nearest folder upward holding `.git`, of a path as a string (a one-file run imports no pathlib)."""
    return folder_above(start, ".git", os.path.exists)


def folder_above(start: str, name: str, exists: Callable[[str], bool]) -> str | None:
    """The nearest of `start` and the folders above it that holds `name` (as `exists` tells), or None."""
    folder = start
    while True:
        if exists(os.path.join(folder, name)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def is_manifest_name(name: str) -> bool:
    """`*.yaml`, `*.yml` or `*.json`."""
    return name.lower().endswith(MANIFEST_SUFFIXES)


def excluded(path: str | PathLike[str], root: str | PathLike[str], patterns: Iterable[str]) -> bool:
    """Whether `path` matches an exclude glob (relative to `root`; `dir/` and `**` work)."""
    if not patterns:
        return False
    import fnmatch

    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")
    if relative.startswith("../"):
        relative = os.fspath(path).replace(os.sep, "/")  # (Path.as_posix)
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


def is_helm_template(path: str | PathLike[str]) -> bool:
    """A file inside a chart's `templates/` folder (a Chart.yaml beside that folder).

    `path` as pathlib shows it (no `.` part, no doubled or trailing `/`); its folders are looked at up
    to its first part (an absolute path: up to the root)."""
    parent = os.path.dirname(os.fspath(path))
    while True:
        name = os.path.basename(parent)
        if not name:
            return False
        grand = os.path.dirname(parent)
        if name == "templates" and os.path.isfile(os.path.join(grand, "Chart.yaml")):
            return True
        parent = grand


def walk(folder: Path) -> Iterator[Path]:
    """Manifest files below a folder, sorted, not following symlinked folders."""
    from pathlib import Path

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
    root = git_root(os.path.abspath(start))
    if root is not None and root not in _STARTED:
        started = _spawn_git(root, *_LISTING)
        if started is not None:
            _STARTED[root] = started


def _git_output(root: str | PathLike[str], *args: str) -> bytes | None:
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


def _spawn_git(root: str | PathLike[str], *args: str) -> tuple[int, int] | None:
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
    listed = _git_listed(os.fspath(root))
    return list(walk(root)) if listed is None else [root / name for name in listed]


def project_names(root: str) -> list[str]:
    """project_files of a root given as a string (as pathlib shows it), as strings: `root/name`."""
    listed = _git_listed(root)
    if listed is None:
        from pathlib import Path

        return [str(path) for path in walk(Path(root))]
    return [os.path.join(root, name) for name in listed]


def _git_listed(base: str) -> list[str] | None:
    """The manifest files git lists in `base` (tracked + untracked, not ignored), project-relative and
    sorted as paths compare (part by part); None when `base` is no repository root or git fails."""
    if not os.path.exists(os.path.join(base, ".git")):
        return None
    listing = _git_output(base, *_LISTING)
    if listing is None:
        return None
    listed = listing.decode("utf-8", "surrogateescape").split("\0")
    names = {name for name in listed if is_manifest_name(name)}
    _GO_FILES[os.path.abspath(base)] = tuple(name for name in listed if name.endswith(".go"))
    return [name for name in sorted(names, key=_parts) if os.path.isfile(os.path.join(base, name))]
