"""The autoscaler inventory of a live cluster: HPAs and VPAs, listed and then watched.

Two daemon threads, one per collection, each run the list + watch loop of a
client-go reflector with the official `kubernetes` client:

- list the collection (all namespaces) and replace what is known of it; then watch
  from the list's resourceVersion, with bookmarks, and apply every event to the
  AutoscalerIndex as it arrives;
- a watch that ends (the server's timeoutSeconds) or breaks resumes from the last
  resourceVersion seen (an object's or a bookmark's): no relist;
- `410 Gone` (an HTTP 410 on the watch request, or an ERROR event with code 410 in
  the stream: the resourceVersion left the server's history) means relist;
- other errors reconnect after an exponential backoff with jitter, capped;
- VerticalPodAutoscalers are a CRD that may be absent: a 404 means "no VPAs", and the
  list is retried every `crd_retry` seconds so that a CRD installed later is picked up
  (and one deleted later empties the VPA side).

`ready()` turns true once HPAs were listed and VPAs were listed or found absent, and
stays true. `stale()` is true while either collection has had no successful list or
watch activity (a list, a watch connection opened, an event, a watch that ended
cleanly) for `stale_after` seconds; what a request does then is the webhook's choice.

Writes happen under a lock, and the index handed to readers is an AutoscalerIndex
whose reads and writes are atomic (`_SynchronizedIndex`), so a request never sees an
autoscaler half-replaced. A relist builds a new index and swaps it in.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple

from kubernetes import client, config, watch

from ..policies.admission import AutoscalerIndex
from ..policies.model import ObjectKey

if TYPE_CHECKING:
    from .inventory import Inventory

log = logging.getLogger(__name__)

GONE = 410
NOT_FOUND = 404


class Backoff(NamedTuple):
    """Delay before reconnecting after the n-th failure in a row: exponential, capped, jittered."""

    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.25  # up to this fraction of the delay is taken off at random

    def delay(self, failures: int, rng: random.Random) -> float:
        base = min(self.cap, self.initial * self.factor ** max(0, failures - 1))
        return base * (1.0 - self.jitter * rng.random())


class _Collection(NamedTuple):
    """One watched collection: how to list it and what its objects are."""

    name: str  # "hpa" | "vpa", for logs and describe()
    api_version: str
    kind: str
    optional: bool  # a CRD that may be absent: 404 means "none"
    call: Callable[..., Any]  # the client's list function, watch=True for a watch


class _Progress:
    """Where one collection's loop stands: written by that loop's thread, read by any."""

    def __init__(self) -> None:
        self.resource_version: str | None = None
        self.synced = False  # listed (or found absent) at least once
        self.present: bool | None = None  # for an optional CRD: None until first asked
        self.failures = 0
        self.last_activity: float | None = None  # time.monotonic()
        self.response: Any = None  # the open watch response, to cut on stop()


class _SynchronizedIndex(AutoscalerIndex):
    """An AutoscalerIndex whose reads and writes exclude each other (one writer thread per collection)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), default_namespace: str = "default") -> None:
        self._guard = threading.RLock()  # put() calls remove()
        super().__init__(objects, default_namespace)

    def put(self, obj: Mapping[str, Any]) -> None:
        with self._guard:
            super().put(obj)

    def remove(self, obj: Mapping[str, Any]) -> None:
        with self._guard:
            super().remove(obj)

    def horizontal(self, target: ObjectKey) -> list[Mapping[str, Any]]:
        with self._guard:
            return super().horizontal(target)

    def vertical(self, target: ObjectKey) -> list[Mapping[str, Any]]:
        with self._guard:
            return super().vertical(target)

    def __len__(self) -> int:
        with self._guard:
            return super().__len__()


class _Stopped(Exception):
    """stop() was called while a request was being made."""


class ClusterInventory:
    """HPAs (autoscaling/v2) and VPAs (autoscaling.k8s.io/v1) of all namespaces, kept current.

    Building it makes no API call and starts no thread; `start()` does (in the worker
    process, after a fork). `stop()` ends the threads promptly: it cuts open watch
    connections and wakes waiting loops; an in-flight list is bounded by
    `request_timeout`. A stopped inventory does not start again.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        default_namespace: str = "default",
        *,
        stale_after: float = 180.0,
        backoff: Backoff = Backoff(),
        watch_timeout: int = 60,
        crd_retry: float = 30.0,
        request_timeout: float = 30.0,
    ) -> None:
        if watch_timeout < 1 or stale_after <= watch_timeout or stale_after <= crd_retry:
            raise ValueError(
                "stale_after must exceed watch_timeout and crd_retry (a quiet, healthy watch "
                "shows activity only once per watch_timeout), and watch_timeout must be >= 1"
            )
        self.default_namespace = default_namespace
        self.stale_after = stale_after
        self.backoff = backoff
        self.watch_timeout = int(watch_timeout)
        self.crd_retry = crd_retry
        self.request_timeout = request_timeout
        autoscaling = client.AutoscalingV2Api(api_client)
        custom = client.CustomObjectsApi(api_client)

        def list_vpas(**kwargs: Any) -> Any:
            return custom.list_cluster_custom_object("autoscaling.k8s.io", "v1", "verticalpodautoscalers", **kwargs)

        self._collections = (
            _Collection(
                "hpa", "autoscaling/v2", "HorizontalPodAutoscaler", False,
                autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces,
            ),
            _Collection("vpa", "autoscaling.k8s.io/v1", "VerticalPodAutoscaler", True, list_vpas),
        )
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._progress = {c.name: _Progress() for c in self._collections}
        self._stores: dict[str, dict[tuple[str, str], dict[str, Any]]] = {c.name: {} for c in self._collections}
        self._index = _SynchronizedIndex((), default_namespace)
        self._rng = random.Random()

    # -- the Inventory protocol ------------------------------------------------------

    def index(self) -> AutoscalerIndex:
        return self._index

    def ready(self) -> bool:
        with self._lock:
            return all(p.synced for p in self._progress.values())

    def stale(self) -> bool:
        age = self._age()
        return age is None or age > self.stale_after

    def describe(self) -> dict[str, Any]:
        """Size, age (seconds since the least recently active collection was last heard from) and state."""
        with self._lock:
            vpa = self._progress["vpa"].present
            versions = {name: p.resource_version for name, p in self._progress.items()}
        return {
            "source": "cluster",
            "size": len(self._index),
            "age_seconds": self._age(),
            "ready": self.ready(),
            "stale": self.stale(),
            "vpa_crd": {None: "unknown", True: "present", False: "absent"}[vpa],
            "resource_versions": versions,
        }

    def start(self) -> None:
        with self._lock:
            if self._threads:
                return
            for collection in self._collections:
                thread = threading.Thread(
                    target=self._run, args=(collection,), name=f"fieldwarden-inventory-{collection.name}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopping.set()
            for progress in self._progress.values():
                _cut(progress.response)
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- the loop ----------------------------------------------------------------------

    def _age(self) -> float | None:
        with self._lock:
            seen = [p.last_activity for p in self._progress.values()]
        if any(t is None for t in seen):
            return None
        return time.monotonic() - min(t for t in seen if t is not None)

    def _touch(self, collection: _Collection) -> None:
        self._progress[collection.name].last_activity = time.monotonic()

    def _run(self, collection: _Collection) -> None:
        progress = self._progress[collection.name]
        stream = watch.Watch(return_type="object")  # "object": plain dicts, bookmarks tracked
        while not self._stopping.is_set():
            try:
                if progress.resource_version is None:
                    if not self._relist(collection):
                        self._stopping.wait(self.crd_retry)
                        continue
                self._watch(collection, stream)
            except _Stopped:
                break
            except client.ApiException as error:
                if self._stopping.is_set():
                    break
                if error.status == GONE:
                    log.info("inventory: %s watch expired (410 Gone); relisting", collection.name)
                    progress.resource_version = None
                    self._fail(progress, first_is_free=True)
                elif error.status == NOT_FOUND and collection.optional:
                    log.info("inventory: %s went away (404); relisting", collection.name)
                    progress.resource_version = None
                else:
                    log.warning("inventory: %s: API error %s %s", collection.name, error.status, error.reason)
                    self._fail(progress)
            except Exception as error:  # connection refused / reset, bad JSON...: reconnect
                if self._stopping.is_set():
                    break
                log.warning("inventory: %s: %s: %s", collection.name, type(error).__name__, error)
                self._fail(progress)

    def _fail(self, progress: _Progress, first_is_free: bool = False) -> None:
        progress.failures += 1
        if first_is_free and progress.failures == 1:
            return
        self._stopping.wait(self.backoff.delay(progress.failures, self._rng))

    def _relist(self, collection: _Collection) -> bool:
        """List and replace the collection; False when its CRD is absent (then it is empty)."""
        progress = self._progress[collection.name]
        try:
            response = collection.call(_preload_content=False, _request_timeout=self.request_timeout)
        except client.ApiException as error:
            if error.status != NOT_FOUND or not collection.optional:
                raise
            if progress.present is not False:
                log.info("inventory: no %s CRD (404); retrying every %ss", collection.kind, self.crd_retry)
            self._replace(collection, {}, None, present=False)
            return False
        try:
            body = json.loads(response.data)
        finally:
            response.release_conn()
        objects: dict[tuple[str, str], dict[str, Any]] = {}
        for item in body.get("items") or ():
            key = self._key(collection, item)
            if key is not None:
                objects[key] = item
        version = (body.get("metadata") or {}).get("resourceVersion")
        if not isinstance(version, str) or not version:
            raise ValueError(f"{collection.kind} list without metadata.resourceVersion")
        self._replace(collection, objects, version, present=True)
        log.info("inventory: listed %d %s at resourceVersion %s", len(objects), collection.name, version)
        return True

    def _replace(
        self, collection: _Collection, objects: dict[tuple[str, str], dict[str, Any]], version: str | None, present: bool
    ) -> None:
        with self._lock:
            self._stores[collection.name] = objects
            everything = [obj for store in self._stores.values() for obj in store.values()]
            self._index = _SynchronizedIndex(everything, self.default_namespace)
            progress = self._progress[collection.name]
            progress.resource_version = version
            progress.present = present
            progress.synced = True
            self._touch(collection)

    def _watch(self, collection: _Collection, stream: watch.Watch) -> None:
        """One watch request, from the last resourceVersion, until the server ends it."""
        progress = self._progress[collection.name]

        def open_watch(**kwargs: Any) -> Any:
            response = collection.call(**kwargs)
            with self._lock:
                if self._stopping.is_set():
                    response.close()
                    raise _Stopped
                progress.response = response
            self._touch(collection)
            return response

        try:
            for event in stream.stream(
                open_watch,
                resource_version=progress.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self.watch_timeout,
                _request_timeout=(self.request_timeout, self.watch_timeout + self.request_timeout),
            ):
                if self._stopping.is_set():
                    raise _Stopped
                self._apply(collection, event)
        finally:
            with self._lock:
                progress.response = None
        progress.failures = 0
        self._touch(collection)

    def _apply(self, collection: _Collection, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("raw_object")
        if not isinstance(obj, dict):
            return
        meta = obj.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            key = self._key(collection, obj)
            if key is not None:
                with self._lock:
                    store = self._stores[collection.name]
                    if kind == "DELETED":
                        store.pop(key, None)
                        self._index.remove(obj)
                    else:
                        store[key] = obj
                        self._index.put(obj)
        progress = self._progress[collection.name]
        if isinstance(version, str) and version:
            progress.resource_version = version  # objects and BOOKMARKs alike
        progress.failures = 0
        self._touch(collection)

    def _key(self, collection: _Collection, obj: Any) -> tuple[str, str] | None:
        """(namespace, name); fills in apiVersion and kind, which list items of built-in types lack."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return None
        name = obj["metadata"].get("name")
        if not isinstance(name, str):
            return None
        obj.setdefault("apiVersion", collection.api_version)
        obj.setdefault("kind", collection.kind)
        return (str(obj["metadata"].get("namespace") or self.default_namespace), name)


def _cut(response: Any) -> None:
    """Shut the socket under an open watch response so that the blocked read returns now."""
    connection = getattr(response, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def from_environment(
    default_namespace: str = "default",
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    **options: Any,
) -> ClusterInventory | None:
    """A ClusterInventory for the cluster this process runs in or its kubeconfig points at.

    In-cluster configuration (service account) first, then the kubeconfig (`KUBECONFIG`
    or ~/.kube/config); None when there is neither. A kubeconfig or context named
    explicitly must load: its errors are raised. `options` go to ClusterInventory.
    """
    configuration = client.Configuration()
    if kubeconfig is None and context is None:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            try:
                config.load_kube_config(client_configuration=configuration)
            except config.ConfigException:
                return None
    else:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    return ClusterInventory(client.ApiClient(configuration), default_namespace, **options)


if TYPE_CHECKING:
    _implements: type[Inventory] = ClusterInventory
