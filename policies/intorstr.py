"""Kubernetes IntOrString values (`maxSurge`, `maxUnavailable`) as the API server reads them.

An IntOrString is either a non-negative integer or a percent string of decimal digits
followed by `%` (`"25%"`). This module mirrors what apps validation accepts
(`ValidatePositiveIntOrPercent`, `IsValidPercent`, `IsNotMoreThan100Percent`) and how
the controllers scale a value against a count (`GetScaledValueFromIntOrPercent`).
Inputs are untrusted YAML/JSON data: nothing here raises.
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from .records import NamedTuple

INT32_MAX = 2**31 - 1

_PERCENT = re.compile(r"[0-9]+%")  # IsValidPercent: ^[0-9]+%$ (ASCII digits only)
_QUOTED_INT = re.compile(r"\+?[0-9]+")
_NEGATIVE = re.compile(r"-[0-9]+%?")

EXPECTED = 'an integer or a percent string like "25%"'


class IntOrPercent(NamedTuple):
    """A valid value: `number` as written (25 for both `25` and `"25%"`) and its form."""

    number: int
    percent: bool

    def __str__(self) -> str:
        return f"{self.number}%" if self.percent else str(self.number)

    @property
    def is_zero(self) -> bool:
        """Zero as the API's validation sees it: `0` and `"0%"`, before any rounding."""
        return self.number == 0

    @property
    def over_100_percent(self) -> bool:
        """A percent above 100 (integers are never judged against 100%)."""
        return self.percent and self.number > 100

    def scaled(self, total: int, round_up: bool) -> int:
        """The value against `total` items: percents round up (surge) or down (unavailable)."""
        if not self.percent:
            return self.number
        exact = self.number * total
        return -(-exact // 100) if round_up else exact // 100


class Parsed(NamedTuple):
    """Outcome of `parse`: a value, or None and why the API server rejects the input."""

    value: IntOrPercent | None
    problem: str = ""


def parse(raw: Any) -> Parsed:
    """Read an IntOrString field's value; call only for present, non-null values.

    Accepts ints in 0..2**31-1 and strings matching `[0-9]+%`. Booleans, floats (even
    `1.0`), quoted numbers (`"25"`), negative values and anything else are rejected,
    each with a short reason.
    """
    if isinstance(raw, bool):
        return Parsed(None, f"must be {EXPECTED}, not a boolean")
    if isinstance(raw, int):
        if raw < 0:
            return Parsed(None, "must not be negative")
        if raw > INT32_MAX:
            return Parsed(None, f"is out of range (at most {INT32_MAX})")
        return Parsed(IntOrPercent(raw, False))
    if isinstance(raw, float):
        if math.isfinite(raw) and raw.is_integer():
            return Parsed(None, f"must be {EXPECTED}, not a decimal number (write {int(raw)})")
        return Parsed(None, f"must be {EXPECTED}, not a decimal number")
    if isinstance(raw, str):
        if _PERCENT.fullmatch(raw):
            return Parsed(IntOrPercent(int(raw[:-1]), True))
        if _NEGATIVE.fullmatch(raw):
            return Parsed(None, "must not be negative")
        if _QUOTED_INT.fullmatch(raw):
            digits = raw.lstrip("+")
            return Parsed(None, f'is a quoted number: write {digits} or "{digits}%"')
        return Parsed(None, f"must be {EXPECTED}")
    return Parsed(None, f"must be {EXPECTED}")


def value_or(raw: Any, default: IntOrPercent) -> Parsed:
    """`parse`, with an absent or null field standing for the server's `default`."""
    return Parsed(default) if raw is None else parse(raw)


def parse_int32(raw: Any) -> int | None:
    """A plain int32 field (`partition`, `replicas`): the int, or None when it is not one."""
    if isinstance(raw, bool) or not isinstance(raw, int):
        return None
    return raw if -(2**31) <= raw <= INT32_MAX else None
