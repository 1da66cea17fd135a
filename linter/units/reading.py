"""Reading the small files that units are found from (test manifests, Go tests, docs pages):
at most a given number of bytes, and an unreadable or larger file reads as nothing, never an error."""

from __future__ import annotations

from pathlib import Path


def small_bytes(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it cannot be read or holds more than `limit` bytes."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError:
        return None
    return None if len(raw) > limit else raw


def small_text(path: Path, limit: int) -> str:
    """The file as UTF-8 text (undecodable bytes replaced), or "" as `small_bytes` gives None."""
    raw = small_bytes(path, limit)
    return "" if raw is None else raw.decode("utf-8", "replace")
