"""The workers' metrics folder: new, private, exported, held by a lock; earlier servers' leftovers removed."""

from __future__ import annotations

import fcntl
import os
import stat
import time
from pathlib import Path

import pytest

from fieldwarden.webhook.server import multiproc


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(multiproc.ENV, "/nowhere")  # (create() sets it; monkeypatch puts it back)


def test_a_new_private_folder_named_in_the_environment(tmp_path: Path) -> None:
    folder = multiproc.create(tmp_path)
    try:
        assert folder.path.parent == tmp_path and folder.path.name.startswith(multiproc.PREFIX)
        assert os.environ[multiproc.ENV] == str(folder.path)
        info = folder.path.stat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
        assert [path.name for path in folder.path.iterdir()] == [multiproc.LOCK_NAME]
        second = multiproc.create(tmp_path)  # another server beside it: its own folder; this one kept
        assert second.path != folder.path and folder.path.is_dir()
        second.remove()
    finally:
        folder.remove()
    assert not folder.path.exists()


def test_the_folder_is_held_while_the_server_runs(tmp_path: Path) -> None:
    folder = multiproc.create(tmp_path)
    try:
        fd = os.open(folder.path / multiproc.LOCK_NAME, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        assert multiproc.sweep(tmp_path) == [] and folder.path.is_dir()
    finally:
        folder.remove()


def test_leftovers_of_servers_that_are_gone_are_removed(tmp_path: Path) -> None:
    crashed = tmp_path / f"{multiproc.PREFIX}crashed"
    crashed.mkdir()
    (crashed / multiproc.LOCK_NAME).write_text("")
    (crashed / "counter_7.db").write_bytes(b"\0" * 64)
    unlocked_old = tmp_path / f"{multiproc.PREFIX}old"
    unlocked_old.mkdir()
    an_hour_ago = time.time() - 3600
    os.utime(unlocked_old, (an_hour_ago, an_hour_ago))
    being_made = tmp_path / f"{multiproc.PREFIX}new"  # no lock file yet, just made: another server's, starting
    being_made.mkdir()
    someone_elses = tmp_path / "other-folder"
    someone_elses.mkdir()
    folder = multiproc.create(tmp_path)
    try:
        assert not crashed.exists() and not unlocked_old.exists()
        assert being_made.is_dir() and someone_elses.is_dir() and folder.path.is_dir()
    finally:
        folder.remove()


def test_folders_of_other_users_are_left_alone(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a folder owned by another user")
    theirs = tmp_path / f"{multiproc.PREFIX}theirs"
    theirs.mkdir()
    (theirs / multiproc.LOCK_NAME).write_text("")
    os.chown(theirs, 65534, 65534)
    assert multiproc.sweep(tmp_path) == [] and theirs.is_dir()


def test_only_the_process_that_made_it_removes_it(tmp_path: Path) -> None:
    folder = multiproc.create(tmp_path)
    try:
        pid = os.fork()
        if pid == 0:  # a gunicorn worker leaving through `fieldwarden serve`'s stack
            folder.remove()
            os._exit(0)
        os.waitpid(pid, 0)
        assert folder.path.is_dir()
    finally:
        folder.remove()
    assert not folder.path.exists()
