"""TEST FAKE kubelet (and scheduler) inside the fake API server (tests/webhook/fake_apiserver.py).

Not a kubelet: a background thread of the fake that plays one node, writing pod objects
straight into the fake's store (every write bumps the shared resourceVersion and emits a
MODIFIED watch event; none is an HTTP call, so `api.calls` never holds them; they are
recorded in `kubelet.writes`). What it reproduces of a real node:

- a created pod is bound to the node (`spec.nodeName`, PodScheduled True: the scheduler's
  part), then after `start_delay` seconds it runs: `phase: Running`, `hostIP(s)`, `podIP(s)`,
  `startTime`, one `containerStatuses` entry per container (name, image, imageID
  `<repository>@sha256:<64 hex>`, containerID `containerd://<64 hex>`, ready, started,
  restartCount, state.running.startedAt, lastState), completed `initContainerStatuses`,
  and the kubelet's conditions (PodReadyToStartContainers, Initialized, Ready,
  ContainersReady, PodScheduled) with `lastProbeTime: null` and a `lastTransitionTime`
  that moves only when the status does;
- `Ready` is computed as `pkg/kubelet/status/generate.go` does: the ContainersReady
  status/reason/message when a container is not ready (`containers with unready status:
  [app]`), else False with reason `ReadinessGatesNotReady` and the same messages when a
  `spec.readinessGates[].conditionType` has no condition (`corresponding condition of
  pod readiness gate "X" does not exist.`) or one that is not True (`the status of pod
  readiness gate "X" is not "True", but False`), else True. It is recomputed whenever the
  pod changes (a controller patching its gate condition, say); conditions the kubelet
  does not own are kept as they are, before the kubelet's own;
- an image change of a container (`spec.containers[*].image`) restarts that container:
  after `restart_delay` it is killed (ready/started false, state.terminated), after another
  `restart_delay` a new one runs: new containerID, restartCount+1, `image` =
  `report_image(new image)` (identity by default), `imageID` = `resolve(new image)`,
  ready again. `resolve` uses `digests` (image -> `sha256:...`; `alias()` makes two tags
  one digest), else a deterministic sha256 of the image string, unless `resolver` is set.

Behaviour switches, global (`set_mode(mode)`) or per pod (`set_mode(mode, ns, name)`),
applied when an image change is acted on (not at the first start):
`"normal"`; `"stall"` (the container is never restarted: status unchanged until the mode
changes back); `"pull-error"` (killed, then `state.waiting` reason `ErrImagePull`, then
`ImagePullBackOff`, ready false, image/imageID/containerID still the old container's as
the kubelet reports them); `"crash"` (a new container with the new imageID starts and
exits 1: `CrashLoopBackOff`, never ready). Switching back to `"normal"` lets the pending
restart happen.

Not modelled: probes, resources/resize, init container re-runs (init container image
changes are ignored, as on a running pod), sidecars, ephemeral containers, graceful
termination, `status.observedGeneration` (1.34+ kubelets report it), node objects.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, NamedTuple, Protocol

MODES = ("normal", "stall", "pull-error", "crash")
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


class PodStore(Protocol):
    """What the fake kubelet needs from the fake API server."""

    @property
    def cond(self) -> threading.Condition: ...

    @property
    def closing(self) -> bool: ...

    def kubelet_pods(self) -> dict[tuple[str, str], dict[str, Any]]: ...

    def kubelet_commit(self, namespace: str, name: str, pod: dict[str, Any]) -> str | None: ...


class KubeletWrite(NamedTuple):
    """One write of the fake kubelet (or scheduler) to a pod."""

    namespace: str
    name: str
    what: str  # "bind", "start", "kill app", "restart app", "pull-error app", "crash app", "conditions", ...
    resource_version: str


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def repository(image: str) -> str:
    """The fully qualified repository of an image reference (`nginx:1` -> `docker.io/library/nginx`)."""
    name = image.split("@", 1)[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        name = name[:colon]
    parts = name.split("/")
    if len(parts) == 1:
        return "docker.io/library/" + name
    if "." not in parts[0] and ":" not in parts[0] and parts[0] != "localhost":
        return "docker.io/" + name
    return name


def normalize_image(image: str) -> str:
    """The reference as containerd reports it (`nginx:1.25` -> `docker.io/library/nginx:1.25`);
    usable as `kubelet.report_image`."""
    if "@" in image:
        return repository(image) + "@" + image.split("@", 1)[1]
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    return f"{repository(image)}:{tag}"


def default_digest(image: str) -> str:
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


@dataclass
class _Pending:
    image: str
    step: str  # "kill", "start", "backoff", "retry"
    due: float


@dataclass
class _Container:
    name: str
    target: str  # the spec image the kubelet last acted on
    image: str
    image_id: str
    container_id: str
    restart_count: int
    started_at: str
    state: dict[str, Any]
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = True
    started: bool = True
    pending: _Pending | None = None

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "state": copy.deepcopy(self.state),
                               "lastState": copy.deepcopy(self.last_state), "ready": self.ready,
                               "restartCount": self.restart_count, "image": self.image, "imageID": self.image_id}
        if self.container_id:
            out["containerID"] = self.container_id
        out["started"] = self.started
        return out


@dataclass
class _PodState:
    uid: str
    start_at: float
    started: bool = False
    pod_ip: str = ""
    start_time: str = ""
    containers: dict[str, _Container] = field(default_factory=dict)
    init: list[dict[str, Any]] = field(default_factory=list)
    what: list[str] = field(default_factory=list)


class FakeKubelet:
    """The TEST FAKE kubelet; the fake API server owns one (`api.kubelet`), started with it."""

    def __init__(self, store: PodStore, *, enabled: bool = True, start_delay: float = 0.05,
                 restart_delay: float = 0.05, node_name: str = "fake-node", host_ip: str = "10.0.0.10") -> None:
        self.enabled = enabled
        self.start_delay = start_delay
        self.restart_delay = restart_delay
        self.node_name = node_name
        self.host_ip = host_ip
        self.mode = "normal"
        self.digests: dict[str, str] = {}
        self.resolver: Callable[[str], str] | None = None
        self.report_image: Callable[[str], str] = lambda image: image
        self.writes: list[KubeletWrite] = []
        self._store = store
        self._modes: dict[tuple[str, str], str] = {}
        self._ignored: set[tuple[str, str]] = set()
        self._pods: dict[tuple[str, str], _PodState] = {}
        self._addresses = itertools.count(10)
        self._ids = itertools.count(1)
        self._stop = False
        self._thread: threading.Thread | None = None

    # -- controls -------------------------------------------------------------------------

    def start(self) -> None:
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._store.cond:
            self._stop = True
            self._store.cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def set_mode(self, mode: str, namespace: str | None = None, name: str | None = None) -> None:
        """How image changes are handled: for every pod, or for one (namespace and name)."""
        if mode not in MODES:
            raise ValueError(f"unknown kubelet mode {mode!r}; one of {MODES}")
        if (namespace is None) != (name is None):
            raise ValueError("set_mode takes both a namespace and a name, or neither")
        with self._store.cond:
            if namespace is None:
                self.mode = mode
            else:
                self._modes[(namespace, name or "")] = mode
            self._store.cond.notify_all()

    def mode_of(self, namespace: str, name: str) -> str:
        return self._modes.get((namespace, name), self.mode)

    def ignore(self, namespace: str, name: str) -> None:
        """Never touch this pod (it runs on a node the fake does not play)."""
        with self._store.cond:
            self._ignored.add((namespace, name))

    def digest(self, image: str) -> str:
        if "@" in image:
            return image.split("@", 1)[1]
        return self.digests.get(image) or default_digest(image)

    def alias(self, image: str, same_as: str) -> None:
        """Make `image` resolve to the digest `same_as` resolves to (two tags, one image)."""
        self.digests[image] = self.digest(same_as)

    def resolve(self, image: str) -> str:
        """The imageID the kubelet reports for an image reference."""
        if self.resolver is not None:
            return self.resolver(image)
        return f"{repository(image)}@{self.digest(image)}"

    def writes_for(self, namespace: str, name: str) -> list[KubeletWrite]:
        return [w for w in list(self.writes) if (w.namespace, w.name) == (namespace, name)]

    # -- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        cond = self._store.cond
        with cond:
            while not self._stop and not self._store.closing:
                due = self._sync(time.monotonic())
                wait = 1.0 if due is None else due - time.monotonic()
                if wait > 0:
                    cond.wait(min(wait, 1.0))

    def _sync(self, now: float) -> float | None:
        pods = self._store.kubelet_pods()
        for key in [k for k, s in self._pods.items() if k not in pods or pods[k]["metadata"].get("uid") != s.uid]:
            del self._pods[key]
        next_due: float | None = None
        for key, pod in list(pods.items()):
            if key in self._ignored:
                continue
            due = self._sync_pod(key, pod, now)
            if due is not None:
                next_due = due if next_due is None else min(next_due, due)
        return next_due

    def _sync_pod(self, key: tuple[str, str], pod: dict[str, Any], now: float) -> float | None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        state = self._pods.get(key)
        if state is None:
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
                return None
            state = self._pods[key] = _PodState(uid=meta["uid"], start_at=now + self.start_delay)
        if not state.started:
            if spec.get("schedulingGates"):  # never scheduled while gated
                state.start_at = now + self.start_delay
                return None
            if now < state.start_at:
                return state.start_at
            self._start(key, state)
        else:
            for container in spec.get("containers") or []:
                run = state.containers.get(container.get("name", ""))
                if run is None:
                    continue
                wanted = container.get("image") or ""
                if run.pending is None:
                    if wanted != run.target:
                        run.pending = _Pending(wanted, "kill", now + self.restart_delay)
                elif run.pending.step == "kill" and wanted == run.target:
                    run.pending = None  # changed back before the kubelet acted
                else:
                    run.pending.image = wanted
            for run in state.containers.values():
                if run.pending is not None and now >= run.pending.due:
                    self._step(key, state, run, now)
        self._commit(key, state)
        dues = [run.pending.due for run in state.containers.values() if run.pending is not None]
        return min(dues) if dues else None

    def _container_id(self, uid: str, name: str) -> str:
        return "containerd://" + hashlib.sha256(f"{uid}/{name}/{next(self._ids)}".encode()).hexdigest()

    def _start(self, key: tuple[str, str], state: _PodState) -> None:
        pod = self._store.kubelet_pods()[key]
        stamp = _stamp()
        if not (pod.get("spec") or {}).get("nodeName"):  # the scheduler's binding
            bound = copy.deepcopy(pod)
            bound["spec"]["nodeName"] = self.node_name
            status = bound.setdefault("status", {})
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"] + [
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}]
            version = self._store.kubelet_commit(key[0], key[1], bound)
            if version is not None:
                self.writes.append(KubeletWrite(key[0], key[1], "bind", version))
            pod = self._store.kubelet_pods()[key]
        spec = pod["spec"]
        state.started = True
        state.pod_ip = f"10.244.0.{next(self._addresses)}"
        state.start_time = stamp
        for container in spec.get("containers") or []:
            image = container.get("image") or ""
            state.containers[container["name"]] = _Container(
                name=container["name"], target=image, image=self.report_image(image), image_id=self.resolve(image),
                container_id=self._container_id(state.uid, container["name"]), restart_count=0, started_at=stamp,
                state={"running": {"startedAt": stamp}})
        state.init = []
        for container in spec.get("initContainers") or []:
            image = container.get("image") or ""
            container_id = self._container_id(state.uid, container["name"])
            state.init.append({
                "name": container["name"],
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp, "finishedAt": stamp,
                                         "containerID": container_id}},
                "lastState": {}, "ready": True, "restartCount": 0, "image": self.report_image(image),
                "imageID": self.resolve(image), "containerID": container_id, "started": False})
        state.what.append("start")

    def _step(self, key: tuple[str, str], state: _PodState, run: _Container, now: float) -> None:
        pending = run.pending
        assert pending is not None
        mode = self.mode_of(*key)
        retry = max(4 * self.restart_delay, 0.2)
        stamp = _stamp()
        if mode == "stall":
            pending.due = now + self.restart_delay  # look again later: nothing happens meanwhile
            return
        if pending.step == "kill":
            terminated = {"exitCode": 0, "reason": "Completed", "startedAt": run.started_at, "finishedAt": stamp,
                          "containerID": run.container_id}
            run.state = {"terminated": dict(terminated)}
            run.last_state = {"terminated": dict(terminated)}
            run.ready = run.started = False
            pending.step, pending.due = "start", now + self.restart_delay
            state.what.append(f"kill {run.name}")
            return
        if pending.step == "backoff":
            run.state = {"waiting": {"reason": "ImagePullBackOff", "message": f"Back-off pulling image {json.dumps(pending.image)}"}}
            pending.step, pending.due = "retry", now + retry
            state.what.append(f"backoff {run.name}")
            return
        waiting = (run.state.get("waiting") or {}).get("reason")
        if mode == "normal":
            run.restart_count += 1
            run.container_id = self._container_id(state.uid, run.name)
            run.image, run.image_id = self.report_image(pending.image), self.resolve(pending.image)
            run.started_at = stamp
            run.state = {"running": {"startedAt": stamp}}
            run.ready = run.started = True
            run.target = pending.image
            run.pending = None
            state.what.append(f"restart {run.name}")
        elif mode == "pull-error":
            if waiting in ("ErrImagePull", "ImagePullBackOff") and pending.step == "retry":
                pending.due = now + retry  # still backing off: nothing changes
                return
            reference = normalize_image(pending.image)
            run.state = {"waiting": {"reason": "ErrImagePull", "message": (
                f"rpc error: code = NotFound desc = failed to pull and unpack image {json.dumps(reference)}: "
                f"failed to resolve reference {json.dumps(reference)}: {reference}: not found")}}
            run.ready = run.started = False
            pending.step, pending.due = "backoff", now + self.restart_delay
            state.what.append(f"pull-error {run.name}")
        else:  # crash
            if waiting == "CrashLoopBackOff" and run.image_id == self.resolve(pending.image):
                pending.due = now + retry  # still crash-looping: nothing changes
                return
            run.restart_count += 1
            run.container_id = self._container_id(state.uid, run.name)
            run.image, run.image_id = self.report_image(pending.image), self.resolve(pending.image)
            run.last_state = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": stamp, "finishedAt": stamp,
                                             "containerID": run.container_id}}
            run.state = {"waiting": {"reason": "CrashLoopBackOff", "message": (
                f"back-off 10s restarting failed container={run.name} pod={key[1]}_{key[0]}({state.uid})")}}
            run.ready = run.started = False
            pending.step, pending.due = "retry", now + retry
            state.what.append(f"crash {run.name}")

    # -- status -----------------------------------------------------------------------------

    def _commit(self, key: tuple[str, str], state: _PodState) -> None:
        pod = self._store.kubelet_pods().get(key)
        if pod is None or not state.started:
            state.what.clear()
            return
        version = self._store.kubelet_commit(key[0], key[1], self._render(pod, state))
        if version is not None:
            self.writes.append(KubeletWrite(key[0], key[1], ", ".join(state.what) or "conditions", version))
        state.what.clear()

    def _render(self, pod: dict[str, Any], state: _PodState) -> dict[str, Any]:
        new = copy.deepcopy(pod)
        spec = new.get("spec") or {}
        status = new.setdefault("status", {})
        before: dict[str, dict[str, Any]] = {}
        for condition in status.get("conditions") or []:
            before.setdefault(condition.get("type"), condition)
        status["phase"] = "Running"
        status["hostIP"], status["hostIPs"] = self.host_ip, [{"ip": self.host_ip}]
        status["podIP"], status["podIPs"] = state.pod_ip, [{"ip": state.pod_ip}]
        status["startTime"] = state.start_time
        statuses = [state.containers[c["name"]].status() for c in spec.get("containers") or []
                    if c.get("name") in state.containers]
        status["containerStatuses"] = statuses
        if state.init:
            status["initContainerStatuses"] = copy.deepcopy(state.init)
        kept = [c for c in status.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]
        generated: list[dict[str, Any]] = [{"type": "PodReadyToStartContainers", "status": "True"},
                                           {"type": "Initialized", "status": "True"}]
        containers_ready = containers_ready_condition(spec, statuses)
        generated.append(ready_condition(spec, kept + generated, containers_ready))
        generated += [containers_ready, {"type": "PodScheduled", "status": "True"}]
        stamp = _stamp()
        status["conditions"] = kept + [_with_times(c, before.get(c["type"]), stamp) for c in generated]
        return new


def _with_times(condition: dict[str, Any], before: dict[str, Any] | None, stamp: str) -> dict[str, Any]:
    same = before is not None and before.get("status") == condition["status"]
    out = {"type": condition["type"], "status": condition["status"], "lastProbeTime": None,
           "lastTransitionTime": before.get("lastTransitionTime") if same and before is not None else stamp}
    for key in ("reason", "message"):
        if condition.get(key):
            out[key] = condition[key]
    return out


def containers_ready_condition(spec: dict[str, Any], statuses: list[dict[str, Any]]) -> dict[str, Any]:
    """`GenerateContainersReadyCondition` for regular containers."""
    by_name = {s["name"]: s for s in statuses}
    unknown = [c["name"] for c in spec.get("containers") or [] if c["name"] not in by_name]
    unready = [c["name"] for c in spec.get("containers") or [] if c["name"] in by_name and not by_name[c["name"]]["ready"]]
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: [{' '.join(unknown)}]")
    if unready:
        messages.append(f"containers with unready status: [{' '.join(unready)}]")
    if messages:
        return {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "message": ", ".join(messages)}
    return {"type": "ContainersReady", "status": "True"}


def ready_condition(spec: dict[str, Any], conditions: list[dict[str, Any]],
                    containers_ready: dict[str, Any]) -> dict[str, Any]:
    """`GeneratePodReadyCondition`: containers first, then every readiness gate."""
    if containers_ready["status"] != "True":
        return {"type": "Ready", "status": containers_ready["status"], "reason": containers_ready.get("reason"),
                "message": containers_ready.get("message")}
    messages = []
    for gate in spec.get("readinessGates") or []:
        gate_type = gate.get("conditionType", "")
        found = next((c for c in conditions if c.get("type") == gate_type), None)
        if found is None:
            messages.append(f"corresponding condition of pod readiness gate {json.dumps(gate_type)} does not exist.")
        elif found.get("status") != "True":
            messages.append(f"the status of pod readiness gate {json.dumps(gate_type)} is not \"True\", but {found.get('status')}")
    if messages:
        return {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady", "message": ", ".join(messages)}
    return {"type": "Ready", "status": "True"}
