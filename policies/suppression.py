"""The `fieldwarden.io/ignore` annotation and rule lists, shared by the linter and the webhook.

A list names rules by code or kebab-case name, separated by commas; `all`, `*` or an
empty list means every rule. The linter reads the same lists from its
`# fieldwarden: ignore[...]` comments.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Mapping

ANNOTATION = "fieldwarden.io/ignore"
_ALL = ("all", "*")


def parse_codes(text: str) -> tuple[str, ...] | None:
    """`FW201, selector-overlap` -> ("FW201", "selector-overlap"); `all`/`*`/empty -> None."""
    codes = tuple(part.strip() for part in text.split(",") if part.strip())
    if not codes or any(code.lower() in _ALL for code in codes):
        return None
    return codes


def annotation_codes(obj: Mapping[str, Any]) -> tuple[str, ...] | None | bool:
    """Codes named by the object's ignore annotation; None = all; False = no annotation."""
    meta = obj.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    value = notes.get(ANNOTATION) if isinstance(notes, dict) else None
    if not isinstance(value, str):
        return False
    return parse_codes(value)


def covers(codes: tuple[str, ...] | None, code: str, name: str) -> str | None:
    """The entry of `codes` that names this rule ("*" for a blanket), or None."""
    if codes is None:
        return "*"
    for entry in codes:
        if entry.upper() == code or entry.lower() == name:
            return entry
    return None
