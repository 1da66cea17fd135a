"""A kubelet stand-in for the end-to-end tests: one node's worth of pod status, written through the API.

The test clusters have no kubelet (and no scheduler), so pods stay Pending and nothing ever reports a
container. `Kubelet(cluster, namespace).start()` plays one node for the pods of one namespace, as
a client of the real API server only (a list + watch of the namespace's pods, and writes):

- a pod it sees unbound is bound to its node (`pods/binding`, the scheduler's part: the API server
  then adds `PodScheduled`);
- a bound pod is started: a strategic-merge patch of `pods/status` (field manager `e2e-kubelet`)
  with `phase: Running`, the pod's IPs, one `containerStatuses` entry per container (`imageID`
  `<repository>@sha256:<hex>` from `resolve`, a `containerd://` containerID, running, ready,
  started, restartCount) and the conditions a kubelet owns (`Initialized`, `ContainersReady`,
  `Ready`, `PodReadyToStartContainers`), merged by type, so other writers' conditions stay;
- `Ready` is computed as the kubelet does: containers ready and every `spec.readinessGates`
  condition "True", recomputed whenever the pod changes (a controller writing its gate, say);
- a container whose `spec.containers[*].image` changes is restarted in place: one write with it
  terminated (not ready), `restart_seconds` later one with a new containerID, restartCount + 1
  and the new image's imageID, ready.

`events` keeps every pod version the watch delivered, in order (`history(name)`), so a test can
check the sequence of a pod's states; `writes` what this stand-in wrote. Not modelled: probes,
init containers, resources, pull failures, deletion (the fake kubelet of tests/webhook models
failures on demand).
"""

from __future__ import annotations

import copy
import hashlib
import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

from tests.e2e.cluster import Cluster

FIELD_MANAGER = "e2e-kubelet"
NODE = "e2e-node"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
OWN_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
Obj = dict[str, Any]


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def repository(image: str) -> str:
    """`registry.example/web:1.0` -> `registry.example/web` (digest and tag dropped)."""
    name = image.split("@", 1)[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    return name[:colon] if colon > slash else name


@dataclass
class Container:
    image: str  # the spec image it runs
    image_id: str
    container_id: str
    restart_count: int
    started_at: str
    running: bool = True
    last_state: Obj | None = None

    def status(self, name: str) -> Obj:
        state: Obj
        if self.running:
            state = {"running": {"startedAt": self.started_at}}
        else:
            state = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": self.started_at,
                                    "finishedAt": stamp(), "containerID": self.container_id}}
        return {"name": name, "image": self.image, "imageID": self.image_id, "containerID": self.container_id,
                "ready": self.running, "started": self.running, "restartCount": self.restart_count,
                "state": state, "lastState": copy.deepcopy(self.last_state or {})}


class Kubelet:
    """One node for the pods of `namespace`; see the module docstring."""

    def __init__(self, cluster: Cluster, namespace: str, *, restart_seconds: float = 0.1) -> None:
        assert cluster.pki is not None, "the cluster has not been started"
        self.cluster = cluster
        self.namespace = namespace
        self.restart_seconds = restart_seconds
        self.digests: dict[str, str] = {}  # image -> sha256:...; default: a hash of the reference
        self.events: list[tuple[str, Obj]] = []  # (watch event type, pod), in the order delivered
        self.writes: list[tuple[str, str]] = []  # (pod name, what)
        self._containers: dict[str, dict[str, Container]] = {}  # pod uid -> container name -> state
        self._ips = iter(range(10, 250))
        self._pod_ips: dict[str, str] = {}
        self._started_at: dict[str, str] = {}
        self._ids = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._connection: http.client.HTTPSConnection | None = None
        self._thread = threading.Thread(target=self._run, name=f"e2e-kubelet-{namespace}", daemon=True)
        self.error: BaseException | None = None
        self._context = ssl.create_default_context(cafile=str(cluster.ca))
        self._context.load_cert_chain(str(cluster.pki.admin.cert), str(cluster.pki.admin.key))

    # -- what the tests use ----------------------------------------------------------------

    def start(self) -> Kubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            connection = self._connection
        sock = connection.sock if connection is not None else None
        if isinstance(sock, socket.socket):  # a blocked read of the watch returns now
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(10)
        assert not self._thread.is_alive(), "the kubelet stand-in did not stop"

    def resolve(self, image: str) -> str:
        """The imageID it reports for an image reference."""
        digest = self.digests.get(image) or "sha256:" + hashlib.sha256(image.encode()).hexdigest()
        return f"{repository(image)}@{digest}"

    def history(self, name: str) -> list[Obj]:
        """Every version of pod `name` the watch delivered, oldest first."""
        with self._lock:
            return [pod for _, pod in self.events if pod["metadata"]["name"] == name]

    # -- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                listed = self.cluster.api.get(f"/api/v1/namespaces/{self.namespace}/pods")
                for pod in listed["items"]:
                    self._sync(pod)
                version = listed["metadata"]["resourceVersion"]
                for kind, pod in self._watch(version):
                    with self._lock:
                        self.events.append((kind, pod))
                    if kind in ("ADDED", "MODIFIED"):
                        self._sync(pod)
        except BaseException as error:  # shown by the test (`error`) rather than lost in a thread
            if not self._stopping.is_set():
                self.error = error
                raise

    def _watch(self, version: str) -> Iterator[tuple[str, Obj]]:
        """Events after `version` until the server ends the watch (or a 410: the caller lists again)."""
        url = urllib.parse.urlsplit(self.cluster.url)
        connection = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port, context=self._context,
                                                 timeout=60)
        query = urllib.parse.urlencode({"watch": "1", "resourceVersion": version, "timeoutSeconds": "30"})
        with self._lock:
            self._connection = connection
        try:
            connection.request("GET", f"/api/v1/namespaces/{self.namespace}/pods?{query}",
                               headers={"Accept": "application/json", "User-Agent": "e2e-kubelet"})
            response = connection.getresponse()
            if self._stopping.is_set():
                return
            assert response.status == 200, f"watch: {response.status} {response.read()!r}"
            while not self._stopping.is_set():
                line = response.readline()
                if not line:
                    return
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return
                if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    yield event["type"], event["object"]
        except (OSError, http.client.HTTPException):
            if not self._stopping.is_set():
                raise
        finally:
            connection.close()

    # -- one pod ---------------------------------------------------------------------------

    def _sync(self, pod: Obj) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            return
        if not spec.get("nodeName"):
            self._bind(name)
            return  # the binding's own event comes next
        containers = self._containers.setdefault(meta["uid"], {})
        changed: dict[str, str] = {}
        for container in spec["containers"]:
            running = containers.get(container["name"])
            if running is None:
                containers[container["name"]] = Container(container["image"], self.resolve(container["image"]),
                                                          self._container_id(), 0, stamp())
            elif running.image != container["image"]:
                changed[container["name"]] = container["image"]
        if changed:
            self._restart(pod, changed)
        else:
            self._write_status(pod, "status")

    def _restart(self, pod: Obj, images: dict[str, str]) -> None:
        """Kill the containers whose image changed, then start them with their new image."""
        containers = self._containers[pod["metadata"]["uid"]]
        for name in images:
            containers[name].running = False
        self._write_status(pod, "kill " + ", ".join(images))
        self._stopping.wait(self.restart_seconds)
        for name, image in images.items():
            running = containers[name]
            running.last_state = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": running.started_at,
                                                 "finishedAt": stamp(), "containerID": running.container_id}}
            running.image, running.image_id, running.container_id = image, self.resolve(image), self._container_id()
            running.restart_count += 1
            running.started_at = stamp()
            running.running = True
        self._write_status(pod, "start " + ", ".join(f"{n}={i}" for n, i in images.items()))

    def _container_id(self) -> str:
        self._ids += 1
        return "containerd://" + hashlib.sha256(f"{self.namespace}/{self._ids}".encode()).hexdigest()

    def _bind(self, name: str) -> None:
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}
        response = self.cluster.api.request("POST", f"/api/v1/namespaces/{self.namespace}/pods/{name}/binding",
                                            binding)
        if response.ok:
            self.writes.append((name, "bind"))
        elif response.status not in (404, 409):  # deleted meanwhile, or bound already
            raise AssertionError(f"binding {name}: {response.status} {response.body}")

    def _write_status(self, pod: Obj, what: str) -> None:
        """Patch the status this node reports, unless the pod already shows exactly that."""
        meta, spec = pod["metadata"], pod["spec"]
        name, uid = meta["name"], meta["uid"]
        containers = self._containers[uid]
        statuses = [containers[c["name"]].status(c["name"]) for c in spec["containers"]]
        current = pod.get("status") or {}
        ready = all(s["ready"] for s in statuses)
        gates_true = all(self._condition(current, g["conditionType"]) == "True"
                         for g in spec.get("readinessGates") or [])
        own = {
            "PodReadyToStartContainers": "True",
            "Initialized": "True",
            "ContainersReady": "True" if ready else "False",
            "Ready": "True" if ready and gates_true else "False",
        }
        conditions = []
        for kind in OWN_CONDITIONS:
            before = next((c for c in current.get("conditions") or [] if c["type"] == kind), None)
            kept = before is not None and before["status"] == own[kind]
            reason = None if own[kind] == "True" else "ContainersNotReady" if not ready else "ReadinessGatesNotReady"
            conditions.append({  # (null removes a reason a merge patch would otherwise leave behind)
                "type": kind, "status": own[kind], "reason": reason, "lastProbeTime": None,
                "lastTransitionTime": before["lastTransitionTime"] if kept and before else stamp()})
        ip = self._pod_ips.setdefault(uid, f"10.244.0.{next(self._ips)}")
        started = self._started_at.setdefault(uid, stamp())
        status: Obj = {"phase": "Running", "hostIP": "10.0.0.10", "hostIPs": [{"ip": "10.0.0.10"}], "podIP": ip,
                       "podIPs": [{"ip": ip}], "startTime": started, "containerStatuses": statuses,
                       "conditions": conditions}
        if self._shows(current, status):
            return
        response = self.cluster.api.request(
            "PATCH", f"/api/v1/namespaces/{self.namespace}/pods/{name}/status", {"status": status},
            query={"fieldManager": FIELD_MANAGER}, content_type=STRATEGIC_MERGE)
        if response.status == 404:
            return
        assert response.ok, f"status of {name}: {response.status} {response.body}"
        self.writes.append((name, what))

    @staticmethod
    def _condition(status: Obj, kind: str) -> str | None:
        return next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == kind), None)

    @staticmethod
    def _shows(current: Obj, status: Obj) -> bool:
        """Whether the stored status already says what `status` would write (conditions: by type, status only)."""
        for key, value in status.items():
            if key == "conditions":
                stored = {c.get("type"): c for c in current.get("conditions") or []}
                if any((stored.get(c["type"]) or {}).get("status") != c["status"]
                       or (stored.get(c["type"]) or {}).get("reason") != c["reason"] for c in value):
                    return False
            elif key == "containerStatuses":
                def essence(statuses: list[Obj]) -> list[tuple[Any, ...]]:
                    return [(s.get("name"), s.get("image"), s.get("imageID"), s.get("containerID"), s.get("ready"),
                             s.get("restartCount"), tuple(s.get("state") or {})) for s in statuses]
                if essence(current.get(key) or []) != essence(value):
                    return False
            elif current.get(key) != value:
                return False
        return True
