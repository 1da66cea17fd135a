"""The readiness-gate controller's Prometheus metrics (text exposition format 0.0.4).

- `fieldwarden_controller_pods_marked_total`: gate conditions set "True" on new pods;
- `fieldwarden_controller_failures_total{operation}`: writes that failed (`mark`), and
  conflicts (`conflict`: the pod changed under the write; retried);
- `fieldwarden_controller_watch_restarts_total{reason}`: pod watches that ended and were
  reopened: `timeout` (the server's, routine), `expired` (410 Gone: relisted), `error`;
- `fieldwarden_controller_updates_in_progress`: watched pods whose gate an in-place update
  holds "False" (running or failed updates);
- `fieldwarden_controller_pods_watched`, `fieldwarden_controller_leader` (1 on the replica
  that leads), `fieldwarden_controller_synced`.
"""

from __future__ import annotations

import threading

from ..server.metrics import label_set


class ControllerMetrics:
    """Counters written by the controller's threads; gauges handed in at scrape time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.marked = 0
        self._failures: dict[str, int] = {}
        self._restarts: dict[str, int] = {}

    def mark(self) -> None:
        with self._lock:
            self.marked += 1

    def failure(self, operation: str) -> None:
        with self._lock:
            self._failures[operation] = self._failures.get(operation, 0) + 1

    def watch_restart(self, reason: str) -> None:
        with self._lock:
            self._restarts[reason] = self._restarts.get(reason, 0) + 1

    def failures(self, operation: str) -> int:
        with self._lock:
            return self._failures.get(operation, 0)

    def watch_restarts(self, reason: str) -> int:
        with self._lock:
            return self._restarts.get(reason, 0)

    def render(self, watched: int, in_progress: int, leader: bool, synced: bool) -> str:
        with self._lock:
            marked = self.marked
            failures = sorted(self._failures.items())
            restarts = sorted(self._restarts.items())
        lines = [
            "# HELP fieldwarden_controller_pods_marked_total Readiness-gate conditions set True on new pods.",
            "# TYPE fieldwarden_controller_pods_marked_total counter",
            f"fieldwarden_controller_pods_marked_total {marked}",
            "# HELP fieldwarden_controller_failures_total Failed writes (mark) and write conflicts (conflict).",
            "# TYPE fieldwarden_controller_failures_total counter",
            *(f"fieldwarden_controller_failures_total{label_set(operation=op)} {n}" for op, n in failures),
            "# HELP fieldwarden_controller_watch_restarts_total Pod watches reopened, by reason.",
            "# TYPE fieldwarden_controller_watch_restarts_total counter",
            *(f"fieldwarden_controller_watch_restarts_total{label_set(reason=r)} {n}" for r, n in restarts),
            "# HELP fieldwarden_controller_updates_in_progress Watched pods an in-place update holds out of service.",
            "# TYPE fieldwarden_controller_updates_in_progress gauge",
            f"fieldwarden_controller_updates_in_progress {in_progress}",
            "# HELP fieldwarden_controller_pods_watched Pods carrying the injected readiness gate.",
            "# TYPE fieldwarden_controller_pods_watched gauge",
            f"fieldwarden_controller_pods_watched {watched}",
            "# HELP fieldwarden_controller_leader Whether this replica leads (and writes).",
            "# TYPE fieldwarden_controller_leader gauge",
            f"fieldwarden_controller_leader {int(leader)}",
            "# HELP fieldwarden_controller_synced Whether the pod list has been read.",
            "# TYPE fieldwarden_controller_synced gauge",
            f"fieldwarden_controller_synced {int(synced)}",
        ]
        return "\n".join(lines) + "\n"
