"""The webhook's Prometheus metrics, kept by prometheus-client.

- `fieldwarden_admission_requests_total{endpoint,operation,kind,decision}`: decision
  is `allowed`, `patched`, `denied` or `invalid` (a 4xx, with empty operation and kind);
- `fieldwarden_admission_duration_seconds{endpoint}`: histogram of the time to decide;
- `fieldwarden_rule_results_total{rule,result}`: `denied`, `warned`, `dryrun` (would
  have denied), `mutated`, `error` (the rule raised and was skipped);
- `fieldwarden_inventory_autoscalers`, `..._age_seconds`, `..._ready`, `..._stale`
  `{source}`: the autoscaler inventory.

**One view of the pod.** gunicorn runs several worker processes and a scrape reaches
one of them. `fieldwarden serve` therefore runs prometheus-client in its multiprocess
mode: the master makes a private, empty folder and names it in PROMETHEUS_MULTIPROC_DIR
before the workers fork (`multiproc.py`); each worker writes its values into its own
memory-mapped files there, and `/metrics` in any worker adds up the files of every
worker, live or dead, so the counters of the pod only ever go up. A dead worker's
inventory gauges are dropped (the `child_exit` hook); the live ones are combined: the
pod's inventory is as large as the largest worker's view (`livemax`), ready only when
every worker is (`livemin`), stale and old when any worker is (`livemax`). Each worker
writes its inventory gauges when it starts, whenever its inventory changes (called back from
the inventory's own threads: a list, a relist pending, a watch opened or ended, a failed
attempt, so a worker no request reaches reports its state too), on every scrape it answers,
and after a request once `INVENTORY_SECONDS` have passed (no thread of its own: a worker's
threads may be greenlets, and one that never ends holds the worker's exit). The age gauge is
as of the last of those.
Without PROMETHEUS_MULTIPROC_DIR (tests, the Flask app run in-process) the values live
in this process's own registry, which `/metrics` then shows.

**Bounded labels.** No label value comes from a request as it is: the caller passes the
request's kind only when the admission rules know it (`handlers.kind_label`), and this
module also maps an unknown operation and any request label value longer than
`MAX_LABEL_LENGTH` to `other`, and folds request series past `MAX_SERIES` into
`other`, keeping no key it was not given short, so neither memory nor a scrape can grow
with what clients send. (Rule codes and the inventory's source are cut to that length.)

**Cost per request**: one counter increment and one histogram observation (plus one
counter per rule outcome), on label children looked up once and kept in a dict.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from typing import Any, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from .multiproc import ENV as MULTIPROC_ENV

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
OTHER = "other"
# Kubernetes kinds and rule codes are far shorter; the inventory's source may be a file path.
MAX_LABEL_LENGTH = 100
# Request series (endpoint x operation x kind x decision) before new ones fold into `other`:
# a safety net, as the kinds passed in are a fixed set already.
MAX_SERIES = 500
INVENTORY_SECONDS = 5.0
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_RequestKey = tuple[str, str, str, str]


class Metrics:
    """The webhook's counters, histogram and inventory gauges (one per process: `METRICS`)."""

    def __init__(self, multiprocess_dir: str | None = None) -> None:
        """`multiprocess_dir`: the folder of every worker's files (default: $PROMETHEUS_MULTIPROC_DIR)."""
        self.multiprocess_dir = multiprocess_dir if multiprocess_dir is not None else os.environ.get(MULTIPROC_ENV)
        if self.multiprocess_dir and not getattr(values.ValueClass, "_multiprocess", False):
            raise RuntimeError(f"{MULTIPROC_ENV} was set after prometheus_client was imported: "
                               "the metrics of this process would not reach the other workers' scrapes")
        self.registry = CollectorRegistry()
        self._requests = Counter(
            "fieldwarden_admission_requests", "AdmissionReview requests answered.",
            ("endpoint", "operation", "kind", "decision"), registry=self.registry,
        )
        self._duration = Histogram(
            "fieldwarden_admission_duration_seconds", "Time to read, decide and answer a request.",
            ("endpoint",), buckets=BUCKETS, registry=self.registry,
        )
        self._rules = Counter(
            "fieldwarden_rule_results", "What admission rules decided (error: the rule raised and was skipped).",
            ("rule", "result"), registry=self.registry,
        )
        self._autoscalers = Gauge(
            "fieldwarden_inventory_autoscalers", "Autoscalers (HPA, ScaledObject, VPA) the webhook knows.",
            ("source",), registry=self.registry, multiprocess_mode="livemax",
        )
        self._ready = Gauge(
            "fieldwarden_inventory_ready", "Whether the first inventory sync is done (in every worker).",
            ("source",), registry=self.registry, multiprocess_mode="livemin",
        )
        self._stale = Gauge(
            "fieldwarden_inventory_stale", "Whether the inventory may be out of date (in any worker).",
            ("source",), registry=self.registry, multiprocess_mode="livemax",
        )
        self._age = Gauge(
            "fieldwarden_inventory_age_seconds", "Seconds since the inventory last heard from its source.",
            ("source",), registry=self.registry, multiprocess_mode="livemax",
        )
        self._lock = threading.Lock()  # (for the inventory gauges; prometheus-client locks its values)
        self._refreshing = threading.Lock()  # one refresh at a time: an older view never overwrites a newer one
        self._source: str | None = None
        self._request_children: dict[_RequestKey, Counter] = {}
        self._duration_children: dict[str, Histogram] = {}
        self._rule_children: dict[tuple[str, str], Counter] = {}
        # When this worker's inventory gauges are next written (time.perf_counter(); see `admit`).
        self.inventory_due = 0.0

    # -- recording (request threads) ----------------------------------------------------

    def observe_request(self, endpoint: str, operation: str, kind: str, decision: str, seconds: float) -> None:
        """Count one answered request and its latency; `kind` from a fixed set (see the module doc)."""
        counter = self._request_children.get((endpoint, operation, kind, decision))
        if counter is None:
            counter = self._request_child(endpoint, operation, kind, decision)
        counter.inc()
        histogram = self._duration_children.get(endpoint)
        if histogram is None:
            histogram = self._duration_children[endpoint] = self._duration.labels(_bounded(endpoint))
        histogram.observe(seconds)

    def observe_rule(self, rule: str, result: str) -> None:
        """Count one rule outcome."""
        counter = self._rule_children.get((rule, result))
        if counter is None:
            counter = self._rule_children[(rule, result)] = self._rules.labels(_bounded(rule), _bounded(result))
        counter.inc()

    def _request_child(self, endpoint: str, operation: str, kind: str, decision: str) -> Counter:
        endpoint, kind, decision = (_short(value) for value in (endpoint, kind, decision))
        operation = operation if operation in OPERATIONS or not operation else OTHER
        if len(self._request_children) >= MAX_SERIES:
            return self._requests.labels(endpoint, OTHER, OTHER, decision)  # (not kept: no key grows the dict)
        child = self._request_children[(endpoint, operation, kind, decision)] = self._requests.labels(
            endpoint, operation, kind, decision)
        return child

    # -- the inventory's gauges -------------------------------------------------------------

    def set_inventory(self, describe: Mapping[str, Any], ready: bool, stale: bool) -> None:
        """This process's view of the inventory; `describe` is an Inventory.describe() result."""
        source = _bounded(str(describe.get("source", "")))
        age = describe.get("age_seconds")
        with self._lock:
            if source != self._source:  # (one source per server; several only in tests, in one process)
                if self._source is not None and not self.multiprocess_dir:
                    for gauge in (self._autoscalers, self._ready, self._stale, self._age):
                        gauge.clear()
                self._source = source
            self._autoscalers.labels(source).set(int(describe.get("size") or 0))
            self._ready.labels(source).set(int(ready))
            self._stale.labels(source).set(int(stale))
            if isinstance(age, (int, float)):
                self._age.labels(source).set(float(age))
            elif not self.multiprocess_dir:
                self._age.clear()

    def refresh_inventory(self, inventory: Any, now: float | None = None) -> None:
        """Write `inventory`'s gauges; the next refresh is due `INVENTORY_SECONDS` after `now` (perf_counter)."""
        self.inventory_due = (time.perf_counter() if now is None else now) + INVENTORY_SECONDS
        with self._refreshing:
            self.set_inventory(inventory.describe(), inventory.ready(), inventory.stale())

    # -- reading --------------------------------------------------------------------------

    def render(self) -> bytes:
        """The exposition text (format 0.0.4): the whole pod's in multiprocess mode, else this process's."""
        if self.multiprocess_dir:
            registry = CollectorRegistry()
            registry.register(_PodCollector(self.multiprocess_dir))
            return generate_latest(registry)
        return generate_latest(self.registry)

    def requests(self, endpoint: str, operation: str, kind: str, decision: str) -> int:
        """This process's count of one request series (for tests and debugging)."""
        labels = {"endpoint": endpoint, "operation": operation, "kind": kind, "decision": decision}
        return int(self.registry.get_sample_value("fieldwarden_admission_requests_total", labels) or 0)

    def rule_results(self, rule: str, result: str) -> int:
        """This process's count of one rule outcome."""
        labels = {"rule": rule, "result": result}
        return int(self.registry.get_sample_value("fieldwarden_rule_results_total", labels) or 0)


class _PodCollector:
    """Every worker's files added up, as prometheus-client's MultiProcessCollector does, minus two races.

    A worker creates a file empty and sizes it a moment later; the library's collector
    fails the whole scrape on such a file (prometheus/client_python#1199, open), and for
    good when the worker died in that moment. A file with nothing in it yet is skipped
    here. A file removed while being read (a dead worker's gauges) means reading again.
    """

    def __init__(self, path: str) -> None:
        self._path = path

    def collect(self) -> Iterable[Metric]:
        for attempt in range(3):
            files = []
            for path in glob.glob(os.path.join(self._path, "*.db")):
                try:
                    if os.path.getsize(path) > 0:
                        files.append(path)
                except FileNotFoundError:
                    pass
            try:
                merged: Iterable[Metric] = MultiProcessCollector.merge(files, accumulate=True)  # type: ignore[no-untyped-call]
                return merged
            except FileNotFoundError:
                if attempt == 2:
                    raise
        return []


def _short(value: str) -> str:
    return value if len(value) <= MAX_LABEL_LENGTH else OTHER


def _bounded(value: str) -> str:
    return value if len(value) <= MAX_LABEL_LENGTH else value[:MAX_LABEL_LENGTH]


METRICS = Metrics()
