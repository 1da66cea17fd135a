"""What `fieldwarden serve` says about its autoscaler inventory: where it comes from and what it holds.

A file's or the empty inventory is complete when serve starts. A cluster's is listed in
each gunicorn worker, after the fork, so at startup serve can only say it is listing; the
first worker whose first list is done (HPAs listed, VPAs listed or their CRD absent) then
says the count, once for the whole server. Nothing waits for that list: a slow or
unreachable API server keeps `/readyz` at 503, never the webhook from starting.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import threading
from typing import Callable

from .sources import Inventory


def summary(inventory: Inventory) -> str:
    """`cluster (3 autoscalers)`, `file:hpa.yaml (1 autoscalers)`, or `cluster (listing...)` before the first list."""
    state = inventory.describe()
    if not inventory.ready():
        return f"{state['source']} (listing...)"
    absent = "; no VPA CRD" if state.get("vpa_crd") == "absent" else ""
    return f"{state['source']} ({state['size']} autoscalers{absent})"


class FirstSyncNotice:
    """Says `summary()` once an inventory's first list is done, in whichever worker gets there first.

    Made in the gunicorn master: its flag is shared memory that every worker forked
    afterwards shares, so the line is said once however many workers sync (or restart).
    `watch()` runs in a worker, after the inventory started.
    """

    def __init__(self, say: Callable[[str], None], poll_seconds: float = 0.1) -> None:
        self._say = say
        self._poll = poll_seconds
        self._said = multiprocessing.get_context("fork").Value(ctypes.c_bool, False)
        self._closed = threading.Event()

    def watch(self, inventory: Inventory) -> None:
        """Wait for the first list in a daemon thread, then say it (unless another worker did)."""
        threading.Thread(target=self._wait, args=(inventory,), name="fieldwarden-inventory-notice", daemon=True).start()

    def close(self) -> None:
        """Stop waiting (a worker that exits)."""
        self._closed.set()

    def _wait(self, inventory: Inventory) -> None:
        while not inventory.ready():
            if self._closed.wait(self._poll):
                return
        with self._said.get_lock():
            if self._said.value:
                return
            self._said.value = True
        self._say(summary(inventory))
