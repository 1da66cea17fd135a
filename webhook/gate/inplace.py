"""In-place image update of a gated pod (seed 002's protocol), and of many pods in waves.

For one pod, `update_pod` runs:

1. read the pod; refuse (changing nothing) a pod without the readiness gate, unknown or
   init containers, or a target container that has not started (no imageID yet); a
   container already at its image is left out, and a pod with nothing to change is done;
2. record each target container's `imageID`, `containerID` and `restartCount`;
3. set the gate condition "False" (reason `InPlaceUpdate`): the kubelet turns the pod
   NotReady and the endpoints controllers drop it;
4. wait `grace_seconds` for that to reach every node's proxies;
5. patch only the images (strategic merge by container name: the validating webhook
   lets that through);
6. watch the pod until every target container has restarted (new containerID or a
   higher restartCount) and is running and ready, within `timeout_seconds`;
7. set the condition "True".

Comparing image strings is not enough: the kubelet reports the image it resolved. A
restarted container whose imageID is the old one means the new reference names the same
image (another tag of one digest): that is reported, and counts as done, since the
container runs what was asked for. A container that never restarts (the kubelet stalls,
a pull that keeps failing) runs into the timeout.

On timeout or failure after step 3 the condition stays "False" (reason
`InPlaceUpdateFailed`, the message saying what happened) and `UpdateFailed` is raised: a
half-updated pod must not receive traffic. The one exception is an image patch the API
server refused: nothing changed, so the condition goes back to "True".

Running it again on such a pod takes over; when the pod already runs the requested images
but its gate is still "False" (an update that stopped half-way: the process was killed, say),
it waits for those containers to be ready and sets the gate "True".

`update_pods` applies the same to the pods a label selector picks, at most
`max_unavailable` at a time, and starts no new pod after a failure.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Iterator, Mapping, NamedTuple, NoReturn, Protocol

from kubernetes import client

from ...policies.rules._readiness_gate import DEFAULT_CONDITION_TYPE
from . import condition as gate
from ..kube.api import CONFLICT, api_message

log = logging.getLogger(__name__)

Say = Callable[[str], None]
_DEFINITE_FAILURES = ("InvalidImageName", "ErrImageNeverPull")
_PRECONDITION_RETRIES = 5


class PodStore(Protocol):
    """What the protocol needs of the pod API (`kube_api.Pods`)."""

    def get(self, namespace: str, name: str) -> dict[str, Any]: ...
    def list(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...
    def patch(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]: ...
    def patch_status(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]: ...
    def watch_one(self, namespace: str, name: str, resource_version: str,
                  seconds: int) -> Iterator[tuple[str, dict[str, Any]]]: ...


class Options(NamedTuple):
    condition_type: str = DEFAULT_CONDITION_TYPE
    grace_seconds: float = 5.0
    timeout_seconds: float = 300.0


class UpdateFailed(Exception):
    """The update did not complete; the message says why and in what state the pod is left."""


class Before(NamedTuple):
    """A container as it ran before the update."""

    image_id: str
    container_id: str
    restart_count: int


# "Whatever runs now": any started container counts as restarted, so `assess` only waits for readiness.
ANY_CONTAINER = Before(image_id="", container_id="", restart_count=-1)


class Progress(NamedTuple):
    """Where the target containers stand after the image patch (`assess`)."""

    done: bool
    waiting: tuple[str, ...]  # one line per container not there yet
    same_image: tuple[str, ...]  # containers that restarted onto the same imageID
    failure: str = ""  # a state that will not get better by waiting


class Result(NamedTuple):
    pod: str  # namespace/name
    changed: tuple[str, ...]  # containers updated
    same_image: tuple[str, ...]
    seconds: float


# -- pure parts ----------------------------------------------------------------------------

def container_statuses(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """status.containerStatuses by container name."""
    status = pod.get("status")
    statuses = status.get("containerStatuses") if isinstance(status, dict) else None
    return {s["name"]: s for s in statuses or () if isinstance(s, dict) and isinstance(s.get("name"), str)}


def plan(pod: Mapping[str, Any], images: Mapping[str, str], condition_type: str) -> dict[str, str]:
    """The containers whose image must change; raises UpdateFailed for a pod that cannot be updated."""
    where = _name(pod)
    if not gate.has_gate(pod, condition_type):
        raise UpdateFailed(
            f"{where} has no readiness gate {condition_type!r}, so its traffic cannot be drained first; "
            "it was created before the webhook injected gates, or opted out: recreate it (roll its workload)"
        )
    spec = pod.get("spec") or {}
    containers = {c.get("name"): c for c in spec.get("containers") or () if isinstance(c, dict)}
    init = {c.get("name") for c in spec.get("initContainers") or () if isinstance(c, dict)}
    for name, image in images.items():
        if name in init and name not in containers:
            raise UpdateFailed(f"{where}: {name} is an init container: it ran when the pod started, and changing "
                               "its image in place has no effect until the pod is recreated")
        if name not in containers:
            known = ", ".join(str(n) for n in containers)
            raise UpdateFailed(f"{where} has no container {name!r} (it has: {known})")
        if not image or image != image.strip():
            raise UpdateFailed(f"{where}: the image for {name} must be non-empty, without surrounding spaces")
    targets = {name: image for name, image in images.items() if containers[name].get("image") != image}
    statuses = container_statuses(pod)
    for name in targets:
        if not (statuses.get(name) or {}).get("imageID"):
            raise UpdateFailed(f"{where}: container {name} has not started yet (no imageID): "
                               "an in-place update needs a running pod")
    return targets


def record(pod: Mapping[str, Any], names: list[str]) -> dict[str, Before]:
    """What the target containers run now (`plan` checked they all have a status)."""
    statuses = container_statuses(pod)
    return {
        name: Before(str(statuses[name].get("imageID") or ""), str(statuses[name].get("containerID") or ""),
                     int(statuses[name].get("restartCount") or 0))
        for name in names
    }


def assess(pod: Mapping[str, Any], before: Mapping[str, Before]) -> Progress:
    """Whether every target container restarted and is ready (pure)."""
    metadata = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    if metadata.get("deletionTimestamp") or phase in ("Failed", "Succeeded"):
        return Progress(False, (), (), f"the pod is {'being deleted' if metadata.get('deletionTimestamp') else phase}")
    statuses = container_statuses(pod)
    waiting: list[str] = []
    same: list[str] = []
    for name, old in before.items():
        status = statuses.get(name) or {}
        state = status.get("state") or {}
        reason = (state.get("waiting") or {}).get("reason") or ""
        if reason in _DEFINITE_FAILURES:
            message = (state.get("waiting") or {}).get("message") or ""
            return Progress(False, (), (), f"container {name}: {reason}{': ' + message if message else ''}")
        restarted = (str(status.get("containerID") or "") not in ("", old.container_id)
                     or int(status.get("restartCount") or 0) > old.restart_count)
        if not restarted:
            waiting.append(f"{name}: not restarted yet{' (' + reason + ')' if reason else ''}")
        elif not (status.get("ready") is True and "running" in state):
            waiting.append(f"{name}: restarted, not ready yet{' (' + reason + ')' if reason else ''}")
        elif str(status.get("imageID") or "") == old.image_id:
            same.append(name)
    return Progress(not waiting, tuple(waiting), tuple(same))


def _name(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


# -- one pod --------------------------------------------------------------------------------

def update_pod(
    pods: PodStore, namespace: str, name: str, images: Mapping[str, str], options: Options = Options(),
    say: Say = lambda line: None, clock: Callable[[], float] = time.monotonic,
) -> Result:
    """Run the protocol on one pod; raises UpdateFailed (see the module docstring)."""
    started = clock()
    where = f"{namespace}/{name}"
    pod = _read(pods, namespace, name)
    targets = plan(pod, images, options.condition_type)
    current = gate.condition(pod, options.condition_type)
    if not targets:
        if current is None or current.get("status") != gate.FALSE:
            say(f"{where}: already runs these images; nothing to do")
            return Result(where, (), (), clock() - started)
        return _finish_interrupted(pods, namespace, name, pod, images, options, say, clock, started)
    before = record(pod, list(targets))
    what = ", ".join(f"{c}={i}" for c, i in targets.items())
    if current is not None and current.get("status") == gate.FALSE:
        say(f"{where}: the gate is already False ({current.get('reason') or 'no reason'}); taking over")
    _set_condition(pods, namespace, name, pod, options.condition_type, gate.FALSE, gate.REASON_UPDATING,
                   f"in-place update to {what}")
    say(f"{where}: gate {options.condition_type} False; waiting {options.grace_seconds:g}s for endpoints to drop it")
    time.sleep(max(0.0, options.grace_seconds))
    try:
        patched = pods.patch(namespace, name, gate.image_patch(targets))
    except client.ApiException as error:
        if 400 <= (error.status or 0) < 500:  # refused: nothing changed, the pod may serve again
            _set_condition(pods, namespace, name, _read(pods, namespace, name), options.condition_type, gate.TRUE,
                           gate.REASON_REFUSED, f"image patch refused, nothing changed: {api_message(error)}"[:1000])
            raise UpdateFailed(f"{where}: the image patch was refused ({api_message(error)}); "
                               f"nothing changed and the gate is True again") from None
        _fail(pods, namespace, name, options, f"image patch failed: {api_message(error)}")
    except Exception as error:  # the patch may or may not have landed: keep the pod out of traffic
        _fail(pods, namespace, name, options, f"image patch failed: {type(error).__name__}: {error}")
    say(f"{where}: images patched ({what}); waiting for the containers to restart and be ready")
    deadline = started + options.timeout_seconds
    progress = _wait(pods, namespace, name, patched, before, deadline, clock)
    if progress.failure or not progress.done:
        reason = progress.failure or f"timed out after {options.timeout_seconds:g}s: " + "; ".join(progress.waiting)
        _fail(pods, namespace, name, options, reason)
    for container in progress.same_image:
        say(f"{where}: {container} restarted with {targets[container]}, which is the same image as before "
            f"(imageID {before[container].image_id})")
    _set_condition(pods, namespace, name, _read(pods, namespace, name), options.condition_type, gate.TRUE,
                   gate.REASON_UPDATED, f"in-place update to {what} done")
    seconds = clock() - started
    say(f"{where}: updated in {seconds:.1f}s; gate {options.condition_type} True")
    return Result(where, tuple(targets), progress.same_image, seconds)


def _finish_interrupted(
    pods: PodStore, namespace: str, name: str, pod: dict[str, Any], images: Mapping[str, str], options: Options,
    say: Say, clock: Callable[[], float], started: float,
) -> Result:
    """The images are in place but the gate is "False" (an update that stopped half-way, say the
    process was killed): once those containers run and are ready, put the pod back in service."""
    where = f"{namespace}/{name}"
    what = ", ".join(f"{c}={i}" for c, i in images.items())
    say(f"{where}: already runs {what} but the gate is False; putting it back once those containers are ready")
    any_container = {container: ANY_CONTAINER for container in images}
    progress = _wait(pods, namespace, name, pod, any_container, started + options.timeout_seconds, clock)
    if progress.failure or not progress.done:
        reason = progress.failure or f"timed out after {options.timeout_seconds:g}s: " + "; ".join(progress.waiting)
        _fail(pods, namespace, name, options, reason)
    _set_condition(pods, namespace, name, _read(pods, namespace, name), options.condition_type, gate.TRUE,
                   gate.REASON_UPDATED, f"in-place update to {what} done")
    seconds = clock() - started
    say(f"{where}: back in service after {seconds:.1f}s; gate {options.condition_type} True")
    return Result(where, (), (), seconds)


def _read(pods: PodStore, namespace: str, name: str) -> dict[str, Any]:
    try:
        return pods.get(namespace, name)
    except client.ApiException as error:
        raise UpdateFailed(f"{namespace}/{name}: cannot read the pod: {api_message(error)}") from None


def _set_condition(pods: PodStore, namespace: str, name: str, pod: dict[str, Any], condition_type: str,
                   status: str, reason: str, message: str) -> dict[str, Any]:
    """Write the condition with the pod's resourceVersion as precondition; re-read and retry on conflict."""
    for attempt in range(_PRECONDITION_RETRIES):
        version = (pod.get("metadata") or {}).get("resourceVersion")
        patch = gate.condition_patch(condition_type, status, reason, message, version,
                                     gate.condition(pod, condition_type))
        try:
            return pods.patch_status(namespace, name, patch)
        except client.ApiException as error:
            if error.status != CONFLICT or attempt == _PRECONDITION_RETRIES - 1:
                raise UpdateFailed(f"{namespace}/{name}: cannot set {condition_type} {status}: "
                                   f"{api_message(error)}") from None
            pod = _read(pods, namespace, name)
    raise AssertionError("unreachable")


def _fail(pods: PodStore, namespace: str, name: str, options: Options, reason: str) -> NoReturn:
    """Leave the gate "False" with the reason, and raise UpdateFailed."""
    left = f"the gate {options.condition_type} stays False (the pod gets no traffic)"
    try:
        _set_condition(pods, namespace, name, _read(pods, namespace, name), options.condition_type, gate.FALSE,
                       gate.REASON_FAILED, reason[:1000])
    except UpdateFailed as error:
        left = f"and recording the failure failed too ({error}); the gate was left False"
    raise UpdateFailed(f"{namespace}/{name}: {reason}; {left}")


def _wait(pods: PodStore, namespace: str, name: str, pod: dict[str, Any], before: Mapping[str, Before],
          deadline: float, clock: Callable[[], float]) -> Progress:
    """Follow the pod (a watch, re-read when it breaks) until `assess` says done or failed, or the deadline."""
    progress = assess(pod, before)
    while not (progress.done or progress.failure):
        left = deadline - clock()
        if left <= 0:
            return progress
        version = str((pod.get("metadata") or {}).get("resourceVersion") or "")
        try:
            for kind, seen in pods.watch_one(namespace, name, version, min(60, max(1, int(left + 0.999)))):
                if kind == "DELETED":
                    return Progress(False, (), (), "the pod was deleted")
                pod = seen
                progress = assess(pod, before)
                if progress.done or progress.failure or clock() >= deadline:
                    return progress
        except client.ApiException as error:  # 410 Gone and the like: read it again and go on watching
            log.info("watching %s/%s: %s; reading it again", namespace, name, api_message(error))
            time.sleep(min(0.5, max(0.0, deadline - clock())))
        except Exception as error:  # a broken connection: the same
            log.info("watching %s/%s: %s: %s; reading it again", namespace, name, type(error).__name__, error)
            time.sleep(min(0.5, max(0.0, deadline - clock())))
        try:
            pod = pods.get(namespace, name)
        except client.ApiException as error:
            if error.status == 404:
                return Progress(False, (), (), "the pod was deleted")
            continue
        except Exception:
            continue
        progress = assess(pod, before)
    return progress


# -- many pods ----------------------------------------------------------------------------

class BatchResult(NamedTuple):
    updated: tuple[Result, ...]
    failed: tuple[str, ...]  # messages
    not_started: tuple[str, ...]  # namespace/name, after a failure


def parse_max_unavailable(text: str, total: int) -> int:
    """`3` or `25%` (of the selected pods, rounded down) -> how many at a time, at least 1."""
    value = text.strip()
    try:
        if value.endswith("%"):
            share = float(value[:-1])
            if not 0 < share <= 100:
                raise ValueError
            return max(1, int(total * share / 100))
        count = int(value)
        if count < 1:
            raise ValueError
        return count
    except ValueError:
        raise ValueError(f"--max-unavailable must be a whole number >= 1 or a percentage in (0, 100]%: {text!r}") from None


def update_pods(
    pods: PodStore, namespace: str, selector: str, images: Mapping[str, str], max_unavailable: str,
    options: Options = Options(), say: Say = lambda line: None,
) -> BatchResult:
    """The protocol on every pod `selector` picks, `max_unavailable` at a time; stops starting after a failure."""
    try:
        selected = sorted(pods.list(namespace, selector), key=_name)
    except client.ApiException as error:
        raise UpdateFailed(f"cannot list pods {selector!r} in {namespace}: {api_message(error)}") from None
    if not selected:
        raise UpdateFailed(f"no pod in namespace {namespace} matches {selector!r}")
    todo = []
    for pod in selected:  # refuse the whole batch before touching any pod
        if plan(pod, images, options.condition_type) or gate.held(pod, options.condition_type):
            todo.append(_name(pod).split("/", 1)[1])
        else:
            say(f"{_name(pod)}: already runs these images; nothing to do")
    at_once = parse_max_unavailable(max_unavailable, len(selected))
    say(f"{len(todo)} of {len(selected)} pods to update, {at_once} at a time")
    updated: list[Result] = []
    failed: list[str] = []
    waiting = list(reversed(todo))
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="fieldwarden-set-image") as pool:
        running: dict[Future[Result], str] = {}
        while waiting or running:
            while waiting and not failed and len(running) < at_once:
                name = waiting.pop()
                running[pool.submit(update_pod, pods, namespace, name, images, options, say)] = name
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                running.pop(future)
                try:
                    updated.append(future.result())
                except UpdateFailed as error:
                    failed.append(str(error))
                    say(f"FAILED {error}")
    not_started = tuple(f"{namespace}/{name}" for name in reversed(waiting))
    return BatchResult(tuple(updated), tuple(failed), not_started)
