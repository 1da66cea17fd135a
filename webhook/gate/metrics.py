"""The readiness-gate controller's Prometheus metrics, kept by prometheus-client.

- `fieldwarden_controller_pods_marked_total`: gate conditions set "True" on new pods;
- `fieldwarden_controller_failures_total{operation}`: writes that failed (`mark`), and
  conflicts (`conflict`: the pod changed under the write; retried);
- `fieldwarden_controller_watch_restarts_total{reason}`: pod watches that ended and were
  reopened: `timeout` (the server's, routine), `expired` (410 Gone: relisted), `absent`,
  `error`;
- `fieldwarden_controller_updates_in_progress`: watched pods whose gate an in-place update
  holds "False" (running or failed updates);
- `fieldwarden_controller_pods_watched`, `fieldwarden_controller_leader` (1 on the replica
  that leads), `fieldwarden_controller_synced`.

The controller is one process, so each `ControllerMetrics` keeps its values in a
registry of its own (not prometheus-client's global one: two controllers in one test
process count apart). Label values are the controller's own words, never a pod's.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ControllerMetrics:
    """Counters written by the controller's threads; gauges handed in at scrape time."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._marked = Counter("fieldwarden_controller_pods_marked", "Readiness-gate conditions set True on new pods.",
                               registry=self.registry)
        self._failures = Counter("fieldwarden_controller_failures",
                                 "Failed writes (mark) and write conflicts (conflict).", ("operation",),
                                 registry=self.registry)
        self._restarts = Counter("fieldwarden_controller_watch_restarts", "Pod watches reopened, by reason.",
                                 ("reason",), registry=self.registry)
        self._in_progress = Gauge("fieldwarden_controller_updates_in_progress",
                                  "Watched pods an in-place update holds out of service.", registry=self.registry)
        self._watched = Gauge("fieldwarden_controller_pods_watched", "Pods carrying the injected readiness gate.",
                              registry=self.registry)
        self._leader = Gauge("fieldwarden_controller_leader", "Whether this replica leads (and writes).",
                             registry=self.registry)
        self._synced = Gauge("fieldwarden_controller_synced", "Whether the pod list has been read.",
                             registry=self.registry)

    def mark(self) -> None:
        self._marked.inc()

    def failure(self, operation: str) -> None:
        self._failures.labels(operation).inc()

    def watch_restart(self, reason: str) -> None:
        self._restarts.labels(reason).inc()

    @property
    def marked(self) -> int:
        """Conditions set "True" so far."""
        return self._count("fieldwarden_controller_pods_marked_total", {})

    def failures(self, operation: str) -> int:
        return self._count("fieldwarden_controller_failures_total", {"operation": operation})

    def watch_restarts(self, reason: str) -> int:
        return self._count("fieldwarden_controller_watch_restarts_total", {"reason": reason})

    def render(self, watched: int, in_progress: int, leader: bool, synced: bool) -> bytes:
        """The exposition text (format 0.0.4), with the gauges as given now."""
        self._watched.set(watched)
        self._in_progress.set(in_progress)
        self._leader.set(int(leader))
        self._synced.set(int(synced))
        return generate_latest(self.registry)

    def _count(self, name: str, labels: dict[str, str]) -> int:
        return int(self.registry.get_sample_value(name, labels) or 0)
