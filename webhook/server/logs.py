"""JSON-lines logs: one object per line, carrying the uid of the request being answered.

`bind(uid=...)` puts fields into the context of the current thread (a context
variable), so every line logged while a request is handled carries them, the lines of
a rule's error included. `configure()` installs the JSON handler once; the webhook
server has it write debug and info lines in batches (`JsonLinesHandler`).
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import threading
import time
from typing import IO, Any, Mapping

import orjson

LOGGER = logging.getLogger("fieldwarden.webhook")
_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("fieldwarden_log_context", default={})
_LEVEL_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning", logging.ERROR: "error",
                logging.CRITICAL: "critical"}
_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def _timestamp(created: float) -> str:
    """`2026-11-22T07:51:06.456Z` (the second's text is made once per second)."""
    global _second
    second = int(created)
    cached = _second
    if cached[0] != second:
        cached = _second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{cached[1]}.{int((created - second) * 1000):03d}Z"


def _entry(created: float, level: int, logger: str, message: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "time": _timestamp(created),
        "level": _LEVEL_NAMES.get(level) or logging.getLevelName(level).lower(),
        "logger": logger,
        "message": message,
    }
    entry.update(_CONTEXT.get())
    entry.update(fields)
    return entry


def _line(entry: Mapping[str, Any]) -> str:
    return orjson.dumps(entry, default=str).decode()


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", ...fields}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = _entry(record.created, record.levelno, record.name, record.getMessage(), getattr(record, "fields", {}))
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return _line(entry)


class JsonLinesHandler(logging.Handler):
    """JSON lines to a stream; without one, to whatever sys.stderr is when a line is written
    (servers and tests swap it).

    With `batch_seconds`, debug and info lines wait (at most that long, and at most
    MAX_PENDING lines) to be written together: a write is a system call that lets
    another request thread take the GIL, and one per admission line cost the webhook
    6% of its throughput. Warnings and errors are written at once, after the lines
    waiting before them; `flush()` (at exit, by logging.shutdown) writes what waits.
    """

    MAX_PENDING = 256

    def __init__(self, stream: IO[str] | None = None, batch_seconds: float = 0.0) -> None:
        super().__init__()
        self.stream = stream
        self.batch_seconds = batch_seconds
        self.setFormatter(JsonFormatter())
        self._pending: list[str] = []
        self._flusher_pid = 0  # the process whose flusher thread runs (a fork has none)
        os.register_at_fork(after_in_child=self._pending.clear)  # the parent writes what it holds

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.write_line(self.format(record), record.levelno)
        except Exception:
            self.handleError(record)

    def write_entry(self, entry: Mapping[str, Any], level: int) -> None:
        """One line, without a LogRecord (`event`'s way when this handler is the only one)."""
        self.write_line(_line(entry), level)

    def write_line(self, text: str, level: int) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._pending.append(text)
            if level >= logging.WARNING or not self.batch_seconds or len(self._pending) >= self.MAX_PENDING:
                self._write_pending()
            elif self._flusher_pid != os.getpid():
                self._flusher_pid = os.getpid()
                threading.Thread(target=self._flush_every, name="fieldwarden-log-flush", daemon=True).start()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        text = "\n".join(self._pending) + "\n"
        lost = len(self._pending)
        self._pending.clear()
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except Exception:  # a closed or broken stream: as logging does, say so on stderr and go on
            self.handleError(logging.makeLogRecord({"msg": f"{lost} JSON log line(s) could not be written"}))

    def _flush_every(self) -> None:
        while True:
            time.sleep(self.batch_seconds)
            self.flush()


def configure(
    stream: IO[str] | None = None, level: int | str | None = None, batch_seconds: float | None = None
) -> JsonLinesHandler:
    """Send the webhook's logs to `stream` (stderr) as JSON lines, at `level` (first time: info).

    The handler is installed once; a later call changes the level and the batching only.
    """
    if level is not None:
        LOGGER.setLevel(level.upper() if isinstance(level, str) else level)
    handler = next((h for h in LOGGER.handlers if isinstance(h, JsonLinesHandler)), None)
    if handler is None:
        handler = JsonLinesHandler(stream)
        LOGGER.addHandler(handler)
        if level is None:
            LOGGER.setLevel(logging.INFO)
        LOGGER.propagate = False
    if batch_seconds is not None:
        handler.batch_seconds = batch_seconds
    return handler


class bind:  # noqa: N801 - used as a function: `with logs.bind(uid=...):`
    """Add `fields` to every line logged inside the block (in this thread)."""

    __slots__ = ("_fields", "_token")

    def __init__(self, **fields: Any) -> None:
        self._fields = fields

    def __enter__(self) -> None:
        self._token = _CONTEXT.set({**_CONTEXT.get(), **self._fields})

    def __exit__(self, *exc: object) -> None:
        _CONTEXT.reset(self._token)


def enabled(level: int) -> bool:
    """Whether a line at `level` would be logged (to skip building its fields)."""
    return LOGGER.isEnabledFor(level)


def event(message: str, /, level: int = logging.INFO, exc_info: bool = False, **fields: Any) -> None:
    """Log `message` with structured `fields`."""
    if not LOGGER.isEnabledFor(level):
        return
    handlers = LOGGER.handlers
    if (not exc_info and len(handlers) == 1 and type(handlers[0]) is JsonLinesHandler and not LOGGER.filters
            and not handlers[0].filters):
        # The usual case, a line per admission request: straight to the one handler,
        # without a LogRecord (which costs more than the line).
        if level >= handlers[0].level:
            handlers[0].write_entry(_entry(time.time(), level, LOGGER.name, message, fields), level)
        return
    # makeRecord + handle is Logger.log without the stack walk for the caller's file and
    # line, which the JSON lines do not show.
    record = LOGGER.makeRecord(
        LOGGER.name, level, "", 0, message, (), sys.exc_info() if exc_info else None, extra={"fields": fields}
    )
    LOGGER.handle(record)
