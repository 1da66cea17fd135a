"""Prometheus metrics in the text exposition format (0.0.4), written by hand.

Counters and the latency histogram live in this process and are safe to update from
request threads. Each gunicorn worker process keeps its own: scrape every pod, and with
several workers per pod a scrape sees one worker's share (rates stay right on average).

- `fieldwarden_admission_requests_total{endpoint,operation,kind,decision}`: decision
  is `allowed`, `patched`, `denied` or `invalid` (a 4xx);
- `fieldwarden_admission_duration_seconds{endpoint}`: histogram of the time to decide;
- `fieldwarden_rule_results_total{rule,result}`: `denied`, `warned`, `dryrun` (would
  have denied), `mutated`, `error` (the rule raised and was skipped);
- `fieldwarden_inventory_autoscalers`, `..._age_seconds`, `..._ready`, `..._stale`:
  read from the inventory at scrape time.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from typing import Any, Mapping

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Label values come from requests; past this many series a counter lumps new ones together.
MAX_SERIES = 500
OTHER = "other"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The webhook's counters and histogram."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str, str], int] = {}
        self._rules: dict[tuple[str, str], int] = {}
        self._buckets: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}

    def observe_request(self, endpoint: str, operation: str, kind: str, decision: str, seconds: float) -> None:
        """Count one answered request and its latency."""
        with self._lock:
            key = (endpoint, operation, kind, decision)
            if key not in self._requests and len(self._requests) >= MAX_SERIES:
                key = (endpoint, OTHER, OTHER, decision)
            self._requests[key] = self._requests.get(key, 0) + 1
            buckets = self._buckets.get(endpoint)
            if buckets is None:
                buckets = self._buckets[endpoint] = [0] * (len(BUCKETS) + 1)
            buckets[bisect_left(BUCKETS, seconds)] += 1  # the first bound >= seconds (the last: +Inf)
            self._sums[endpoint] = self._sums.get(endpoint, 0.0) + seconds

    def observe_rule(self, rule: str, result: str) -> None:
        """Count one rule outcome."""
        with self._lock:
            self._rules[(rule, result)] = self._rules.get((rule, result), 0) + 1

    def requests(self, endpoint: str, operation: str, kind: str, decision: str) -> int:
        """A request counter's value (for tests and debugging)."""
        with self._lock:
            return self._requests.get((endpoint, operation, kind, decision), 0)

    def rule_results(self, rule: str, result: str) -> int:
        """A rule counter's value."""
        with self._lock:
            return self._rules.get((rule, result), 0)

    def render(self, inventory: Mapping[str, Any] | None = None, ready: bool = True, stale: bool = False) -> str:
        """The exposition text; `inventory` is an Inventory.describe() result."""
        with self._lock:
            requests = sorted(self._requests.items())
            rules = sorted(self._rules.items())
            histograms = {endpoint: (list(counts), self._sums[endpoint]) for endpoint, counts in self._buckets.items()}
        lines = [
            "# HELP fieldwarden_admission_requests_total AdmissionReview requests answered.",
            "# TYPE fieldwarden_admission_requests_total counter",
        ]
        for (endpoint, operation, kind, decision), value in requests:
            labels = label_set(endpoint=endpoint, operation=operation, kind=kind, decision=decision)
            lines.append(f"fieldwarden_admission_requests_total{labels} {value}")
        lines += [
            "# HELP fieldwarden_admission_duration_seconds Time to read, decide and answer a request.",
            "# TYPE fieldwarden_admission_duration_seconds histogram",
        ]
        for endpoint, (counts, total) in sorted(histograms.items()):
            cumulative = 0
            for bound, count in zip((*BUCKETS, math.inf), counts):
                cumulative += count
                le = "+Inf" if bound == math.inf else repr(bound)
                lines.append(f"fieldwarden_admission_duration_seconds_bucket{label_set(endpoint=endpoint, le=le)} {cumulative}")
            lines.append(f"fieldwarden_admission_duration_seconds_sum{label_set(endpoint=endpoint)} {total!r}")
            lines.append(f"fieldwarden_admission_duration_seconds_count{label_set(endpoint=endpoint)} {cumulative}")
        lines += [
            "# HELP fieldwarden_rule_results_total What admission rules decided (error: the rule raised and was skipped).",
            "# TYPE fieldwarden_rule_results_total counter",
        ]
        for (rule, result), value in rules:
            lines.append(f"fieldwarden_rule_results_total{label_set(rule=rule, result=result)} {value}")
        if inventory is not None:
            source = label_set(source=str(inventory.get("source", "")))
            lines += [
                "# HELP fieldwarden_inventory_autoscalers Autoscalers (HPA, ScaledObject, VPA) the webhook knows.",
                "# TYPE fieldwarden_inventory_autoscalers gauge",
                f"fieldwarden_inventory_autoscalers{source} {int(inventory.get('size') or 0)}",
                "# HELP fieldwarden_inventory_ready Whether the first inventory sync is done.",
                "# TYPE fieldwarden_inventory_ready gauge",
                f"fieldwarden_inventory_ready{source} {int(ready)}",
                "# HELP fieldwarden_inventory_stale Whether the inventory may be out of date.",
                "# TYPE fieldwarden_inventory_stale gauge",
                f"fieldwarden_inventory_stale{source} {int(stale)}",
            ]
            age = inventory.get("age_seconds")
            if isinstance(age, (int, float)):
                lines += [
                    "# HELP fieldwarden_inventory_age_seconds Seconds since the inventory last heard from its source.",
                    "# TYPE fieldwarden_inventory_age_seconds gauge",
                    f"fieldwarden_inventory_age_seconds{source} {float(age)!r}",
                ]
        return "\n".join(lines) + "\n"


def label_set(**labels: str) -> str:
    """`{name="value",...}`, values escaped as the exposition format wants."""
    inner = ",".join(f'{name}="{_escape(value)}"' for name, value in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


METRICS = Metrics()
