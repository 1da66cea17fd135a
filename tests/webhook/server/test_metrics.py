"""The webhook's metrics in one process: the exposition, and labels that no request can grow."""

from __future__ import annotations

import gc
import random
import string
import tracemalloc
from typing import Any, Iterator

import pytest

from fieldwarden.policies.config import Settings
from fieldwarden.webhook.inventory.sources import StaticInventory
from fieldwarden.webhook.server import handlers, metrics
from fieldwarden.webhook.server.metrics import Metrics
from tests.webhook.exposition import series, value
from tests.webhook.samples import JSON, edit, encode, review


@pytest.fixture
def fresh() -> Iterator[Metrics]:
    """A Metrics of the test's own, in place of the module's for `handlers.admit`."""
    saved = handlers.METRICS
    handlers.METRICS = Metrics()
    try:
        yield handlers.METRICS
    finally:
        handlers.METRICS = saved


def test_histogram_buckets_are_cumulative() -> None:
    m = Metrics()
    for seconds in (0.0001, 0.003, 0.003, 7.0):
        m.observe_request("validate", "UPDATE", "Pod", "allowed", seconds)
    text = m.render()
    bucket = "fieldwarden_admission_duration_seconds_bucket"
    assert value(text, bucket, endpoint="validate", le="0.0005") == 1
    assert value(text, bucket, endpoint="validate", le="0.005") == 3
    assert value(text, bucket, endpoint="validate", le="2.5") == 3
    assert value(text, bucket, endpoint="validate", le="+Inf") == 4
    assert value(text, "fieldwarden_admission_duration_seconds_count", endpoint="validate") == 4
    assert abs(value(text, "fieldwarden_admission_duration_seconds_sum", endpoint="validate") - 7.0061) < 1e-9
    assert value(text, "fieldwarden_admission_requests_total", endpoint="validate", operation="UPDATE", kind="Pod",
                 decision="allowed") == 4
    assert m.requests("validate", "UPDATE", "Pod", "allowed") == 4


def test_rule_results_are_counted() -> None:
    m = Metrics()
    m.observe_rule("FW401", "denied")
    m.observe_rule("FW401", "denied")
    m.observe_rule("FW403", "warned")
    assert value(m.render(), "fieldwarden_rule_results_total", rule="FW401", result="denied") == 2
    assert m.rule_results("FW403", "warned") == 1 and m.rule_results("FW403", "error") == 0


def test_label_values_are_escaped_and_long_ones_are_other() -> None:
    m = Metrics()
    m.observe_request("mutate", "CREATE", 'We"ird\\Kind\n', "allowed", 0.001)
    m.observe_request("mutate", "PATCH", "x" * 10_000, "allowed", 0.001)
    text = m.render().decode()
    assert 'kind="We\\"ird\\\\Kind\\n"' in text
    assert 'operation="other"' in text and 'operation="PATCH"' not in text
    assert "x" * 200 not in text
    assert m.requests("mutate", "other", "other", "allowed") == 1


def test_request_series_are_bounded_even_when_the_caller_does_not_bound_them() -> None:
    m = Metrics()
    for i in range(metrics.MAX_SERIES + 50):
        m.observe_request("mutate", "CREATE", f"Kind{i}", "allowed", 0.001)
    assert m.requests("mutate", "other", "other", "allowed") == 50
    assert len(series(m.render(), "fieldwarden_admission_requests_total")) == metrics.MAX_SERIES + 1


def test_inventory_gauges() -> None:
    m = Metrics()
    m.set_inventory({"source": "cluster", "size": 4, "age_seconds": 2.5}, ready=True, stale=True)
    text = m.render()
    assert value(text, "fieldwarden_inventory_autoscalers", source="cluster") == 4
    assert value(text, "fieldwarden_inventory_age_seconds", source="cluster") == 2.5
    assert value(text, "fieldwarden_inventory_stale", source="cluster") == 1
    assert value(text, "fieldwarden_inventory_ready", source="cluster") == 1
    m.set_inventory({"source": "file", "size": 0, "age_seconds": None}, ready=True, stale=False)
    text = m.render().decode()
    assert "fieldwarden_inventory_age_seconds{" not in text and 'source="cluster"' not in text


def test_two_metrics_objects_count_apart() -> None:
    first, second = Metrics(), Metrics()
    first.observe_rule("FW401", "error")
    assert first.rule_results("FW401", "error") == 1 and second.rule_results("FW401", "error") == 0


# -- what clients send cannot grow the label set ------------------------------------------

def _kind(request: dict[str, Any], kind: str, operation: str = "CREATE") -> None:
    request["kind"]["kind"] = kind
    request["operation"] = operation


def test_client_chosen_kinds_and_operations_leave_the_label_set_and_the_scrape_small(fresh: Metrics) -> None:
    settings = Settings({"webhook": {"max-request-bytes": 4 * 1024 * 1024}})
    inventory = StaticInventory()
    base = review("pod-create")
    letters = random.Random(4)

    def send(kind: str, operation: str = "CREATE") -> None:
        body = encode(edit(base, lambda request: _kind(request, kind, operation)))
        status, _ = handlers.admit(body, JSON, "validate", settings, inventory)
        assert status == 200

    send("Warmup")  # (prometheus-client's first-use allocations are not what this measures)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20):  # 20 kinds of 1 MB each, all different
            send("".join(letters.choices(string.ascii_letters, k=1024 * 1024)))
        for i in range(1000):  # and many short ones, with operations nobody knows
            send(f"Kind{i:04d}", operation=f"HACK{i % 50}" if i % 2 else "UPDATE")
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    send("Pod")  # a known kind keeps its name
    text = fresh.render()
    labels = series(text, "fieldwarden_admission_requests_total")
    assert len(text) < 10_000, len(text)
    assert retained < 1024 * 1024, retained  # nothing of the 20 MB of kind names is kept
    assert sorted((found["operation"], found["kind"]) for found in labels) == [
        ("CREATE", "Pod"), ("CREATE", "other"), ("UPDATE", "other"), ("other", "other")]
    assert {(found["endpoint"], found["decision"]) for found in labels} == {("validate", "allowed")}
    assert fresh.requests("validate", "CREATE", "other", "allowed") == 21
    assert fresh.requests("validate", "other", "other", "allowed") == 500


@pytest.mark.parametrize(
    ("group", "kind", "label"),
    [
        ("", "Pod", "Pod"),
        ("apps", "Deployment", "Deployment"),
        ("extensions", "DaemonSet", "DaemonSet"),  # (the legacy group of a kind the rules know)
        ("batch", "CronJob", "CronJob"),
        ("", "ReplicationController", "ReplicationController"),
        ("example.com", "Pod", "other"),  # a custom resource that only borrows a name
        ("", "ConfigMap", "other"),
        ("argoproj.io", "Rollout", "Rollout"),  # named in FW403's custom-resources below
        ("argoproj.io", "Rollout" * 20, "other"),
    ],
)
def test_kind_label_is_a_kind_the_rules_know(group: str, kind: str, label: str) -> None:
    settings = Settings({"rules": {"FW403": {"custom-resources": [{"group": "argoproj.io", "kind": "Rollout"}]}}})
    request = handlers.AdmissionRequest("u", "UPDATE", group, "v1", kind, "things", "", "ns", "n", None, None, False,
                                        "user", ())
    assert handlers.kind_label(request, settings) == label


def test_requests_refresh_the_inventory_gauges_every_few_seconds(fresh: Metrics) -> None:
    body = encode(review("pod-create"))
    handlers.admit(body, JSON, "mutate", Settings(), StaticInventory(source="first"))
    handlers.admit(body, JSON, "mutate", Settings(), StaticInventory(source="second", ready=False))
    text = fresh.render()
    assert value(text, "fieldwarden_inventory_ready", source="first") == 1  # the second came too soon to count
    fresh.inventory_due = 0.0  # (as if INVENTORY_SECONDS had passed)
    handlers.admit(body, JSON, "mutate", Settings(), StaticInventory(source="second", ready=False))
    assert value(fresh.render(), "fieldwarden_inventory_ready", source="second") == 0
