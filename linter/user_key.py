"""The per-user secret that authenticates what fieldwarden caches, and the digests made with it.

The key lives in `$XDG_CACHE_HOME/fieldwarden/cache-key` (default `~/.cache/fieldwarden/`),
outside any project, readable by this user only; a cache file carries a keyed BLAKE2 digest
of its body, so one this user's fieldwarden did not write (committed to a repository, copied
from elsewhere) is never believed (cache.py, regex_cache.py).

Imports nothing of the linter (regex_cache.py uses it before PyYAML is imported). The digests
come from `_blake2` rather than hashlib (which spends ~5 ms setting up OpenSSL).
"""

from __future__ import annotations

import os

try:  # the module hashlib takes BLAKE2 from; hashlib itself spends ~5 ms setting up OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - Python builds without the built-in BLAKE2
    from hashlib import blake2b
try:  # hmac.compare_digest without importing hmac (~2.5 ms: it loads OpenSSL): the same constant-time compare
    from _operator import _compare_digest as compare_digest
except ImportError:  # pragma: no cover - other implementations
    from hmac import compare_digest  # type: ignore[no-redef]

KEY_BYTES = 32
MAC_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_KEYS: dict[str, bytes] = {}  # key file -> key, read once per process

__all__ = ["KEY_BYTES", "MAC_BYTES", "compare_digest", "digest", "keyed_digest", "user_key"]


def digest(data: bytes) -> bytes:
    """Content key of a file."""
    return blake2b(data, digest_size=16).digest()


def keyed_digest(data: bytes, purpose: bytes) -> bytes | None:
    """A digest only this user's fieldwarden can make (None when there is no user key)."""
    key = user_key()
    if key is None:
        return None
    return blake2b(data, digest_size=MAC_BYTES, key=key, person=purpose).digest()


def user_key() -> bytes | None:
    """The per-user secret, made on first use; None when there is no usable home (no cache then)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative (which the XDG specification says to ignore)
        base = os.path.join(os.path.expanduser("~"), ".cache")
        if not os.path.isabs(base):  # no home folder at all
            return None
    path = os.path.join(base, "fieldwarden", "cache-key")
    known = _KEYS.get(path)
    if known is not None:
        return known
    try:
        with open(path, "rb") as handle:
            key = handle.read(KEY_BYTES + 1)
    except FileNotFoundError:
        key = b""
    except OSError:
        return None
    if len(key) != KEY_BYTES:
        try:
            key = _new_key(path)
        except OSError:
            return None
    _KEYS[path] = key
    return key


def _new_key(path: str) -> bytes:
    """Write a fresh key (readable by this user only) and return it; raises OSError."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    key = os.urandom(KEY_BYTES)
    temporary = os.path.join(folder, f".cache-key-{os.getpid()}-{os.urandom(4).hex()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:
        with open(descriptor, "wb") as out:
            out.write(key)
        os.replace(temporary, path)  # two first runs at once: either key wins, the other cache rebuilds
    except OSError:
        os.unlink(temporary)
        raise
    return key
