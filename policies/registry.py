"""The explicit registry of rules: adding a rule is one module plus one line here."""

from __future__ import annotations

from types import ModuleType

from .rules import (
    document_too_complex,
    duplicate_key,
    duplicate_object,
    strategy_type_missing,
    unreadable_file,
    unused_suppression,
    yaml_syntax_error,
)

_MODULES: tuple[ModuleType, ...] = (
    yaml_syntax_error,
    duplicate_key,
    unused_suppression,
    unreadable_file,
    document_too_complex,
    strategy_type_missing,
    duplicate_object,
)

RULES: dict[str, ModuleType] = {module.CODE: module for module in sorted(_MODULES, key=lambda m: m.CODE)}
BY_NAME: dict[str, ModuleType] = {module.NAME: module for module in _MODULES}


def resolve(code_or_name: str) -> ModuleType | None:
    """The rule with this code (case-insensitive) or kebab-case name."""
    return RULES.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
