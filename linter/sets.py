"""Set rules inside one apply unit: every cross-object rule sees the unit's objects, and only them.

A unit's members are object records from plain files and from renders. A finding on a plain
member is placed with the positions its file recorded; one on a rendered member where the
renderer says the user wrote that field (rendered.locate), whatever file that is: the unit
holds a file being linted (see engine.py, "caused by"). Each finding is judged under the settings of the file it is
reported in, and names the unit it was found in.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Collection, Mapping, NamedTuple, Sequence
else:
    from ..policies.records import NamedTuple

from ..policies.config import Settings
from ..policies.model import ObjectKey, Violation, format_path, lighter
from ..policies.registry import RULES
from ..policies.rules import duplicate_object
from ..policies.rule import SET, SetObject
from .analyse import Finding, ObjectRecord, locate_in_record
from .suppress import covers
from .units.plan import Unit

if TYPE_CHECKING:  # a plain run never loads the renderers' types
    from .units.rendered import RenderedObject

# Where a finding on a rendered object goes: (file as reported, line, column, exact), or None
# when it goes nowhere.
if TYPE_CHECKING:
    Placer = Callable[["RenderedObject", tuple[Any, ...]], "tuple[str, int, int, bool] | None"]


class Member(NamedTuple):
    """One object of a unit."""

    record: ObjectRecord
    file: str  # the file it is read from (a plain file), or where its render anchors it
    target: bool  # findings may be reported on it (plain: its file is linted; rendered: see Placer)
    rendered: RenderedObject | None = None
    named: bool = True  # from a file the run was given (a `context: false` configuration sees only these)


def placed_record(record: ObjectRecord, namespace: str, force: bool) -> SetObject:
    """The object as a set rule sees it in a unit that deploys to `namespace`."""
    key, data = record.key, record.projection
    if namespace and key is not None and key.namespace:  # cluster-scoped objects have none
        meta = data.get("metadata")
        own = meta.get("namespace") if isinstance(meta, dict) else None
        if force or not (isinstance(own, str) and own):
            data = {**data, "metadata": {**(meta if isinstance(meta, dict) else {}), "namespace": namespace}}
            key = key._replace(namespace=namespace)
    return SetObject(key, data, record.origin)


def project_index(units: Sequence[Unit], records: Callable[[str], Sequence[ObjectRecord]]) -> dict[ObjectKey, tuple[str, str]]:
    """Every plain file's object in the project, as placed by its unit: key -> (where, the unit's name).

    The first unit naming an object wins. Set rules that say an object is missing (FW303) read
    it, as conf["elsewhere"], to say where it is when another unit defines it.
    """
    index: dict[ObjectKey, tuple[str, str]] = {}
    for unit in units:
        for key in unit.files:
            for record in records(key):
                placed = placed_record(record, unit.namespace, unit.force_namespace).key
                if placed is not None:
                    index.setdefault(placed, (record.origin, unit.name))
    return index


def run_set_rules(
    unit: Unit, members: Sequence[Member], settings_for: Callable[[str], Settings], place: Placer,
    elsewhere: Mapping[ObjectKey, tuple[str, str]] | None = None, codes: Collection[str] | None = None,
) -> list[Finding]:
    """Set rules (those of `codes`, when given) over the unit's members, reporting on its target members.

    For each rule, the targets whose configuration selects it are grouped by what the rule
    would see (its options, and whether the context counts); the rule runs once per group,
    so a hundred folder configurations that agree on a rule cost one pass, not a hundred.
    A configuration with `context: false` sees the unit's targets alone.
    """
    objects = [placed_record(m.record, unit.namespace, unit.force_namespace) for m in members]
    targets = [index for index, member in enumerate(members) if member.target]
    if not targets:
        return []
    distinct: dict[int, tuple[Settings, list[int]]] = {}  # the targets of each settings object
    for index in targets:
        own = settings_for(members[index].file)
        distinct.setdefault(id(own), (own, []))[1].append(index)
    found: list[Finding] = []
    for code, rule in RULES.items():
        if rule.SCOPE != SET or (codes is not None and code not in codes):
            continue
        groups: dict[tuple[str, bool], tuple[dict[str, Any], list[int]]] = {}
        for settings, indices in distinct.values():
            if settings.enabled(code):
                conf = settings.rule_conf(code)
                groups.setdefault((repr(conf), settings.context), (conf, []))[1].extend(indices)
        for (_, context), (conf, chosen) in groups.items():
            if context:
                seen, back = objects, None
                numbered = sorted(chosen)
            else:  # the unit's named targets alone, renumbered
                alone = [index for index in targets if members[index].named]
                seen, back = [objects[i] for i in alone], alone
                position = {index: number for number, index in enumerate(alone)}
                numbered = sorted(position[i] for i in chosen)
            wanted = set(chosen)
            if elsewhere is not None and getattr(rule, "READS_ELSEWHERE", False) and context:
                conf = {**conf, "elsewhere": elsewhere}  # (an object of this unit is found in the unit first)
            for index, violation in rule.check_set(seen, numbered, conf):
                index = back[index] if back is not None else index
                if index not in wanted:
                    continue
                finding = _finding(code, members[index], objects[index], violation, unit, settings_for, place)
                if finding is not None:
                    found.append(finding)
    return found


def _finding(
    code: str, member: Member, seen: SetObject, violation: Violation, unit: Unit,
    settings_for: Callable[[str], Settings], place: Placer,
) -> Finding | None:
    record = member.record
    approximate = False
    if member.rendered is None:
        file = member.file
        line, column = locate_in_record(record, violation.path)
    else:
        where = place(member.rendered, record.prefix + tuple(violation.path))
        if where is None:
            return None
        file, line, column, exact = where
        approximate = not exact
    settings = settings_for(file)
    if not settings.enabled(code):
        return None
    label = seen.key.label() if seen.key is not None else record.label
    suppressed = annotated(record.ignore, code) if member.rendered is not None else ""
    return Finding(
        file, line, column, code, lighter(settings.severity[code], violation), label,
        format_path(violation.path, record.projection), violation.message, violation.hint,
        record.document if member.rendered is None else -1, record.prefix + tuple(violation.path),
        suppressed, (unit.name,), approximate,
    )



def labelled(record: ObjectRecord, unit: Unit) -> str:
    """How findings name the object in a unit: with the namespace the unit puts it in."""
    placed = placed_record(record, unit.namespace, unit.force_namespace)
    return placed.key.label() if placed.key is not None else record.label


def annotated(ignore: tuple[str, ...] | None | bool, code: str) -> str:
    """How a rendered object's own `fieldwarden.io/ignore` annotation suppresses a finding ("" if not).

    (A plain file's objects are matched with their annotations by the engine's suppression step.)
    """
    if ignore is False or ignore is True:
        return ""
    entry = covers(ignore, code, str(RULES[code].NAME))
    return "annotation fieldwarden.io/ignore" if entry is not None else ""


def merged_duplicates(findings: Sequence[Finding]) -> list[Finding]:
    """FW305 at one place found in several alternatives' units: one finding naming every other place.

    (Each unit names the definitions it holds, so the messages differ; the rest of the engine
    merges findings that say the same.)
    """
    out: list[Finding] = []
    first: dict[tuple[object, ...], int] = {}
    for finding in findings:
        if finding.code != duplicate_object.CODE:
            out.append(finding)
            continue
        key = (finding.file, finding.line, finding.column, finding.document, finding.raw_path)
        index = first.get(key)
        if index is None:
            first[key] = len(out)
            out.append(finding)
            continue
        known = out[index]
        others = list(dict.fromkeys((*duplicate_object.others_in(known.message),
                                     *duplicate_object.others_in(finding.message))))
        out[index] = known._replace(
            message=duplicate_object.message(others) if others else known.message,
            units=tuple(dict.fromkeys((*known.units, *finding.units))),
        )
    return out
