"""Folders of alternatives: files a user applies one of, not all together.

A plain folder is linted as `kubectl apply -f DIR` would apply it, but nothing says it is
applied that way: release folders hold an install, a namespace install and a core install side
by side (Argo CD's `manifests/`), MetalLB's `config/manifests/` one file per variant. Two files
of a plain folder are **alternatives** when they share at least `MIN_SHARED` objects (by
identity: group, kind, namespace, name) and those make up at least half of the smaller file's
objects: whole files that define mostly the same objects. A single object duplicated across
two otherwise different files is no sign of that and stays a duplicate (FW305), as does the
same object twice in one file.

A **folder of samples** is one where two different files define exactly the same objects (the
same identities, nothing else, written differently: Argo CD's `applicationset/examples/cluster/` writes ApplicationSet
`guestbook` once with Go templates and once with fasttemplate, MetalLB's `configsamples/` one
`BGPPeer peer` per file): such copies are never applied together, so the folder holds samples
a user picks from, one at a time: there every two files are alternatives, each file a unit of
its own (no FW305 between MetalLB's `bgppeer_with_bfdprofile.yaml` and `bgppeer_simple.yaml`,
no FW105 between two samples' Deployments). A folder without such copies
keeps the rule above: a Namespace repeated in two otherwise different files stays a duplicate,
and so does a file copied whole (the same documents twice, whatever the comments, is a copy
left behind, not a sample).

Such a folder is cut into units: each maximal set of its files holding no two alternatives
(with the folder's other files in each), so every file is still checked with every file it may
be applied with. Declared units (`units:`, GitOps objects) and renders are never cut.

Pure: unit and object keys in, units and a notice out.
"""

from __future__ import annotations

import os
from collections import defaultdict
from itertools import combinations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Sequence

from ...policies.model import ObjectKey
from .plan import Unit

MIN_SHARED = 2  # objects two files must share to be alternatives (one shared object is a duplicate)
MAX_UNITS = 64  # past this many combinations, each alternative file is a unit alone with the rest

if TYPE_CHECKING:
    Keys = Callable[[str], Iterable[ObjectKey | None]]
    Same = Callable[[str, str], bool]  # whether two files hold the same documents


def _never(_a: str, _b: str) -> bool:
    return False


def alternative_pairs(files: Sequence[str], keys_of: Keys, same: Same = _never) -> set[frozenset[str]]:
    """The pairs of files that are alternatives (see the module docstring)."""
    own = _own(files, keys_of)
    if copies(own, same):  # a folder of samples: each file alone
        return {frozenset(pair) for pair in combinations(files, 2)}
    holders: dict[ObjectKey, list[str]] = defaultdict(list)
    for path in files:
        for key in own[path]:
            holders[key].append(path)
    shared: dict[frozenset[str], int] = defaultdict(int)
    for paths in holders.values():
        for a, b in combinations(paths, 2):
            shared[frozenset((a, b))] += 1
    pairs = set()
    for pair, count in shared.items():
        smaller = min(len(own[path]) for path in pair)
        if count >= MIN_SHARED and 2 * count >= smaller:
            pairs.add(pair)
    return pairs


def copies(own: dict[str, frozenset[ObjectKey]], same: Same = _never) -> list[tuple[str, str]]:
    """Pairs of different files (in file order) defining exactly the same objects: the mark of a folder of samples."""
    by_objects: dict[frozenset[ObjectKey], list[str]] = defaultdict(list)
    for path, keys in own.items():
        if keys:
            by_objects[keys].append(path)
    return [(a, b) for paths in by_objects.values() for a, b in combinations(paths, 2) if not same(a, b)]


def _own(files: Sequence[str], keys_of: Keys) -> dict[str, frozenset[ObjectKey]]:
    return {path: frozenset(k for k in keys_of(path) if k is not None) for path in files}


def choices(files: Sequence[str], apart: set[frozenset[str]]) -> list[tuple[str, ...]]:
    """Every maximal set of `files` with no two of them apart, in file order (Bron-Kerbosch).

    Past MAX_UNITS sets, each file alone.
    """
    order = {path: index for index, path in enumerate(files)}
    fits = {a: {b for b in files if b != a and frozenset((a, b)) not in apart} for a in files}
    found: list[tuple[str, ...]] = []

    def grow(chosen: list[str], candidates: set[str], excluded: set[str]) -> None:
        if len(found) > MAX_UNITS:
            return
        if not candidates and not excluded:
            found.append(tuple(sorted(chosen, key=order.__getitem__)))
            return
        for path in sorted(candidates, key=order.__getitem__):
            grow([*chosen, path], candidates & fits[path], excluded & fits[path])
            candidates = candidates - {path}
            excluded = excluded | {path}

    grow([], set(files), set())
    if len(found) > MAX_UNITS:
        return [(path,) for path in files]
    return sorted(found, key=lambda chosen: [order[path] for path in chosen])


def split_unit(unit: Unit, keys_of: Keys, same: Same = _never) -> tuple[list[Unit], str]:
    """A plain folder's unit cut at its alternatives, and the notice saying so ("" when uncut)."""
    if not unit.plain or len(unit.files) < 2:
        return [unit], ""
    apart = alternative_pairs(unit.files, keys_of, same)
    if not apart:
        return [unit], ""
    involved = [path for path in unit.files if any(path in pair for pair in apart)]
    rest = tuple(path for path in unit.files if path not in involved)
    units = [
        unit._replace(
            name=f"{unit.name} (alternative {', '.join(_base(path) for path in chosen)})",
            files=tuple(path for path in unit.files if path in chosen or path in rest),
        )
        for chosen in choices(involved, apart)
    ]
    shown = ", ".join(_base(path) for path in involved)
    samples = copies(_own(unit.files, keys_of), same)
    why = (f"are samples ({_base(samples[0][0])} and {_base(samples[0][1])} define the same objects)" if samples
           else "define mostly the same objects")
    notice = (f"{unit.name}: {shown} {why}: linted as alternatives (one unit each, "
              "duplicates between them not reported); if they are applied together, list the folder under "
              "`units:` in .fieldwarden.yaml")
    return units, notice


def split_alternatives(units: Sequence[Unit], keys_of: Keys, notices: list[str], same: Same = _never) -> list[Unit]:
    """Every plain folder's unit cut at its alternatives; one notice per folder cut."""
    out: list[Unit] = []
    for unit in units:
        parts, notice = split_unit(unit, keys_of, same)
        out.extend(parts)
        if notice:
            notices.append(notice)
    return out


def same_content(root: str) -> Same:
    """Whether two project files (relative to `root`) hold the same documents, field for field
    (comments and layout aside; unreadable: not the same)."""
    def same(a: str, b: str) -> bool:
        first = _documents(os.path.join(root, a))
        return first is not None and first == _documents(os.path.join(root, b))
    return same


def _documents(path: str) -> list[Any] | None:
    from ..loader import decode, load

    try:
        with open(path, "rb") as handle:
            data = handle.read()
        text, _problem = decode(data)
    except OSError:
        return None
    return None if text is None else [document.data for document in load(text).documents]


def _base(path: str) -> str:
    return path.rpartition("/")[2]

