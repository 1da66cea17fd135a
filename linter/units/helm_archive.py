"""Subchart archives (`charts/*.tgz`) unpacked in memory, within a budget an archive cannot stretch.

A committed archive is attacker-controlled: a few megabytes of gzip can stand for gigabytes of
tar (one huge member, millions of empty ones, names of any length in GNU or pax headers), and
tarfile reads a header's long name whole before any check of ours could see it. So the
decompressed stream itself is metered: tarfile reads through `_Metered`, which refuses to
deliver more than the budget's bytes, whatever asks; members are counted and their sizes and
names checked before a byte of their content is read, and a long-name or pax header larger
than a name needs is refused before it is read (_Header; where tarfile's internals differ, the
meter still bounds it). Only regular files with relative paths
inside the archive are kept (no `..`, no links, no devices), as Helm's own loader keeps them.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from pathlib import PurePosixPath
from typing import Callable

MAX_NAME = 1024  # characters of a member's path
MAX_PART = 255  # characters of one of its folder or file names (the copy is written to disk)


class Budget:
    """What the archives of one chart may still unpack, together."""

    def __init__(self, members: int, content: int, max_file: int) -> None:
        self.members = members  # members of any type
        self.content = content  # bytes of the files kept
        self.stream = content + 1024 * members + (1 << 20)  # bytes of tar read (headers, padding, skipped members)
        self.max_file = max_file  # bytes of one file

    def take_member(self) -> None:
        self.members -= 1
        if self.members < 0:
            raise TooLarge("it holds too many members")


class TooLarge(ValueError):
    """The archive goes past the budget (the message says how)."""


class Unreadable(ValueError):
    """The archive is no gzip-compressed tar."""


_EXTENDED = frozenset({tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                       tarfile.SOLARIS_XHDTYPE})
MAX_EXTENDED = 64 << 10  # bytes of a GNU long-name or pax header


class _Header(tarfile.TarInfo):
    """A member header that refuses a long-name or pax header too large to be read whole."""

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo | None:
        if self.type in _EXTENDED and self.size > MAX_EXTENDED:
            raise TooLarge(f"a member's extended header is larger than {MAX_EXTENDED >> 10} KiB")
        parse: Callable[[tarfile.TarFile], tarfile.TarInfo | None] = getattr(super(), "_proc_member")
        return parse(archive)


class _Metered(io.RawIOBase):
    """The decompressed tar stream, cut off once the budget's bytes are read."""

    def __init__(self, source: gzip.GzipFile, budget: Budget) -> None:
        self.source = source
        self.budget = budget

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > self.budget.stream:
            size = self.budget.stream + 1
        data = self.source.read(size)
        self.budget.stream -= len(data)
        if self.budget.stream < 0:
            raise TooLarge("it unpacks to too many bytes")
        return data


def unpack(data: bytes, budget: Budget) -> dict[str, bytes]:
    """The archive's regular files by relative POSIX path; TooLarge or Unreadable otherwise."""
    files: dict[str, bytes] = {}
    kept = 0
    stream = _Metered(gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb"), budget)
    try:
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=_Header) as archive:
            for member in archive:
                budget.take_member()
                name = member.name
                if len(name) > MAX_NAME or any(len(part) > MAX_PART for part in name.split("/")):
                    raise TooLarge(f"a member's name is longer than {MAX_NAME} characters (or a part of it than {MAX_PART})")
                parts = PurePosixPath(name).parts
                if not member.isfile() or not parts or name.startswith("/") or ".." in parts:
                    continue
                if member.size > budget.max_file:
                    raise TooLarge(f"{_shown(name)} is larger than {budget.max_file >> 20} MiB")
                kept += member.size
                if kept > budget.content:
                    raise TooLarge(f"its files add up to more than {budget.content >> 20} MiB")
                handle = archive.extractfile(member)
                if handle is not None:
                    files["/".join(parts)] = handle.read()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise Unreadable(f"not a gzip-compressed tar archive ({exc})") from None
    budget.content -= kept
    return files


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:77] + "...")
