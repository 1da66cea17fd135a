"""The autoscaler inventory of a live cluster: HPAs and VPAs, listed and then watched.

Two daemon threads, one per collection, each run a `Reflector` (webhook/kube/reflector.py:
client-go's list + watch loop with the official `kubernetes` client: resume from the
last resourceVersion, relist on 410 Gone, reconnect with backoff). Every list replaces
what is known of its collection, every event is applied to the AutoscalerIndex as it
arrives. VerticalPodAutoscalers are a CRD that may be absent: a 404 means "no VPAs".
A third reflector watches that one CRD (`verticalpodautoscalers.autoscaling.k8s.io`, by
name: the chart's RBAC allows no other), and the VPAs are listed as soon as it is
Established; without that permission (or before the watch is up) the VPA list is retried
every `crd_retry` seconds, so a CRD installed later is picked up either way. One deleted
later empties the VPA side (its watch answers 404). The CRD watch counts for neither
`ready()` nor `stale()`: it only makes the VPAs come sooner.

`ready()` turns true once HPAs were listed and VPAs were listed or found absent, and
stays true. `stale()` is true while either collection has had no successful list or
watch activity (a list, a watch connection opened, an event, a watch that ended
cleanly) for `stale_after` seconds, and while either is behind (`Reflector.behind`): it waits
for a relist after a 410 Gone (changes were missed: a restarted API server answers every
resumed watch so), or the API server answers its requests with errors (it is up, so that
collection can change unseen: a restarted kube-apiserver answers the VPAs' path 503 until the
CRD's handler is installed). What a request does then is the webhook's choice.
The API client is used without retries inside a call (`without_retries`): the reflectors must
see that 503 at once, not wait out its `Retry-After: 5` (the VPAs came 5 s late so).

`on_change(callback)` registers a callback run from the collections' threads after every
step that may change what `ready()`, `stale()` or `describe()` say (a list, a 410, a watch
opened or ended, a failed attempt, an autoscaler added or removed): the webhook writes its
metrics from it, so that a worker no request reaches still reports what its inventory knows.

Writes happen under a lock, and the index handed to readers is an AutoscalerIndex
whose reads and writes are atomic (`_SynchronizedIndex`), so a request never sees an
autoscaler half-replaced. A relist builds a new index and swaps it in.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from kubernetes import client

from ...policies.admission import AutoscalerIndex
from ...policies.model import ObjectKey
from ..kube.api import load_api_client, without_retries
from ..kube.reflector import Backoff, Reflector

if TYPE_CHECKING:
    from .sources import Inventory

log = logging.getLogger(__name__)

__all__ = ["Backoff", "ClusterInventory", "from_environment"]

VPA_CRD = "verticalpodautoscalers.autoscaling.k8s.io"


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
        api_client = without_retries(api_client)
        autoscaling = client.AutoscalingV2Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        extensions = client.ApiextensionsV1Api(api_client)

        def list_vpas(**kwargs: Any) -> Any:
            return custom.list_cluster_custom_object("autoscaling.k8s.io", "v1", "verticalpodautoscalers", **kwargs)

        def list_vpa_crd(**kwargs: Any) -> Any:
            return extensions.list_custom_resource_definition(field_selector=f"metadata.name={VPA_CRD}", **kwargs)

        self._lock = threading.RLock()
        self._listeners: list[Callable[[], None]] = []
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._stores: dict[str, dict[tuple[str, str], dict[str, Any]]] = {"hpa": {}, "vpa": {}}
        self._index = _SynchronizedIndex((), default_namespace)
        self._vpa_crd_established = threading.Event()  # wakes the VPA reflector waiting for its CRD
        kinds = {"hpa": ("autoscaling/v2", "HorizontalPodAutoscaler"), "vpa": ("autoscaling.k8s.io/v1", "VerticalPodAutoscaler")}
        calls = {"hpa": autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces, "vpa": list_vpas}
        self._reflectors = {
            name: Reflector(
                f"inventory: {name}",
                calls[name],
                on_replace=lambda items, version, name=name: self._replace(name, items),  # type: ignore[misc]
                on_event=lambda kind, obj, name=name: self._apply(name, kind, obj),  # type: ignore[misc]
                stopping=self._stopping,
                optional=name == "vpa",
                backoff=backoff,
                watch_timeout=self.watch_timeout,
                absent_retry=crd_retry,
                request_timeout=request_timeout,
                on_change=self._changed,
                wake=self._vpa_crd_established if name == "vpa" else None,
            )
            for name in ("hpa", "vpa")
        }
        self._crd_watch = Reflector(
            "inventory: vpa crd",
            list_vpa_crd,
            on_replace=lambda items, version: self._crd_seen(items),
            on_event=lambda kind, obj: self._crd_seen([obj] if kind != "DELETED" else []),
            stopping=self._stopping,
            optional=True,
            backoff=Backoff(backoff.initial, max(backoff.cap, crd_retry), backoff.factor, backoff.jitter),
            watch_timeout=self.watch_timeout,
            absent_retry=crd_retry,
            request_timeout=request_timeout,
            failure_log_level=logging.DEBUG,  # a role without the permission: the VPA list's retries cover it
        )
        self._kinds = kinds

    # -- the Inventory protocol ------------------------------------------------------

    def index(self) -> AutoscalerIndex:
        return self._index

    def ready(self) -> bool:
        return all(r.synced for r in self._reflectors.values())

    def stale(self) -> bool:
        age = self._age()
        return age is None or age > self.stale_after or any(r.behind for r in self._reflectors.values())

    def describe(self) -> dict[str, Any]:
        """Size, age (seconds since the least recently active collection was last heard from) and state;
        `relisting`: the collections whose watch expired and that wait for a relist; `behind`: those and
        the collections the API server answers with errors (both make the inventory stale)."""
        vpa = self._reflectors["vpa"].present
        versions = {name: r.resource_version for name, r in self._reflectors.items()}
        return {
            "source": "cluster",
            "size": len(self._index),
            "age_seconds": self._age(),
            "ready": self.ready(),
            "stale": self.stale(),
            "vpa_crd": {None: "unknown", True: "present", False: "absent"}[vpa],
            "resource_versions": versions,
            "relisting": sorted(name for name, r in self._reflectors.items() if r.relist_pending),
            "behind": sorted(name for name, r in self._reflectors.items() if r.behind),
        }

    def on_change(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(callback)

    def start(self) -> None:
        with self._lock:
            if self._threads or self._stopping.is_set():
                return
            for name, reflector in (*self._reflectors.items(), ("vpa-crd", self._crd_watch)):
                thread = threading.Thread(target=reflector.run, name=f"fieldwarden-inventory-{name}", daemon=True)
                self._threads.append(thread)
                thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopping.set()
            threads = list(self._threads)
        self._vpa_crd_established.set()  # ends the VPA reflector's wait for its CRD
        for reflector in (*self._reflectors.values(), self._crd_watch):
            reflector.cut()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- what the reflectors report ------------------------------------------------------

    def _changed(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:  # a listener's bug must not stop the collection's thread
                log.exception("inventory: a change listener failed")

    def _crd_seen(self, crds: list[dict[str, Any]]) -> None:
        """The VPA CRD as listed or watched: once Established, the VPAs can be listed now."""
        for crd in crds:
            conditions = (crd.get("status") or {}).get("conditions") or ()
            if any(isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
                   for c in conditions) and self._reflectors["vpa"].present is not True:
                log.info("inventory: the VPA CRD is established; listing VPAs")
                self._vpa_crd_established.set()

    def _age(self) -> float | None:
        seen = [r.last_activity for r in self._reflectors.values()]
        if any(t is None for t in seen):
            return None
        return time.monotonic() - min(t for t in seen if t is not None)

    def _replace(self, name: str, items: list[dict[str, Any]]) -> None:
        objects: dict[tuple[str, str], dict[str, Any]] = {}
        for item in items:
            key = self._key(name, item)
            if key is not None:
                objects[key] = item
        with self._lock:
            self._stores[name] = objects
            everything = [obj for store in self._stores.values() for obj in store.values()]
            self._index = _SynchronizedIndex(everything, self.default_namespace)

    def _apply(self, name: str, kind: str, obj: dict[str, Any]) -> None:
        key = self._key(name, obj)
        if key is None:
            return
        with self._lock:
            store = self._stores[name]
            if kind == "DELETED":
                store.pop(key, None)
                self._index.remove(obj)
            else:
                store[key] = obj
                self._index.put(obj)
        self._changed()

    def _key(self, name: str, obj: Any) -> tuple[str, str] | None:
        """(namespace, name); fills in apiVersion and kind, which list items of built-in types lack."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return None
        object_name = obj["metadata"].get("name")
        if not isinstance(object_name, str):
            return None
        api_version, kind = self._kinds[name]
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        return (str(obj["metadata"].get("namespace") or self.default_namespace), object_name)


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
    api_client = load_api_client(kubeconfig, context, program="webhook")
    if api_client is None:
        return None
    return ClusterInventory(api_client, default_namespace, **options)


if TYPE_CHECKING:
    _implements: type[Inventory] = ClusterInventory
