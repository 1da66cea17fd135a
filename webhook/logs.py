"""JSON-lines logs: one object per line, carrying the uid of the request being answered.

`bind(uid=...)` puts fields into the context of the current thread (a context
variable), so every line logged while a request is handled carries them, the lines of
a rule's error included. `configure()` installs the JSON handler once.
"""

from __future__ import annotations

import contextvars
import logging
import sys
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


class JsonLinesHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """JSON lines to a stream; without one, to whatever sys.stderr is when a line is written
    (servers and tests swap it)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__(stream)
        self.fixed_stream = stream
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        if self.fixed_stream is None:
            self.stream = sys.stderr
        super().emit(record)

    def write_entry(self, entry: Mapping[str, Any]) -> None:
        """One line, without a LogRecord (`event`'s way when this handler is the only one)."""
        text = _line(entry) + "\n"
        with self.lock:  # type: ignore[union-attr]
            stream = self.fixed_stream if self.fixed_stream is not None else sys.stderr
            stream.write(text)
            stream.flush()


def configure(stream: IO[str] | None = None, level: int | str | None = None) -> logging.Handler:
    """Send the webhook's logs to `stream` (stderr) as JSON lines, at `level` (first time: info).

    The handler is installed once; a later call with a level changes the level only.
    """
    if level is not None:
        LOGGER.setLevel(level.upper() if isinstance(level, str) else level)
    for existing in LOGGER.handlers:
        if isinstance(existing, JsonLinesHandler):
            return existing
    handler = JsonLinesHandler(stream)
    LOGGER.addHandler(handler)
    if level is None:
        LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
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
    if not exc_info and len(handlers) == 1 and type(handlers[0]) is JsonLinesHandler and not LOGGER.filters:
        # The usual case, a line per admission request: straight to the one handler,
        # without a LogRecord (which costs more than the line).
        if level >= handlers[0].level:
            handlers[0].write_entry(_entry(time.time(), level, LOGGER.name, message, fields))
        return
    # makeRecord + handle is Logger.log without the stack walk for the caller's file and
    # line, which the JSON lines do not show.
    record = LOGGER.makeRecord(
        LOGGER.name, level, "", 0, message, (), sys.exc_info() if exc_info else None, extra={"fields": fields}
    )
    LOGGER.handle(record)
