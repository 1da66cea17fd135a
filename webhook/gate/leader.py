"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Every replica runs `LeaderElection.run()`; at most one leads, and only the leader writes.

- The Lease records `holderIdentity`, `leaseDurationSeconds`, `acquireTime`,
  `renewTime` and `leaseTransitions`. Writes are optimistic: a replace carries the
  resourceVersion read, so two candidates racing for an expired lease cannot both win
  (the loser gets 409 Conflict).
- A candidate takes the lease when nobody holds it, or when the record has not changed
  for `lease_duration` seconds *as this candidate observed it* (its own monotonic clock:
  clocks of different nodes are never compared, only the record's changes are).
- The leader renews every `retry_period`; when it has not managed to renew for
  `renew_deadline` seconds (shorter than `lease_duration`, so it steps down before anyone
  else may take over), it stops leading. `is_leader()` says the same from any thread,
  so a writer checks it right before each write.
- On a clean stop the leader releases the lease (empty holder, duration 1 s) so that a
  standby takes over at once instead of after the lease duration.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Protocol

from kubernetes import client

from ..kube.api import CONFLICT, api_message

log = logging.getLogger(__name__)


class LeaseStore(Protocol):
    """What the election needs of the Lease API (`kube_api.Leases`)."""

    def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]: ...
    def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]: ...


def micro_time(moment: datetime | None = None) -> str:
    """A Kubernetes MicroTime (RFC 3339 with microseconds, UTC), as Lease times are."""
    moment = moment or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """This replica's name in the lease: the host (the pod's name in a cluster) and a random suffix."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


class LeaderElection:
    """One candidate for the lease `namespace/name`."""

    def __init__(
        self,
        leases: LeaseStore,
        namespace: str,
        name: str,
        identity: str | None = None,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs 0 < retry_period < renew_deadline < lease_duration")
        self.leases = leases
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading or (lambda: None)
        self.on_stopped_leading = on_stopped_leading or (lambda: None)
        self.clock = clock
        self._leading = False
        self._last_renew = float("-inf")
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = float("-inf")
        self._rng = random.Random()
        self._guard = threading.Lock()

    def is_leader(self) -> bool:
        """Whether this candidate leads now: it holds the lease and renewed it within renew_deadline."""
        with self._guard:
            return self._leading and self.clock() - self._last_renew < self.renew_deadline

    def holder(self) -> str:
        """Who holds the lease, as last read ("" when nobody or not read yet)."""
        with self._guard:
            return str(self._observed[0]) if self._observed else ""

    def run(self, stopping: threading.Event) -> None:
        """Acquire, renew and (on stop) release the lease until `stopping` is set."""
        while not stopping.is_set():
            renewed = self._try_acquire_or_renew()
            with self._guard:
                now = self.clock()
                started = stopped = False
                if renewed:
                    self._last_renew = now
                    started = not self._leading
                    self._leading = True
                elif self._leading and now - self._last_renew >= self.renew_deadline:
                    self._leading = False
                    stopped = True
            if started:
                log.info("leader election: %s leads %s/%s", self.identity, self.namespace, self.name)
                self.on_started_leading()
            if stopped:
                log.warning("leader election: %s lost %s/%s (no renewal for %ss)",
                            self.identity, self.namespace, self.name, self.renew_deadline)
                self.on_stopped_leading()
            leading = self.is_leader()
            stopping.wait(self.retry_period if leading else self.retry_period * (1 + 0.2 * self._rng.random()))
        self._release()

    # -- one round -----------------------------------------------------------------------

    def _try_acquire_or_renew(self) -> bool:
        try:
            lease = self.leases.get(self.namespace, self.name)
            if lease is None:
                self._note(self.leases.create(self.namespace, self._record(None)))
                return True
            spec = _mapping(lease.get("spec"))
            self._note(lease)
            holder = spec.get("holderIdentity") or ""
            duration = spec.get("leaseDurationSeconds") or self.lease_duration
            with self._guard:
                valid = self._observed_at + float(duration) > self.clock()
            if holder and holder != self.identity and valid:
                return False
            lease["spec"] = self._record(spec)
            self._note(self.leases.replace(self.namespace, self.name, lease))
            return True
        except client.ApiException as error:
            if error.status != CONFLICT:  # a conflict is another candidate's write: just not this round
                log.warning("leader election: %s", api_message(error))
            return False
        except Exception as error:  # unreachable API server, timeouts: not this round
            log.warning("leader election: %s: %s", type(error).__name__, error)
            return False

    def _record(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = micro_time()
        ours = previous is not None and previous.get("holderIdentity") == self.identity
        transitions = int((previous or {}).get("leaseTransitions") or 0)
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": (previous or {}).get("acquireTime") if ours else now,
            "renewTime": now,
            "leaseTransitions": transitions if ours or previous is None else transitions + 1,
        }
        if previous is None:
            return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
        return spec

    def _note(self, lease: dict[str, Any]) -> None:
        """Remember the record as read; its observation time restarts when it changed."""
        spec = _mapping(lease.get("spec"))
        metadata = _mapping(lease.get("metadata"))
        observed = (spec.get("holderIdentity") or "", spec.get("renewTime"), metadata.get("resourceVersion"))
        with self._guard:
            if observed != self._observed:
                self._observed = observed
                self._observed_at = self.clock()

    def _release(self) -> None:
        with self._guard:
            leading, self._leading = self._leading, False
        if not leading:
            return
        try:
            lease = self.leases.get(self.namespace, self.name)
            spec = _mapping((lease or {}).get("spec"))
            if lease is not None and spec.get("holderIdentity") == self.identity:
                now = micro_time()
                lease["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                                 "acquireTime": now, "renewTime": now}
                self.leases.replace(self.namespace, self.name, lease)
                log.info("leader election: %s released %s/%s", self.identity, self.namespace, self.name)
        except Exception as error:  # the lease then expires by itself
            log.warning("leader election: release failed: %s: %s", type(error).__name__, error)
        self.on_stopped_leading()


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
