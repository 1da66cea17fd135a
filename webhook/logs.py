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
from contextlib import contextmanager
from typing import IO, Any, Iterator

import orjson

LOGGER = logging.getLogger("fieldwarden.webhook")
_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("fieldwarden_log_context", default={})


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", ...fields}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(_CONTEXT.get())
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure(stream: IO[str] | None = None, level: int | str | None = None) -> logging.Handler:
    """Send the webhook's logs to `stream` (stderr) as JSON lines, at `level` (first time: info).

    The handler is installed once; a later call with a level changes the level only.
    """
    if level is not None:
        LOGGER.setLevel(level.upper() if isinstance(level, str) else level)
    for existing in LOGGER.handlers:
        if isinstance(existing.formatter, JsonFormatter):
            return existing
    handler: logging.Handler = logging.StreamHandler(stream) if stream is not None else _Stderr()
    handler.setFormatter(JsonFormatter())
    LOGGER.addHandler(handler)
    if level is None:
        LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
    return handler


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is when a line is logged (servers and tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


@contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Add `fields` to every line logged inside the block (in this thread)."""
    token = _CONTEXT.set({**_CONTEXT.get(), **fields})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def enabled(level: int) -> bool:
    """Whether a line at `level` would be logged (to skip building its fields)."""
    return LOGGER.isEnabledFor(level)


def event(message: str, /, level: int = logging.INFO, exc_info: bool = False, **fields: Any) -> None:
    """Log `message` with structured `fields`."""
    if LOGGER.isEnabledFor(level):
        # makeRecord + handle is Logger.log without the stack walk for the caller's
        # file and line, which the JSON lines do not show.
        record = LOGGER.makeRecord(
            LOGGER.name, level, "", 0, message, (), sys.exc_info() if exc_info else None, extra={"fields": fields}
        )
        LOGGER.handle(record)
