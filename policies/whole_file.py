"""A file written whole or not at all: through a fresh temporary name in its folder, then renamed.

A reader (another run, at the same moment) sees the old file or the new one, never half of
one; the temporary name is created exclusively and never through a link. Used for the caches
kept in the user's cache folder (schemas/builtin.py, linter/regex_cache.py).
"""

from __future__ import annotations

import os


def write_whole(path: str, content: bytes) -> None:
    """Write `content` to `path` (mode 0600); on failure nothing is written and nothing is raised."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with open(descriptor, "wb") as handle:
            handle.write(content)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
