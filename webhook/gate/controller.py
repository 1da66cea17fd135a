"""The readiness-gate controller: new gated pods get their gate condition "True".

FW402 gates new pods and labels them (`fieldwarden.io/readiness-gate: injected` by
default). A gate nobody sets keeps a pod NotReady for ever; this controller sets it:

- every replica lists and watches the labelled pods of all namespaces (a `Reflector`:
  resume from resourceVersion, relist on 410 Gone, backoff) into a cache, so that a
  standby is warm when it takes over;
- each pod that changes goes into a work queue; worker threads take keys from it and,
  on the replica that leads (a Lease, `leader.LeaderElection`), set the condition of a pod
  that `gate.needs_marking` through the `pods/status` subresource;
- the patch merges by condition type (only fieldwarden's own condition is written,
  never `Ready` or `ContainersReady`, which the kubelet owns) and carries the
  resourceVersion read: if an in-place update set the condition "False" meanwhile, the
  write fails with 409 instead of flipping the held pod, and the key is looked at again;
- failures are retried with a per-pod backoff; a pod that is gone is forgotten;
- when a replica starts leading, every cached pod is looked at again (pods created
  while nobody led are marked then).
"""

from __future__ import annotations

import functools
import heapq
import logging
import random
import threading
import time
from typing import Any, Callable

from kubernetes import client

from . import condition as gate
from .metrics import ControllerMetrics
from ..kube.api import CONFLICT, NOT_FOUND, Pods, api_message
from ..kube.reflector import Backoff, Reflector

log = logging.getLogger(__name__)

PodKey = tuple[str, str]  # (namespace, name)
FIELD_MANAGER = "fieldwarden-controller"  # its status writes, and its Lease's
MARK_MESSAGE = "set by fieldwarden: the pod is not in an in-place update"


class WorkQueue:
    """Keys to look at, each at most once in the queue, optionally not before a time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, PodKey]] = []
        self._queued: dict[PodKey, float] = {}
        self._counter = 0
        self._closed = False

    def add(self, key: PodKey, delay: float = 0.0) -> None:
        due = self._clock() + delay
        with self._cond:
            if key in self._queued and self._queued[key] <= due:
                return
            self._queued[key] = due
            self._counter += 1
            heapq.heappush(self._due, (due, self._counter, key))
            self._cond.notify()

    def get(self) -> PodKey | None:
        """The next due key, waiting for one; None once closed."""
        with self._cond:
            while not self._closed:
                while self._due and self._queued.get(self._due[0][2]) != self._due[0][0]:
                    heapq.heappop(self._due)  # superseded by an earlier due time
                if self._due:
                    due, _, key = self._due[0]
                    wait = due - self._clock()
                    if wait <= 0:
                        heapq.heappop(self._due)
                        del self._queued[key]
                        return key
                    self._cond.wait(wait)
                else:
                    self._cond.wait()
            return None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queued)


class GateController:
    """Sets the readiness-gate condition of new labelled pods; see the module docstring."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        condition_type: str,
        label_selector: str,
        is_leader: Callable[[], bool] = lambda: True,
        workers: int = 2,
        metrics: ControllerMetrics | None = None,
        backoff: Backoff = Backoff(),
        retry_backoff: Backoff = Backoff(initial=0.5, cap=60.0),
        watch_timeout: int = 300,
        request_timeout: float = 30.0,
    ) -> None:
        self.condition_type = condition_type
        self.label_selector = label_selector
        self.is_leader = is_leader
        self.metrics = metrics or ControllerMetrics()
        self.retry_backoff = retry_backoff
        self.pods = Pods(api_client, request_timeout, field_manager=FIELD_MANAGER)
        self.queue = WorkQueue()
        self._workers = workers
        self._lock = threading.Lock()
        self._cache: dict[PodKey, dict[str, Any]] = {}
        self._failures: dict[PodKey, int] = {}
        # Pods marked whose watch event showing it has not come yet: an older event (the
        # kubelet's, say) may still arrive first, and must not trigger a second write.
        self._marked: set[PodKey] = set()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._rng = random.Random()
        core = client.CoreV1Api(api_client)
        self.reflector = Reflector(
            "controller: pods",
            functools.partial(core.list_pod_for_all_namespaces, label_selector=label_selector),
            on_replace=self._replace,
            on_event=self._event,
            stopping=self._stopping,
            backoff=backoff,
            watch_timeout=watch_timeout,
            request_timeout=request_timeout,
            on_restart=self.metrics.watch_restart,
        )

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        if self._threads or self._stopping.is_set():
            return
        targets = [("watch", self.reflector.run)] + [(f"worker-{n}", self._work) for n in range(self._workers)]
        for name, target in targets:
            thread = threading.Thread(target=target, name=f"fieldwarden-controller-{name}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self.queue.close()
        self.reflector.cut()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def alive(self) -> bool:
        """Whether every thread that should run does (for /healthz)."""
        return bool(self._threads) and all(t.is_alive() for t in self._threads) and not self._stopping.is_set()

    def synced(self) -> bool:
        return self.reflector.synced

    def started_leading(self) -> None:
        """Look at every cached pod again: pods created while nobody led get marked now."""
        with self._lock:
            keys = list(self._cache)
        for key in keys:
            self.queue.add(key)

    def snapshot(self) -> tuple[int, int]:
        """(pods watched, pods an update holds "False")."""
        with self._lock:
            pods = list(self._cache.values())
        return len(pods), sum(1 for pod in pods if gate.held(pod, self.condition_type))

    # -- the cache -------------------------------------------------------------------------

    def _replace(self, items: list[dict[str, Any]], version: str | None) -> None:
        fresh = {key: pod for pod in items if (key := _key(pod)) is not None}
        with self._lock:
            self._cache = fresh
            self._failures = {key: n for key, n in self._failures.items() if key in fresh}
            self._marked.clear()  # (a list shows every pod as it is now)
        for key in fresh:
            self.queue.add(key)

    def _event(self, kind: str, pod: dict[str, Any]) -> None:
        key = _key(pod)
        if key is None:
            return
        with self._lock:
            if kind == "DELETED":
                self._cache.pop(key, None)
                self._failures.pop(key, None)
                self._marked.discard(key)
                return
            self._cache[key] = pod
            if gate.condition(pod, self.condition_type) is not None:
                self._marked.discard(key)
        self.queue.add(key)

    # -- the work ------------------------------------------------------------------------

    def _work(self) -> None:
        while not self._stopping.is_set():
            key = self.queue.get()
            if key is None:
                return
            try:
                self._handle(key)
            except Exception:  # a bug must not end the worker: log it and look again later
                log.exception("controller: handling %s/%s failed", *key)
                self._retry(key)

    def _handle(self, key: PodKey) -> None:
        if not self.is_leader():
            return  # the leader does the writing; started_leading() requeues everything
        with self._lock:
            pod = self._cache.get(key)
            pending = key in self._marked
        if pod is None or pending or not gate.needs_marking(pod, self.condition_type):
            return
        version = (pod.get("metadata") or {}).get("resourceVersion")
        patch = gate.condition_patch(self.condition_type, gate.TRUE, gate.REASON_NEW_POD, MARK_MESSAGE, version)
        if not self.is_leader():  # (the lease may have been lost while the pod was looked at)
            return
        try:
            self.pods.patch_status(key[0], key[1], patch)
        except client.ApiException as error:
            if error.status == NOT_FOUND:
                return
            if error.status == CONFLICT:  # it changed under us: the watch brings the news; look again
                self.metrics.failure("conflict")
                self.queue.add(key, 0.5)
                return
            log.warning("controller: marking %s/%s failed: %s", key[0], key[1], api_message(error))
            self.metrics.failure("mark")
            self._retry(key)
            return
        except Exception as error:  # connection trouble: later
            log.warning("controller: marking %s/%s failed: %s: %s", key[0], key[1], type(error).__name__, error)
            self.metrics.failure("mark")
            self._retry(key)
            return
        self.metrics.mark()
        with self._lock:
            self._failures.pop(key, None)
            self._marked.add(key)
        log.info("controller: set %s True on %s/%s", self.condition_type, key[0], key[1])

    def _retry(self, key: PodKey) -> None:
        with self._lock:
            failures = self._failures[key] = self._failures.get(key, 0) + 1
        self.queue.add(key, self.retry_backoff.delay(failures, self._rng))


def _key(pod: dict[str, Any]) -> PodKey | None:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        return None
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str):
        return None
    return (namespace, name)
