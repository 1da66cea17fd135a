"""Resource quantities as FW403 compares them, checked against the kubernetes client's parser."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as client_parse

from fieldwarden.policies.rules._quantity import exceeds, parse_quantity

SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"]


@st.composite
def quantities(draw: st.DrawFn) -> str:
    """Strings of apimachinery's quantity grammar: sign, number, suffix or exponent."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", max_size=4))
    fraction = draw(st.text("0123456789", max_size=3))
    if not whole and not fraction:
        whole = "0"
    number = whole + ("." + fraction if fraction or draw(st.booleans()) else "")
    if draw(st.booleans()):
        tail = draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + str(draw(st.integers(0, 20)))
    else:
        tail = draw(st.sampled_from(SUFFIXES))
    return sign + number + tail


@settings(max_examples=300, deadline=None)
@given(quantities())
def test_values_match_the_kubernetes_client(text: str) -> None:
    assert parse_quantity(text) == Decimal(client_parse(text))


@pytest.mark.parametrize(
    "text, value",
    [("100m", Decimal("0.1")), ("0.1", Decimal("0.1")), ("1e3", 1000), ("1E", 10**18), ("1.5Gi", 3 * 2**29),
     (".5", Decimal("0.5")), ("1.", 1), ("-2n", Decimal("-2e-9")), (2, 2), (0.25, Decimal("0.25"))],
)
def test_notations(text: Any, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "value", ["", "m", "1e", "1K", "1 ", " 1", "1_000", "0x10", "1Mi ", "١", "1e999999", "1" * 300, True, None, [], {}, float("nan")]
)
def test_not_quantities(value: Any) -> None:
    assert parse_quantity(value) is None


def test_exceeds_as_the_api_server_validates() -> None:
    assert exceeds("100m", "80m") and exceeds("2Gi", "2G")
    assert not exceeds("100m", "0.1") and not exceeds("1Gi", "1073741824")
    assert not exceeds(None, "1") and not exceeds("1", None)  # defaulted to the limit / unbounded
    assert not exceeds("1x", "1m") and not exceeds("1", {"deep": []})  # the API server's to refuse
