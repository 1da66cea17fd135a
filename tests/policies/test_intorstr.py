"""IntOrString parsing as apps validation reads maxSurge / maxUnavailable."""

import pytest

from fieldwarden.policies.intorstr import INT32_MAX, IntOrPercent, Parsed, parse, parse_int32, value_or


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0, IntOrPercent(0, False)),
        (3, IntOrPercent(3, False)),
        (INT32_MAX, IntOrPercent(INT32_MAX, False)),
        ("0%", IntOrPercent(0, True)),
        ("25%", IntOrPercent(25, True)),
        ("007%", IntOrPercent(7, True)),
        ("150%", IntOrPercent(150, True)),  # valid syntax; the 100% limit is the caller's
    ],
)
def test_valid_values(raw: object, expected: IntOrPercent) -> None:
    assert parse(raw) == Parsed(expected, "")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (-1, "must not be negative"),
        ("-1", "must not be negative"),
        ("-5%", "must not be negative"),
        ("25", 'is a quoted number: write 25 or "25%"'),
        ("+3", 'is a quoted number: write 3 or "3%"'),
        ("abc", 'must be an integer or a percent string like "25%"'),
        ("25.5%", 'must be an integer or a percent string like "25%"'),
        (" 25%", 'must be an integer or a percent string like "25%"'),
        ("25%\n", 'must be an integer or a percent string like "25%"'),
        ("%", 'must be an integer or a percent string like "25%"'),
        ("", 'must be an integer or a percent string like "25%"'),
        ("２５%", 'must be an integer or a percent string like "25%"'),  # non-ASCII digits
        (1.5, 'must be an integer or a percent string like "25%", not a decimal number'),
        (1.0, 'must be an integer or a percent string like "25%", not a decimal number (write 1)'),
        (float("nan"), 'must be an integer or a percent string like "25%", not a decimal number'),
        (True, 'must be an integer or a percent string like "25%", not a boolean'),
        (False, 'must be an integer or a percent string like "25%", not a boolean'),
        (INT32_MAX + 1, f"is out of range (at most {INT32_MAX})"),
        ([1], 'must be an integer or a percent string like "25%"'),
        ({"a": 1}, 'must be an integer or a percent string like "25%"'),
    ],
)
def test_invalid_values(raw: object, problem: str) -> None:
    assert parse(raw) == Parsed(None, problem)


def test_zero_is_as_written_not_after_rounding() -> None:
    assert IntOrPercent(0, False).is_zero
    assert IntOrPercent(0, True).is_zero
    assert not IntOrPercent(1, True).is_zero  # 1% of 3 pods rounds down to 0, but is not zero
    assert IntOrPercent(1, True).scaled(3, round_up=False) == 0


def test_over_100_percent_only_for_percents() -> None:
    assert IntOrPercent(101, True).over_100_percent
    assert not IntOrPercent(100, True).over_100_percent
    assert not IntOrPercent(500, False).over_100_percent


@pytest.mark.parametrize(
    ("value", "total", "up", "down"),
    [
        (IntOrPercent(25, True), 10, 3, 2),
        (IntOrPercent(25, True), 4, 1, 1),
        (IntOrPercent(1, True), 3, 1, 0),
        (IntOrPercent(0, True), 10, 0, 0),
        (IntOrPercent(150, True), 10, 15, 15),
        (IntOrPercent(5, False), 100, 5, 5),
    ],
)
def test_scaled_rounds_like_the_controllers(value: IntOrPercent, total: int, up: int, down: int) -> None:
    assert value.scaled(total, round_up=True) == up
    assert value.scaled(total, round_up=False) == down


def test_str_renders_as_written() -> None:
    assert str(IntOrPercent(25, True)) == "25%"
    assert str(IntOrPercent(0, False)) == "0"


def test_value_or_defaults_absent_and_null() -> None:
    default = IntOrPercent(25, True)
    assert value_or(None, default) == Parsed(default, "")
    assert value_or(0, default) == Parsed(IntOrPercent(0, False), "")
    assert value_or("x", default).value is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(0, 0), (5, 5), (-1, -1), (INT32_MAX, INT32_MAX), (INT32_MAX + 1, None), (-(2**31) - 1, None),
     (True, None), (1.0, None), ("1", None), (None, None)],
)
def test_parse_int32(raw: object, expected: object) -> None:
    assert parse_int32(raw) == expected
