"""The regular expressions a lint's modules compile while they load, compiled once per interpreter.

Importing PyYAML compiles ten patterns, one of them (the reader's class of non-printable
characters, all of Unicode in ranges) ~4 ms alone: about a third of `import yaml`, and a
tenth of a pre-commit run on one small file (issue 23, row a). What `re` compiles a pattern
into (the SRE code: a list of integers, with its flags and groups) depends only on the pattern
and the interpreter, so it is kept in the user's cache folder and handed to `_sre.compile`
in the next run, with the pattern placed in `re`'s own cache before the modules load: their
`re.compile` calls find it there, and nothing is compiled.

What makes this safe to rely on:
- the file is keyed by the interpreter (its version and build, `_sre.MAGIC`, the code unit size),
  and authenticated with this user's key (user_key.py): a file this user's fieldwarden did not
  write, or one made by another interpreter, is not read;
- `_sre.compile` checks the code it is given (CPython refuses malformed code with RuntimeError),
  and each pattern made must state the pattern and flags it was saved under; anything amiss,
  and that pattern is compiled as usual;
- it uses what CPython's `re` package keeps private (`re._cache`, `re._parser`,
  `re._compiler._code`, the 3.11-3.13 layout). Where they are not as expected (3.10, another
  implementation), nothing is cached and the patterns compile as they always did.

`warm()` before the modules load; `keep()` after, which writes the file when the modules
compiled a pattern it lacks (the first run, or a PyYAML that compiles others).
"""

from __future__ import annotations

import marshal
import os
import re
import sys

try:
    import _sre  # type: ignore[import-not-found, unused-ignore]  # (no stubs: CPython's private engine)
except ImportError:  # pragma: no cover - another implementation
    _sre = None

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
_PURPOSE = b"regex-cache"

# (pattern, flags as asked) -> (flags, code, groups, groupindex, indexgroup): what `_sre.compile` takes
Saved = dict[tuple[str, int], tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]]


class Warmed:
    """What `warm` did: the patterns it placed (by `re`'s cache key) and the file they came from."""

    __slots__ = ("path", "saved", "before")

    def __init__(self, path: str | None, saved: Saved, before: set[Any]) -> None:
        self.path = path
        self.saved = saved
        self.before = before  # re's cache keys once warmed: what the modules compile after is new


def usable() -> bool:
    """Whether this interpreter's `re` is laid out as the cache needs (CPython 3.11-3.13)."""
    compiler = getattr(re, "_compiler", None)
    return (_sre is not None and isinstance(getattr(re, "_cache", None), dict) and hasattr(compiler, "_code")
            and hasattr(getattr(re, "_parser", None), "parse") and hasattr(_sre, "compile"))


def cache_path() -> str | None:
    """This interpreter's file in the user's cache folder (None without a usable home)."""
    from binascii import crc32

    from .user_key import cache_home

    home = cache_home()
    if home is None:
        return None
    interpreter = f"{sys.version}\0{sys.implementation.cache_tag}\0{getattr(_sre, 'MAGIC', '')}\0{getattr(_sre, 'CODESIZE', '')}"
    return os.path.join(home, f"regex-{FORMAT}-{crc32(interpreter.encode()):08x}.marshal")


def warm() -> Warmed | None:
    """Place the saved patterns in `re`'s cache; None when the cache cannot be used here."""
    if not usable():
        return None
    path = cache_path()
    saved = _read(path) if path is not None else {}
    for (pattern, flags), made in saved.items():
        key = (str, pattern, flags)
        if key in re._cache:  # type: ignore[attr-defined]
            continue
        try:
            compiled = _sre.compile(pattern, *made)
        except (RuntimeError, TypeError, ValueError, OverflowError):
            continue  # compiled as usual when asked for
        if compiled.pattern == pattern and compiled.flags == made[0]:
            re._cache[key] = compiled  # type: ignore[attr-defined]
    return Warmed(path, saved, set(re._cache))  # type: ignore[attr-defined]


def keep(warmed: Warmed | None) -> None:
    """Save what the modules compiled since `warm` and the file lacks (written only then)."""
    if warmed is None or warmed.path is None:
        return
    added = [key for key in re._cache if key not in warmed.before and key[0] is str  # type: ignore[attr-defined]
             and isinstance(key[2], int) and (key[1], key[2]) not in warmed.saved]
    if not added:
        return
    saved = dict(warmed.saved)
    for _, pattern, flags in added:
        made = code_of(pattern, flags)
        if made is not None:
            saved[pattern, flags] = made
    _write(warmed.path, saved)


def code_of(pattern: str, flags: int) -> tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]] | None:
    """What `re` compiles `pattern` into, as `_sre.compile` takes it (the steps of re._compiler.compile)."""
    try:
        parsed = re._parser.parse(pattern, flags)  # type: ignore[attr-defined]
        code = [int(unit) for unit in re._compiler._code(parsed, flags)]  # type: ignore[attr-defined]
        groupindex = {str(name): int(index) for name, index in parsed.state.groupdict.items()}
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        return int(flags | parsed.state.flags), code, int(parsed.state.groups - 1), groupindex, tuple(indexgroup)
    except Exception:  # noqa: BLE001 - a private API that changed: this pattern is not cached
        return None


def _read(path: str) -> Saved:
    from .user_key import read_authentic

    try:
        loaded = marshal.loads(read_authentic(path, _PURPOSE))
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return loaded if _well_formed(loaded) else {}


def _well_formed(loaded: Any) -> bool:
    if not isinstance(loaded, dict):
        return False
    for key, made in loaded.items():
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str) and isinstance(key[1], int)):
            return False
        if not (isinstance(made, tuple) and len(made) == 5 and isinstance(made[0], int) and isinstance(made[1], list)
                and isinstance(made[2], int) and isinstance(made[3], dict) and isinstance(made[4], tuple)):
            return False
    return True


def _write(path: str, saved: Saved) -> None:
    """Authenticated, whole or not at all (user_key.write_authentic); failures are silent."""
    from .user_key import write_authentic

    write_authentic(path, marshal.dumps(saved), _PURPOSE)
