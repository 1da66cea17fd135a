"""The per-user secret, the digests made with it, and the cache files it authenticates.

The key lives in `$XDG_CACHE_HOME/fieldwarden/cache-key` (default `~/.cache/fieldwarden/`),
outside any project, readable by this user only. A cache file (`write_authentic`) carries a keyed
BLAKE2 digest of its body, so one this user's fieldwarden did not write (committed to a repository,
copied from elsewhere) is never believed (`read_authentic`); a cache folder or file that is a
symlink is neither read nor written through, a FIFO does not hang a read, and new files are created
exclusively (never through an existing name). Used by cache.py, units/render_cache.py and
regex_cache.py.

Imports nothing of the linter (regex_cache.py uses it before PyYAML is imported). The digests
come from `_blake2` rather than hashlib (which spends ~5 ms setting up OpenSSL).
"""

from __future__ import annotations

import os
import stat

try:  # the module hashlib takes BLAKE2 from; hashlib itself spends ~5 ms setting up OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - Python builds without the built-in BLAKE2
    from hashlib import blake2b
try:  # hmac.compare_digest without importing hmac (~2.5 ms: it loads OpenSSL): the same constant-time compare
    from _operator import _compare_digest as compare_digest
except ImportError:  # pragma: no cover - other implementations
    from hmac import compare_digest  # type: ignore[no-redef]

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from os import PathLike

    StrPath = str | PathLike[str]

KEY_BYTES = 32
MAC_BYTES = 32
MAX_CACHE_BYTES = 256 << 20  # a larger cache file is not read (nor written)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KEYS: dict[str, bytes] = {}  # key file -> key, read once per process


def digest(data: bytes) -> bytes:
    """Content key of a file."""
    return blake2b(data, digest_size=16).digest()


def keyed_digest(data: bytes, purpose: bytes) -> bytes | None:
    """A digest only this user's fieldwarden can make (None when there is no user key)."""
    key = user_key()
    if key is None:
        return None
    return blake2b(data, digest_size=MAC_BYTES, key=key, person=purpose).digest()


def cache_home() -> str | None:
    """This user's fieldwarden folder in their cache folder (`$XDG_CACHE_HOME/fieldwarden`), None
    when there is no usable home."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative (which the XDG specification says to ignore)
        base = os.path.join(os.path.expanduser("~"), ".cache")
        if not os.path.isabs(base):  # no home folder at all
            return None
    return os.path.join(base, "fieldwarden")


def user_key() -> bytes | None:
    """The per-user secret, made on first use; None when there is no usable home (no cache then)."""
    home = cache_home()
    if home is None:
        return None
    path = os.path.join(home, "cache-key")
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


def is_plain_folder(folder: StrPath) -> bool:
    """Whether `folder` is a real folder, not a symlink (to one) or anything else."""
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False


def make_cache_folder(folder: StrPath) -> bool:
    """Create the cache folder with a .gitignore that keeps it out of git.

    False when it cannot be used for writing: it is a symlink or not a folder (say, one a
    repository planted), or it cannot be created.
    """
    try:
        os.mkdir(folder)
    except OSError:  # (as Path.mkdir(exist_ok=True): an existing folder is fine)
        if not os.path.isdir(folder):
            return False
    if not is_plain_folder(folder):
        return False
    create_file(os.path.join(folder, ".gitignore"), b"# created by fieldwarden\n*\n")
    return True


def create_file(path: StrPath, data: bytes) -> bool:
    """Create a new file; False (and nothing written) when the name exists, even as a dangling link."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    except OSError:
        return False
    with open(descriptor, "wb") as out:
        out.write(data)
    return True


def write_authentic(path: StrPath, body: bytes, purpose: bytes) -> None:
    """Write a cache file atomically, its body after a MAC under `purpose`; failures just mean no cache."""
    import tempfile

    mac = keyed_digest(body, purpose)
    folder = _folder(path)
    if mac is None or len(body) + 2 * MAC_BYTES + 1 > MAX_CACHE_BYTES or not make_cache_folder(folder):
        return
    temporary = ""
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".cache-")  # O_EXCL: no link followed
        with os.fdopen(handle, "wb") as out:
            out.write(mac.hex().encode("ascii") + b"\n" + body)
        os.replace(temporary, path)  # replaces a link of that name, never writes through it
    except OSError:
        if temporary:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _folder(path: StrPath) -> str:
    """The folder a file is in (Path.parent's name)."""
    return os.path.dirname(path) or "."


def read_authentic(path: StrPath, purpose: bytes = b"context-cache") -> bytes:
    """The body of a cache file this user's fieldwarden wrote; ValueError or OSError otherwise."""
    if not is_plain_folder(_folder(path)):
        raise ValueError("the cache folder is not a plain folder")
    # O_NOFOLLOW: not through a link; O_NONBLOCK: a FIFO must not hang the run (fstat refuses it)
    descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    with open(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CACHE_BYTES:
            raise ValueError("not a regular file, or too large")
        data = handle.read(MAX_CACHE_BYTES + 1)
    if len(data) > MAX_CACHE_BYTES:
        raise ValueError("too large")
    mac, _, body = data.partition(b"\n")
    expected = keyed_digest(body, purpose)
    if expected is None:
        raise ValueError("no user key")
    if not compare_digest(mac, expected.hex().encode("ascii")):
        raise ValueError("not written by this user's fieldwarden")
    return body
