"""linter/discover.py: the project's files as git sees them, listed ahead of need or not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fieldwarden.linter import discover
from tests.helpers import write


def git_repo(folder: Path, *names: str) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=env)
    write(folder, ".gitignore", "ignored/\n")
    for name in names:
        write(folder, name, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    return folder


def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The git command lines started from now on."""
    commands: list[list[str]] = []
    spawn = os.posix_spawnp

    def counting(file: str, args: list[str], *rest: object, **named: object) -> int:
        commands.append(list(args))
        return spawn(file, args, *rest, **named)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "posix_spawnp", counting)
    return commands


def test_a_listing_started_early_is_the_one_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = git_repo(tmp_path, "a.yaml", "sub/b.yml", "ignored/c.yaml", "notes.txt")
    expected = discover.project_files(repo)
    assert expected == [repo / "a.yaml", repo / "sub/b.yml"]
    commands = spawned(monkeypatch)
    discover.start_listing(os.fspath(repo / "sub"))  # from a folder inside: the repository's listing
    assert discover.project_files(repo) == expected
    assert len(commands) == 1, "git ran once, early"
    assert discover.project_files(repo) == expected  # the next call lists afresh
    assert len(commands) == 2


def test_a_listing_of_another_repository_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = git_repo(tmp_path / "one", "a.yaml")
    other = git_repo(tmp_path / "other", "b.yaml")
    discover.start_listing(os.fspath(one))
    assert discover.project_files(other) == [other / "b.yaml"]
    assert discover.project_files(one) == [one / "a.yaml"]


def test_outside_git_nothing_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "a.yaml", "kind: ConfigMap\n")
    if discover.find_git_root(tmp_path) is not None:
        pytest.skip("the temporary folder is inside a git repository here")
    commands = spawned(monkeypatch)
    discover.start_listing(os.fspath(tmp_path))
    assert commands == []
    assert discover.project_files(tmp_path) == [tmp_path / "a.yaml"]
