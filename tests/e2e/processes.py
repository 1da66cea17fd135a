"""Child processes that cannot outlive the tests, and bounded polling.

A `Process` writes stdout and stderr to one log file, runs in its own session (a Ctrl-C on pytest
reaches pytest, which stops the children in order), and gets SIGTERM from the kernel when the
thread that started it dies (Linux parent-death signal: pytest killed with SIGKILL leaves nothing
behind). Processes still running at interpreter exit are stopped by an atexit hook. `stop()` is
SIGTERM, a bounded wait, then SIGKILL.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeVar

T = TypeVar("T")
PR_SET_PDEATHSIG = 1
_running: set[Process] = set()
_lock = threading.Lock()


def _parent_death_signal(parent: int) -> Callable[[], None]:
    def arm() -> None:  # runs in the child between fork and exec
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGTERM)
    return arm


class Process:
    """`argv` started with its output appended to `log`."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log = log
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        # The parent-death signal follows the starting *thread*: armed only from the main thread,
        # so that a helper thread's exit cannot kill the process (the atexit hook covers the rest).
        arm = _parent_death_signal(os.getpid()) if threading.current_thread() is threading.main_thread() else None
        with open(self.log, "ab") as out:
            out.write(f"--- {time.strftime('%H:%M:%S')} {' '.join(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          env=self.env, cwd=self.cwd, start_new_session=True, preexec_fn=arm)
        with _lock:
            _running.add(self)
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def signal(self, number: int) -> None:
        if self.running():
            assert self.popen is not None
            self.popen.send_signal(number)

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM, wait up to `grace` seconds, then SIGKILL; the exit status (None: never started)."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        with _lock:
            _running.discard(self)
        return self.popen.returncode

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])


@atexit.register
def _stop_all() -> None:
    with _lock:
        left = list(_running)
    for process in left:
        process.stop(grace=5)


def wait_for(check: Callable[[], T | None], what: str, timeout: float, interval: float = 0.1,
             failed: Callable[[], str | None] | None = None) -> T:
    """Poll `check` until it returns something truthy (returned), at most `timeout` seconds.

    `failed` may say why waiting longer is pointless (a process died): its message ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        reason = failed() if failed is not None else None
        if reason:
            raise AssertionError(f"gave up waiting for {what}: {reason}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout:g} s")
        time.sleep(interval)
