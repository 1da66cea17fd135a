"""Where renders make their short-lived folders: in memory, on a tmpfs, when the machine has room there.

Every kustomize build runs on a hermetic copy of its unit's files, and Helm reads a copy of each chart
(kustomize.py, helm.py): a cold lint of a tree of many units creates and deletes hundreds of files and
folders within seconds. On a disk file system that is kernel time, and a varying amount of it: ext4
looks for a free inode past those deleted moments ago. On issue 23's mixed tree (41 kustomize roots, 44
charts; bench/lint_speed.py row f), six interleaved pairs of cold lints: 7.24 s with the folders under
/tmp on ext4, 6.91 s with them on /dev/shm, 0.64 s less system time, every pair faster.

The folder chosen: TMPDIR when the user set it (their choice stands, as for any program); else
XDG_RUNTIME_DIR (the user's own tmpfs), else /dev/shm, the first that is a folder this process may
write and that has PER_SLOT bytes available for each render slot (one per core, renders.py; a container's
64 MB /dev/shm does not qualify); else Python's default temporary folder. A tmpfs holds its files in
memory, so the room asked is what a slot's folder can hold at worst: a kustomize build's output and
messages (kustomize.MAX_OUTPUT each, the build stopped past them) beside its copied inputs, or one chart
(helm.MAX_CHART). Each folder is removed when its render ends.
"""

from __future__ import annotations

import os
import tempfile

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

PER_SLOT = 256 << 20  # >= 2 x kustomize.MAX_OUTPUT + helm.MAX_CHART (tests/linter/units/test_scratch.py)
IN_MEMORY = ("XDG_RUNTIME_DIR", "/dev/shm")  # an environment variable naming a folder, or a folder

_CHOSEN: list[str | None] = []  # the run's choice, made on first use


def base() -> str | None:
    """The folder short-lived render folders go in; None: Python's default (tempfile.gettempdir())."""
    if not _CHOSEN:
        from .renders import _cpus as render_slots  # (renders.render_pending: one slot per core)

        _CHOSEN.append(choose(os.environ, slots=render_slots()))
    return _CHOSEN[0]


def roots() -> tuple[str, ...]:
    """The folders render folders may be in (the chosen one, Python's default): paths under them are told
    apart in a renderer's messages."""
    default = tempfile.gettempdir()
    chosen = base()
    return (chosen, default) if chosen is not None and chosen != default else (default,)


def folder(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A new private folder (mode 0700) under base(), removed when the `with` block ends; in Python's
    default temporary folder when base() cannot take one any more (full, removed, made read-only)."""
    chosen = base()
    if chosen is not None:
        try:
            return tempfile.TemporaryDirectory(prefix=prefix, dir=chosen)
        except OSError:
            pass
    return tempfile.TemporaryDirectory(prefix=prefix)


def choose(environ: Mapping[str, str], free: Callable[[str], int] | None = None, slots: int = 1) -> str | None:
    """The in-memory folder to use given `environ` and the render slots, or None for Python's default
    (see the module docstring)."""
    if environ.get("TMPDIR"):
        return None
    available = free if free is not None else _free
    for candidate in IN_MEMORY:
        path = environ.get(candidate, "") if not candidate.startswith("/") else candidate
        if path and os.path.isabs(path) and os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK):
            if available(path) >= PER_SLOT * slots:
                return path
    return None


def _free(path: str) -> int:
    try:
        stats = os.statvfs(path)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return 0
    return stats.f_bavail * stats.f_frsize
