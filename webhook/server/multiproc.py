"""The folder where gunicorn's workers keep their metrics (prometheus-client's multiprocess mode).

`fieldwarden serve` calls `create()` in the master, before gunicorn forks a worker and
before anything imports prometheus_client (which reads PROMETHEUS_MULTIPROC_DIR once,
at import). The folder is:

- new and empty: made by `tempfile.mkdtemp` for this run, so no counter or gauge of an
  earlier run (or of another server on the machine) is ever added into this one's;
  whatever PROMETHEUS_MULTIPROC_DIR said before is replaced;
- private: mode 0700, owned by the server's user (a world-writable folder would let
  any local user forge the pod's metrics);
- under the temporary folder (`$TMPDIR`, else `/tmp`): the only writable place in the
  Helm chart's pods, whose root filesystem is read-only with an emptyDir at /tmp;
- held: the master keeps an exclusive `flock` on a file in it while it runs. The
  emptyDir outlives a crashed container, so each start removes the folders of earlier
  servers whose lock nobody holds any more (their master is gone, however it ended);
  `remove()` deletes this run's folder when gunicorn has stopped.

This module imports nothing from prometheus_client, so the master stays free of it
until a worker exits (`process_dead`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "fieldwarden-metrics-"
LOCK_NAME = "master.lock"
# A folder without its lock file may be one another server is making right now.
UNLOCKED_GRACE_SECONDS = 60.0


class MetricsFolder:
    """This run's folder, and the lock that marks it as in use (held until `remove()`)."""

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self._lock_fd = lock_fd
        self._owner = os.getpid()

    def remove(self) -> None:
        """Delete the folder and release the lock (when the server has stopped).

        Only in the process that made it: a gunicorn worker leaves through the same
        stack (its SystemExit unwinds `fieldwarden serve` too), and must not take the
        folder from the workers still running.
        """
        if os.getpid() != self._owner:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def create(parent: str | Path | None = None) -> MetricsFolder:
    """Make this run's folder under `parent` (default: the temporary folder) and export it in ENV."""
    base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    sweep(base)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))  # mode 0700, new
    lock_fd = os.open(path / LOCK_NAME, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.environ[ENV] = str(path)
    return MetricsFolder(path, lock_fd)


def sweep(base: Path) -> list[Path]:
    """Remove the folders in `base` that earlier servers of this user left behind; the removed ones."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        if _abandoned(Path(entry.path), info.st_mtime):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def _abandoned(path: Path, mtime: float) -> bool:
    try:
        fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return time.time() - mtime > UNLOCKED_GRACE_SECONDS
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its server runs
    finally:
        os.close(fd)  # (releases the lock, if taken)
    return True


def process_dead(pid: int) -> None:
    """A worker exited (gunicorn's `child_exit`, in the master): drop its live gauges.

    Its counters and histograms stay: the pod's totals must never go down.
    """
    directory = os.environ.get(ENV)
    if directory:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
