"""Suppressions: `# fieldwarden: ignore[...]` comments and the `fieldwarden.io/ignore` annotation.

A comment at the end of a line, or alone on the line above, silences findings on that
line; a comment among the lines that head a document (on or after its `---`, before
its first key) silences the whole document. `ignore` without codes silences every rule.
The annotation and rule-list parsing live in policies/suppression.py: the webhook
honours the same annotation.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import NamedTuple, Sequence
else:
    from ..policies.records import NamedTuple

from ..policies.suppression import ANNOTATION, annotation_codes, covers, parse_codes

__all__ = ["ANNOTATION", "Directive", "annotation_codes", "covers", "directive_document", "parse_codes", "scan_comments"]

# compiled on first use (re's cache): most files hold no suppression comment
_DIRECTIVE = r"(?:^|\s)#\s*fieldwarden:\s*ignore(?:\[([^\]]*)\])?"


class Directive(NamedTuple):
    """One suppression comment. `codes` is None for "every rule"."""

    line: int
    column: int
    codes: tuple[str, ...] | None
    standalone: bool


def scan_comments(text: str) -> list[Directive]:
    """Every suppression comment in a text (cheap when there is none)."""
    if "fieldwarden:" not in text.lower():
        return []
    found = []
    directive = re.compile(_DIRECTIVE, re.IGNORECASE)
    for number, line in enumerate(text.splitlines(), start=1):
        match = directive.search(line)
        if match:
            column = line.index("#", match.start()) + 1
            codes = parse_codes(match.group(1) or "")
            found.append(Directive(number, column, codes, line[: column - 1].strip() in ("", "---")))
    return found


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
