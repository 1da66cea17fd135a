"""Bounded waiting for the tests that drive background threads and processes."""

from __future__ import annotations

import time
from typing import Callable


def eventually(check: Callable[[], bool], what: str, timeout: float = 5.0) -> float:
    """Poll `check` until it holds (seconds it took), failing with `what` after `timeout`."""
    began = time.monotonic()
    while not check():
        assert time.monotonic() - began < timeout, f"gave up waiting for: {what}"
        time.sleep(0.02)
    return time.monotonic() - began
