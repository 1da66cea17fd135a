"""Suppressions: `# fieldwarden: ignore[...]` comments and the `fieldwarden.io/ignore` annotation.

A comment at the end of a line, or alone on the line above, silences findings on that
line; a comment among the lines that head a document (on or after its `---`, before
its first key) silences the whole document. `ignore` without codes silences every rule.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple, Sequence

ANNOTATION = "fieldwarden.io/ignore"
_DIRECTIVE = re.compile(r"(?:^|\s)#\s*fieldwarden:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)
_ALL = ("all", "*")


class Directive(NamedTuple):
    """One suppression comment. `codes` is None for "every rule"."""

    line: int
    column: int
    codes: tuple[str, ...] | None
    standalone: bool


def parse_codes(text: str) -> tuple[str, ...] | None:
    """`FW201, selector-overlap` -> ("FW201", "selector-overlap"); `all`/`*`/empty -> None."""
    codes = tuple(part.strip() for part in text.split(",") if part.strip())
    if not codes or any(code.lower() in _ALL for code in codes):
        return None
    return codes


def scan_comments(text: str) -> list[Directive]:
    """Every suppression comment in a text (cheap when there is none)."""
    if "fieldwarden:" not in text.lower():
        return []
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _DIRECTIVE.search(line)
        if match:
            column = line.index("#", match.start()) + 1
            codes = parse_codes(match.group(1) or "")
            found.append(Directive(number, column, codes, line[: column - 1].strip() in ("", "---")))
    return found


def annotation_codes(obj: Mapping[str, Any]) -> tuple[str, ...] | None | bool:
    """Codes named by the object's ignore annotation; None = all; False = no annotation."""
    meta = obj.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    value = notes.get(ANNOTATION) if isinstance(notes, dict) else None
    if not isinstance(value, str):
        return False
    return parse_codes(value)


def directive_document(directive: Directive, spans: Sequence[tuple[int, int]]) -> int | None:
    """Index of the document a standalone directive heads, or None if it heads none.

    `spans` holds each document's (first line, last line), in order.
    """
    if not directive.standalone:
        return None
    previous_end = 0
    for index, (start, end) in enumerate(spans):
        if previous_end < directive.line < start:
            return index
        previous_end = end
    return None


def covers(codes: tuple[str, ...] | None, code: str, name: str) -> str | None:
    """The entry of `codes` that names this rule ("*" for a blanket), or None."""
    if codes is None:
        return "*"
    for entry in codes:
        if entry.upper() == code or entry.lower() == name:
            return entry
    return None
