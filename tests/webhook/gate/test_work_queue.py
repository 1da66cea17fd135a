"""The controller's work queue: each key once, delays honoured, closing wakes waiters."""

from __future__ import annotations

import threading

from fieldwarden.webhook.gate.controller import WorkQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_added_twice_is_handed_out_once() -> None:
    queue = WorkQueue()
    queue.add(("ns", "a"))
    queue.add(("ns", "a"))
    queue.add(("ns", "b"))
    assert len(queue) == 2
    assert [queue.get(), queue.get()] == [("ns", "a"), ("ns", "b")]
    assert len(queue) == 0


def test_an_earlier_add_wins_over_a_delayed_one() -> None:
    clock = Clock()
    queue = WorkQueue(clock)
    queue.add(("ns", "a"), delay=30)
    queue.add(("ns", "a"))
    assert queue.get() == ("ns", "a")
    assert len(queue) == 0


def test_a_delayed_key_waits_for_its_time() -> None:
    queue = WorkQueue()
    queue.add(("ns", "late"), delay=0.2)
    queue.add(("ns", "now"))
    assert queue.get() == ("ns", "now")
    assert queue.get() == ("ns", "late")


def test_close_wakes_a_waiting_worker() -> None:
    queue = WorkQueue()
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()))
    worker.start()
    queue.close()
    worker.join(5)
    assert not worker.is_alive() and got == [None]
