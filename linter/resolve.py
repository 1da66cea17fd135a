"""Settings per file: each file is linted with the nearest configuration above it.

As ruff's workspace resolver does, the nearest `.fieldwarden.yaml` (or pyproject.toml with
[tool.fieldwarden]) is looked up once per folder and each configuration is loaded (with the
chain of files it `extend`s) once per run, so a run over thousands of files in a hundred
folders costs a hundred lookups. `--config FILE` stands for every file's configuration.
Command-line choices (`--select`, `--ignore`, `--fail-on`, `--exclude`) apply on top of
whichever configuration a file gets.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path
    from typing import Any, Callable, Iterable, NamedTuple
else:
    from ..policies.records import NamedTuple

from ..policies.config import MAX_CONFIG_BYTES, ConfigChain, Settings, load_config_chain
from .discover import CONFIG_NAMES, excluded, find_git_root, git_root

if TYPE_CHECKING:
    Check = Callable[[dict[str, Any], str, str], None]  # validate(data, text, source)


class FileConfig(NamedTuple):
    """The settings that apply to a file and where they come from."""

    settings: Settings
    files: tuple[Path, ...]  # configuration files, the nearest first then what it extends; () for defaults
    excludes: tuple[tuple[Path | str, tuple[str, ...]], ...]  # (folder the patterns are relative to, patterns)
    units: tuple[tuple[Path, tuple[str, ...]], ...] = ()  # `units:` globs, the same way


class Resolver:
    """Finds and caches the configuration of each folder for one lint run."""

    def __init__(
        self,
        forced: Path | None,
        overrides: Callable[[Settings], Settings],
        check: Check | None = None,
        cli_excludes: Iterable[str] = (),
        cli_base: Path | str | None = None,
    ) -> None:
        self.forced = forced
        self._overrides = overrides
        self._check = check
        self._cli_excludes = tuple(cli_excludes)
        self._cli_base = cli_base or os.getcwd()
        self._nearest: dict[str, str | None] = {}  # absolute folder -> its configuration file
        self._configs: dict[str | None, FileConfig] = {}  # configuration file -> what it yields

    def config_file(self, folder: str) -> str | None:
        """The configuration that applies in `folder` (absolute): its own, else its parent's."""
        found = self._nearest.get(folder, "")
        if found != "":
            return found
        climbed: list[str] = []
        current = folder
        result: str | None = None
        while True:
            known = self._nearest.get(current, "")
            if known != "":
                result = known
                break
            climbed.append(current)
            own = _own_config(current)
            if own is not None:
                result = own
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for visited in climbed:
            self._nearest[visited] = result
        return result

    def load(self, config: str | None) -> FileConfig:
        """What a configuration file (or none: the defaults) yields, once per run."""
        known = self._configs.get(config)
        if known is not None:
            return known
        if config is None:
            chain = ConfigChain({}, (), ())
        else:
            from pathlib import Path

            chain = load_config_chain(Path(config), self._check, within=find_git_root(Path(config).absolute().parent))
        settings = self._overrides(Settings(chain.data, config))
        excludes: tuple[tuple[Path | str, tuple[str, ...]], ...] = chain.excludes
        if self._cli_excludes:
            excludes = (*excludes, (self._cli_base, self._cli_excludes))
        found = self._configs[config] = FileConfig(settings, chain.files, excludes, chain.units)
        return found

    def for_file(self, path: str | PathLike[str]) -> FileConfig:
        """The configuration of a file (which need not exist: stdin's --stdin-filename)."""
        if self.forced is not None:
            return self.load(str(self.forced))
        return self.load(self.config_file(os.path.dirname(os.path.abspath(path))))

    def unit_globs(self) -> list[tuple[str, str]]:
        """The `units:` globs of every configuration loaded so far: (pattern, folder it is relative to)."""
        found: dict[tuple[str, str], None] = {}
        for config in self._configs.values():
            for base, patterns in config.units:
                for pattern in patterns:
                    found[(pattern, os.fspath(base))] = None
        return list(found)

    def excluded(self, path: str | PathLike[str]) -> bool:
        """Whether the file's own configuration (or --exclude) excludes it."""
        return any(excluded(path, base, patterns) for base, patterns in self.for_file(path).excludes)


def _own_config(folder: str) -> str | None:
    """The configuration file in this very folder, if any."""
    for name in CONFIG_NAMES:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    pyproject = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            with open(pyproject, encoding="utf-8", errors="replace") as handle:
                if "[tool.fieldwarden" in handle.read(MAX_CONFIG_BYTES + 1):
                    return pyproject
        except OSError:
            pass
    return None


def project_root(start: str) -> str | None:
    """The project whose manifests are loaded as context, seen from `start` (absolute, as pathlib shows it).

    The folder of the outermost configuration between `start` and the git repository's
    root (or the filesystem's root outside git), else the git repository. A configuration
    nested below `start` never narrows it; one in a subfolder above `start` but below
    a configuration further up does not either.
    """
    git = git_root(start)
    top = None
    folder = start
    while True:
        if _own_config(folder) is not None:
            top = folder
        parent = os.path.dirname(folder)
        if (git is not None and folder == git) or parent == folder:
            break
        folder = parent
    return top if top is not None else git


def common_root(paths: Iterable[str | PathLike[str]]) -> str | None:
    """The project of the files themselves, when there is none above the current folder.

    Run from a folder outside any project (no configuration, no git repository) on files
    below it that have a configuration of their own: the project is the one seen from
    the files' folders, if they all agree on one; else there is none (no context).
    """
    roots = {project_root(folder) for folder in {os.path.dirname(os.path.abspath(p)) for p in paths}}
    return roots.pop() if len(roots) == 1 else None
