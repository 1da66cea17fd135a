"""The controller's metrics: prometheus-client's exposition from a registry of each controller's own."""

from __future__ import annotations

from prometheus_client import REGISTRY

from fieldwarden.webhook.gate.metrics import ControllerMetrics
from tests.webhook.exposition import samples, value


def test_counters_and_gauges_in_the_exposition() -> None:
    metrics = ControllerMetrics()
    metrics.mark()
    metrics.mark()
    metrics.failure("conflict")
    metrics.watch_restart("timeout")
    metrics.watch_restart("timeout")
    text = metrics.render(watched=5, in_progress=1, leader=True, synced=False)
    assert value(text, "fieldwarden_controller_pods_marked_total") == 2
    assert value(text, "fieldwarden_controller_failures_total", operation="conflict") == 1
    assert value(text, "fieldwarden_controller_watch_restarts_total", reason="timeout") == 2
    assert value(text, "fieldwarden_controller_pods_watched") == 5
    assert value(text, "fieldwarden_controller_updates_in_progress") == 1
    assert value(text, "fieldwarden_controller_leader") == 1
    assert value(text, "fieldwarden_controller_synced") == 0
    assert "# TYPE fieldwarden_controller_pods_marked_total counter" in text.decode()
    assert metrics.marked == 2 and metrics.failures("conflict") == 1 and metrics.failures("mark") == 0


def test_each_controller_counts_apart_from_the_global_registry() -> None:
    first, second = ControllerMetrics(), ControllerMetrics()
    first.mark()
    assert first.marked == 1 and second.marked == 0
    assert not [key for key in samples(first.render(0, 0, False, True)) if key[0].startswith("process_")]
    assert REGISTRY.get_sample_value("fieldwarden_controller_pods_marked_total") is None
