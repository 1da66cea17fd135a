"""Helm rendering children kept for the next chart: a child that answered every set of a chart renders the next.

Starting a child costs more than most charts' renders (the interpreter, then Helm's Go library:
~0.15 s of CPU each); a repository of 44 charts started 44. A child reads one request a line
(helm_child.py) and stays sealed as it started (its memory limit, no sockets), so it may serve
several charts in turn, one at a time. Only a child that answered every set of its request is
kept, while a chart still waits for one and its memory is near a fresh child's (`give_back`);
one that failed, went over time or was killed is never reused. Idle children are closed
when the run's renders end (`close_idle`) or at exit, and end by themselves when the linter does
(their stdin reaches its end). Their HOME and TMPDIR are a private folder of the pool, never a
chart's copy.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import IO, Any

_COMMAND = "from fieldwarden.linter.units.helm_child import main; main()"


class Child:
    """A running child: its process, the lines it answered (read by a thread), its error output."""

    def __init__(self, key: tuple[Any, ...], process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
        self.key = key
        self.process = process
        self.errors = errors
        self.kept = False  # it is one of the pool's kept children (_KEPT)
        self.taken = False  # a chart's sets are sent to it (_TAKEN counts it)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, request: bytes) -> None:
        """One request line; OSError when the child ended (its error output says why)."""
        assert self.process.stdin is not None
        self.process.stdin.write(request + b"\n")
        self.process.stdin.flush()

    def error_output(self, since: int) -> str:
        self.errors.seek(since)
        return self.errors.read().decode("utf-8", "replace")

    def error_size(self) -> int:
        self.errors.seek(0, os.SEEK_END)
        return self.errors.tell()

    def end(self, kill: bool) -> None:
        """Stop it (kill) or let it finish (stdin closed), then wait for it and its reader."""
        _untaken(self)
        try:
            if kill and self.process.poll() is None:
                self.process.kill()
            elif self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            self.process.kill()
        self.process.wait()
        self.reader.join()
        self.errors.close()
        if self.kept:
            with _LOCK:
                self.kept = False
                _KEPT[0] -= 1


_LOCK = threading.Lock()
_IDLE: list[Child] = []
_HOME: list[str] = []  # the pool's private folder, made on first use
_WAITING: list[int | None] = [None]  # charts still to be rendered (expect), None when not known
_KEPT = [0]  # kept children alive: _KEEP at most (one per render slot), other renders start children of their own
_KEEP = [1]
_TAKEN = [0]  # children rendering a chart's sets now


def _home() -> str:
    if not _HOME:
        _HOME.append(tempfile.mkdtemp(prefix="fieldwarden-helm-home-"))
    return _HOME[0]


def take(memory: int) -> Child:
    """An idle child started for this memory limit, else a new one; OSError when none can start."""
    key = _key(memory)
    with _LOCK:
        waiting = _WAITING[0]
        if waiting is not None:
            _WAITING[0] = max(waiting - 1, 0)
        taken = next((_IDLE.pop(index) for index, child in enumerate(_IDLE)
                      if child.key == key and child.process.poll() is None), None)
    if taken is None:
        taken = _start(key)
    with _LOCK:
        taken.taken = True
        _TAKEN[0] += 1
    return taken


def _untaken(child: Child) -> None:
    with _LOCK:
        if child.taken:
            child.taken = False
            _TAKEN[0] -= 1


def core_idle() -> bool:
    """Whether fewer children render than there are cores: what this process does meanwhile does
    not take a core from a render."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    with _LOCK:
        return _TAKEN[0] < cores


def prestart(count: int, memory: int) -> None:
    """Start children for charts about to render, idle until taken: a child's start (~0.2 s: the
    interpreter, then Helm's Go library) overlaps the reading and copying of the charts, which
    would otherwise come before it (kyverno's main chart: ~0.1-0.2 s of its critical path). At most
    `count` idle children in all; none when one cannot start (`take` says why, later)."""
    key = _key(memory)
    with _LOCK:
        count -= sum(1 for child in _IDLE if child.key == key and child.process.poll() is None)
    for _ in range(count):
        try:
            child = _start(key)
        except OSError:
            return
        with _LOCK:
            _IDLE.append(child)


def _key(memory: int) -> tuple[Any, ...]:
    return (memory, sys.executable, os.environ.get("HELM_C_LIB"), os.environ.get("SYSTEMROOT"))


def _start(key: tuple[Any, ...]) -> Child:
    with _LOCK:
        home = _home()
    env = {"HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    for name in ("HELM_C_LIB", "SYSTEMROOT"):
        if name in os.environ:
            env[name] = os.environ[name]
    errors = tempfile.TemporaryFile(dir=home)
    try:
        # -I: the child's imports come from the installation alone, never from the folder it runs in
        process = subprocess.Popen([sys.executable, "-I", "-c", _COMMAND], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=errors, cwd=home, env=env)
    except OSError:
        errors.close()
        raise
    return Child(key, process, errors)


KEPT_MEMORY = 40 << 20  # bytes of a child's own memory (RssAnon) beyond which it is not kept: a fresh one holds ~23 MiB


def expect(charts: int | None, keep: int = 1) -> None:
    """How many charts are still to be rendered in this run (None: not known, keep children), and how
    many children to keep for them at most: one per chart rendered at once (renders.py's slots)."""
    with _LOCK:
        _WAITING[0] = charts
        _KEEP[0] = max(keep, 1)


def give_back(child: Child) -> None:
    """A child that answered every set of its request: kept for the next chart, else ended.

    A child per chart rendered at once is kept at most (`expect`'s `keep`; prometheus-community's 44
    charts on two cores: 2 children started instead of ~16 with one kept, ~1.3 s less CPU, the same
    peak). Ended when as many are kept already, when no chart waits for it (`expect`), when it holds
    more memory than a fresh child does by much (a large chart's render, which the Go runtime keeps:
    it would sit beside the linter while it places that chart's fields), or when its data is over a
    quarter of its limit (what an earlier chart left counts against the next's). Where its sizes
    cannot be read (no /proc), a child per chart."""
    _untaken(child)
    sizes = memory(child.process.pid)
    with _LOCK:
        waiting = _WAITING[0]
        kept = (waiting is None or waiting > len(_IDLE)) and 0 <= sizes[0] < child.key[0] // 4 \
            and 0 <= sizes[1] < KEPT_MEMORY and (child.kept or _KEPT[0] < _KEEP[0])
        if kept:
            if not child.kept:
                child.kept = True
                _KEPT[0] += 1
            _IDLE.append(child)
    if not kept:
        child.end(kill=False)


def memory(pid: int) -> tuple[int, int]:
    """The process's data segment (VmData, what RLIMIT_DATA counts) and its own resident memory
    (RssAnon), in bytes; -1 for what cannot be read."""
    found = {"VmData:": -1, "RssAnon:": -1}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                name = line.split(None, 1)[0] if line.strip() else ""
                if name in found:
                    found[name] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found["VmData:"], found["RssAnon:"]


def close_idle() -> None:
    """End the idle children (the run's renders are done) and remove the pool's folder."""
    with _LOCK:
        idle = list(_IDLE)
        _IDLE.clear()
        home = _HOME.pop() if _HOME else None
        _WAITING[0] = None
        _KEEP[0] = 1
    for child in idle:
        child.end(kill=False)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


atexit.register(close_idle)
