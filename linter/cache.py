"""The context cache: what set rules need from each unchanged file, keyed by its content.

Entries are keyed by a hash of the file's bytes, so an edited file is always parsed
again and a deleted file simply drops out; nothing is trusted from timestamps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import __version__

try:  # the module hashlib takes BLAKE2 from; hashlib itself spends ~5 ms setting up OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - Python builds without the built-in BLAKE2
    from hashlib import blake2b

CACHE_DIR = ".fieldwarden_cache"


def digest(data: bytes) -> bytes:
    """Content key of a file."""
    return blake2b(data, digest_size=16).digest()


def make_cache_folder(folder: Path) -> None:
    """Create the cache folder with a .gitignore that keeps it out of git (raises OSError)."""
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by fieldwarden\n*\n")


class ContextCache:
    """A pickle of {relative path: (content digest, FileResult)} in the project's cache folder."""

    def __init__(self, root: Path, signature: Any) -> None:
        self.folder = root / CACHE_DIR
        self.file = self.folder / "context.pickle"
        self.signature = (__version__, signature)
        self.entries: dict[str, tuple[bytes, Any]] = {}
        self.dirty = False
        import pickle  # only when a cache is used: pre-commit on a small project never needs it

        try:
            with open(self.file, "rb") as handle:
                stored_signature, entries = pickle.load(handle)
            if stored_signature == self.signature:
                self.entries = entries
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
            self.entries = {}

    def get(self, name: str, key: bytes) -> Any:
        """The stored result for this file content, or None."""
        entry = self.entries.get(name)
        return entry[1] if entry is not None and entry[0] == key else None

    def put(self, name: str, key: bytes, value: Any) -> None:
        """Remember a result."""
        self.entries[name] = (key, value)
        self.dirty = True

    def keep_only(self, names: set[str]) -> None:
        """Forget files that are gone."""
        for name in list(self.entries):
            if name not in names:
                del self.entries[name]
                self.dirty = True

    def save(self) -> None:
        """Write atomically; a read-only project just goes without a cache."""
        if not self.dirty:
            return
        import pickle
        import tempfile

        try:
            make_cache_folder(self.folder)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".context-")
            with os.fdopen(handle, "wb") as out:
                pickle.dump((self.signature, self.entries), out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.file)
        except OSError:
            pass
