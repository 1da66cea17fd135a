"""How `fieldwarden serve` learns that a gunicorn worker booted, or why none did.

gunicorn's master binds the port and forks the workers; only a worker that loaded the
application and its TLS certificate can answer. `BootReport` is made in the master before
gunicorn starts, and its two pipes are inherited by every worker it forks:

- the token pipe holds one byte: the first worker to boot takes it and runs `announce`
  (`serve` prints "serving https://..."), before it accepts its first connection; the other
  workers, and those started later in place of one that ended, find it empty;
- a worker that fails before it has booted writes one line, its error, into the reasons
  pipe; once gunicorn has stopped, the master reads them (`reasons()`). (Each worker also
  unwinds through `serve_wsgi` when it exits; only the master reads and says anything.)

So "serving" is said once and only after a worker is up, and a server that stops because
no worker could boot says why. Pipe writes of at most PIPE_BUF bytes are atomic, so lines
from several workers never interleave.
"""

from __future__ import annotations

import os
import select
from typing import Callable

TOKEN = b"1"
MAX_REASON = 1000  # characters; far below PIPE_BUF once UTF-8 encoded


class BootReport:
    """The pipes between the master and its workers; see the module docstring."""

    def __init__(self, announce: Callable[[], None]) -> None:
        self.announce = announce
        self._token_read, self._token_write = os.pipe()
        self._reasons_read, self._reasons_write = os.pipe()
        for fd in (self._token_read, self._reasons_read, self._reasons_write):
            os.set_blocking(fd, False)  # (shared with the workers: the same open pipe)
        os.write(self._token_write, TOKEN)

    def booted(self) -> None:
        """In a worker that has booted: announce the server if no worker did before."""
        try:
            taken = os.read(self._token_read, 1)
        except BlockingIOError:
            return
        if taken == TOKEN:
            self.announce()

    def failed(self, error: BaseException) -> None:
        """In a worker that could not boot: leave the reason for the master."""
        text = " ".join(f"{type(error).__name__}: {error}".split())[:MAX_REASON]
        try:
            os.write(self._reasons_write, text.encode("utf-8", "replace") + b"\n")
        except OSError:
            pass  # the pipe is full of earlier workers' reasons: those are said

    def announced(self) -> bool:
        """In the master: whether a worker has booted (and taken the token)."""
        readable, _, _ = select.select([self._token_read], [], [], 0)
        return not readable

    def reasons(self) -> list[str]:
        """In the master, after gunicorn stopped: the workers' reasons, each said once, in order."""
        data = b""
        while True:
            try:
                chunk = os.read(self._reasons_read, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        seen: list[str] = []
        for line in data.decode("utf-8", "replace").splitlines():
            if line and line not in seen:
                seen.append(line)
        return seen

    def close(self) -> None:
        for fd in (self._token_read, self._token_write, self._reasons_read, self._reasons_write):
            try:
                os.close(fd)
            except OSError:
                pass
