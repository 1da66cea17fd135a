"""Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`, `1`), read exactly; not a rule module.

FW403 compares a request it keeps with the limit beside it, as the API server does
(`requests.cpu` must not exceed `limits.cpu`). The grammar is apimachinery's
`resource.ParseQuantity`: a signed decimal number, then nothing, a binary suffix
(`Ki` .. `Ei`), a decimal suffix (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`) or an
exponent (`e3`, `E-2`). JSON numbers are quantities too. Values are exact decimals, so
`0.1` and `100m` are equal. Written here rather than taken from the `kubernetes` client:
the policy core imports no cluster libraries (the linter must start fast).
"""

from __future__ import annotations

import functools
import re
from decimal import Context, Decimal
from typing import Any

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(rf"({_NUMBER})(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?")
_SUFFIXES = {
    **{suffix: Decimal(1024**power) for power, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)},
    **{suffix: Decimal(10) ** power for power, suffix in ((-9, "n"), (-6, "u"), (-3, "m"))},
    **{suffix: Decimal(1000**power) for power, suffix in enumerate(("k", "M", "G", "T", "P", "E"), 1)},
}
_MAX_LENGTH = 256
_MAX_EXPONENT = 100_000  # (apimachinery refuses far smaller ones)
# Enough digits for any number _MAX_LENGTH allows times 1024**6: the arithmetic never rounds.
_EXACT = Context(prec=_MAX_LENGTH + 64, Emax=2 * _MAX_EXPONENT, Emin=-2 * _MAX_EXPONENT)


def parse_quantity(value: Any) -> Decimal | None:
    """The quantity's exact value, or None when `value` is not a quantity."""
    if type(value) is int:
        return Decimal(value)
    if type(value) is float:
        return Decimal(value) if value == value and abs(value) != float("inf") else None
    if type(value) is not str or len(value) > _MAX_LENGTH:
        return None
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)  # a cluster's templates repeat a few values: "100m", "256Mi", ...
def _parse_text(value: str) -> Decimal | None:
    match = _QUANTITY.fullmatch(value)
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    if exponent is not None:
        power = int(exponent[1:])
        return _EXACT.scaleb(Decimal(number), power) if abs(power) <= _MAX_EXPONENT else None
    return _EXACT.multiply(Decimal(number), _SUFFIXES[suffix]) if suffix else Decimal(number)


def exceeds(request: Any, limit: Any) -> bool:
    """Whether the API server would refuse this request with this limit (request > limit).

    An absent request (None) is defaulted to the limit, an absent limit bounds nothing,
    and a value that is not a quantity is the API server's to refuse: none of these exceed.
    """
    if request is None or limit is None:
        return False
    asked, bound = parse_quantity(request), parse_quantity(limit)
    return asked is not None and bound is not None and asked > bound
