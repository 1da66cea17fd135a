"""The CEL text the exported policies share (policies/export/cel.py)."""

from __future__ import annotations

from typing import Any

import pytest

from fieldwarden.policies.export.cel import literal


@pytest.mark.parametrize("value, text", [
    (["a", "b"], '["a","b"]'), ("x<y>&z", '"x\\u003cy\\u003e\\u0026z"'), (True, "true"),
    ({"value": "v", "key": "k"}, '{"key":"k","value":"v"}'), ("ü\u2028", '"ü\\u2028"'),
])
def test_literals_are_written_as_go_writes_json(value: Any, text: str) -> None:
    assert literal(value) == text
