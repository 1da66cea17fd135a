"""Prometheus text written by hand: escaping, buckets, a bound on series."""

from __future__ import annotations

from fieldwarden.webhook.server import metrics
from fieldwarden.webhook.server.metrics import Metrics


def samples(text: str) -> dict[str, str]:
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_histogram_buckets_are_cumulative() -> None:
    m = Metrics()
    for seconds in (0.0001, 0.003, 0.003, 7.0):
        m.observe_request("validate", "UPDATE", "Pod", "allowed", seconds)
    found = samples(m.render())
    assert found['fieldwarden_admission_duration_seconds_bucket{endpoint="validate",le="0.0005"}'] == "1"
    assert found['fieldwarden_admission_duration_seconds_bucket{endpoint="validate",le="0.005"}'] == "3"
    assert found['fieldwarden_admission_duration_seconds_bucket{endpoint="validate",le="2.5"}'] == "3"
    assert found['fieldwarden_admission_duration_seconds_bucket{endpoint="validate",le="+Inf"}'] == "4"
    assert found['fieldwarden_admission_duration_seconds_count{endpoint="validate"}'] == "4"
    assert abs(float(found['fieldwarden_admission_duration_seconds_sum{endpoint="validate"}']) - 7.0061) < 1e-9


def test_label_values_are_escaped() -> None:
    m = Metrics()
    m.observe_request("mutate", "CREATE", 'We"ird\\Kind\n', "allowed", 0.001)
    assert 'kind="We\\"ird\\\\Kind\\n"' in m.render()


def test_series_from_request_values_are_bounded() -> None:
    m = Metrics()
    for i in range(metrics.MAX_SERIES + 50):
        m.observe_request("mutate", "CREATE", f"Kind{i}", "allowed", 0.001)
    assert m.requests("mutate", "other", "other", "allowed") == 50
    assert sum(1 for line in m.render().splitlines() if line.startswith("fieldwarden_admission_requests_total")) == metrics.MAX_SERIES + 1


def test_inventory_gauges() -> None:
    text = Metrics().render({"source": "cluster", "size": 4, "age_seconds": 2.5}, ready=True, stale=True)
    found = samples(text)
    assert found['fieldwarden_inventory_autoscalers{source="cluster"}'] == "4"
    assert found['fieldwarden_inventory_age_seconds{source="cluster"}'] == "2.5"
    assert found['fieldwarden_inventory_stale{source="cluster"}'] == "1"
    assert "fieldwarden_inventory_age_seconds" not in Metrics().render({"source": "file", "size": 0, "age_seconds": None})
