"""One collection of a live cluster, listed and then watched: client-go's reflector loop.

A `Reflector` runs in a thread of its owner and calls back with what it learns:

- list the collection and hand over the whole of it (`on_replace(items, resourceVersion)`);
  then watch from that resourceVersion, with bookmarks, and hand over every change as it
  arrives (`on_event(type, object)`, type ADDED, MODIFIED or DELETED);
- a watch that ends (the server's timeoutSeconds) or breaks resumes from the last
  resourceVersion seen (an object's or a bookmark's): no relist;
- `410 Gone` (an HTTP 410 on the watch request, or an ERROR event with code 410 in the
  stream: the resourceVersion left the server's history, as it does for every watch a
  restarted API server is asked to resume) means relist, at once; only a 410 again right
  after that relist, before the watch brought anything, waits a backoff. Until the relist
  is done `relist_pending` is true: what the owner holds may miss changes;
- `behind` is true while changes may be missed: a relist is pending, or the server's last
  answer to this collection was an error status (it is up, so the collection can change, and
  nothing watches it: a restarted kube-apiserver answers a CRD's path 503 until it is
  installed). Not after an attempt that got no answer at all: while the only API server is
  down nothing changes;
- other errors reconnect after an exponential backoff with jitter, capped, counted from
  the last time the server answered (a list, a watch opened, a 410, or the first error
  status after attempts that got no answer at all), so an earlier outage never lengthens
  the wait after the next one. A restarted kube-apiserver serves a moment before it is
  ready: it answers 403 while its RBAC authorizer has not synced (seen with v1.32), 429
  while its watch cache fills. That first answer restarts the count, so the next attempt
  comes within `backoff.initial`, not after the backoff the outage ran up; a server that
  keeps answering errors is still asked less and less often. A `Retry-After` the server sends
  is not waited out: `list_call`'s client must not retry inside a call (webhook/kube/api.py's
  `without_retries`), or the reflector would learn of neither the error nor the wait (a
  restarted kube-apiserver's 503 on a CRD's path says 5 s). After a refused connection
  (nothing listens: the API server restarts, or its Service has no endpoints) the backoff
  is cut short as soon as the address accepts a TCP connection again (tried every
  `refused_probe` seconds: a refused connect costs nobody anything), so a server that
  comes back is asked at once without asking a down one more often;
- an `optional` collection (a CRD that may be absent) answering 404 is empty
  (`on_replace([], None)`), and is asked again every `absent_retry` seconds, or as soon as
  the `wake` event is set (the owner sets it when it sees the CRD arrive);
- `on_change()` is called after every step that may change what the owner reports about
  the collection (`synced`, `relist_pending`, `last_activity`): a list, a 410, a watch
  opened or ended, a failed attempt. (Not per event: `on_event` says those.)

Objects are the API server's JSON as plain dicts (the client's `_preload_content=False`
for lists, `Watch(return_type="object")` for watches): the code that decides never sees
the client's model classes. `stop()` (through the shared `stopping` event and `cut()`)
ends the loop promptly: it shuts the socket under an open watch.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from typing import Any, Callable, Mapping, NamedTuple

from kubernetes import client, watch

from .api import GONE, NOT_FOUND

log = logging.getLogger(__name__)


class Backoff(NamedTuple):
    """Delay before reconnecting after the n-th failure in a row: exponential, capped, jittered."""

    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.25  # up to this fraction of the delay is taken off at random

    def delay(self, failures: int, rng: random.Random) -> float:
        base = min(self.cap, self.initial * self.factor ** max(0, failures - 1))
        return base * (1.0 - self.jitter * rng.random())


class Stopped(Exception):
    """The owner asked to stop while a request was being made."""


class Reflector:
    """List + watch of one collection; `run()` loops until `stopping` is set."""

    def __init__(
        self,
        name: str,
        list_call: Callable[..., Any],
        *,
        on_replace: Callable[[list[dict[str, Any]], str | None], None],
        on_event: Callable[[str, dict[str, Any]], None],
        stopping: threading.Event,
        optional: bool = False,
        backoff: Backoff = Backoff(),
        watch_timeout: int = 60,
        absent_retry: float = 30.0,
        request_timeout: float = 30.0,
        on_restart: Callable[[str], None] | None = None,
        refused_probe: float = 0.25,
        on_change: Callable[[], None] | None = None,
        wake: threading.Event | None = None,
        failure_log_level: int = logging.WARNING,
    ) -> None:
        self.name = name
        self.list_call = list_call
        self.on_replace = on_replace
        self.on_event = on_event
        self.stopping = stopping
        self.optional = optional
        self.backoff = backoff
        self.watch_timeout = int(watch_timeout)
        self.absent_retry = absent_retry
        self.request_timeout = request_timeout
        self.on_restart = on_restart or (lambda reason: None)
        self.refused_probe = refused_probe
        self.on_change = on_change or (lambda: None)
        self.wake = wake
        self.failure_log_level = failure_log_level
        self.resource_version: str | None = None
        self.synced = False  # listed (or found absent) at least once
        self.present: bool | None = None  # for an optional collection: None until first asked
        self.relist_pending = False  # a 410 said the resourceVersion expired; no list since
        self.error_answered = False  # the server's last answer was an error status (it is up; nothing watched)
        self.failures = 0  # attempts in a row that got no answer from the server (or an error status)
        self.unanswered = False  # the last failure got no answer at all (nothing listened, the connection broke)
        self.expirations = 0  # 410s in a row with nothing watched in between
        self.last_activity: float | None = None  # time.monotonic()
        self._guard = threading.Lock()
        self._response: Any = None  # the open watch response, to cut on stop
        self._rng = random.Random()

    @property
    def behind(self) -> bool:
        """Whether changes may be being missed: a relist pending, or the server up but answering errors."""
        return self.relist_pending or self.error_answered

    def run(self) -> None:
        stream = watch.Watch(return_type="object")  # "object": plain dicts, bookmarks tracked
        while not self.stopping.is_set():
            try:
                if self.resource_version is None:
                    if not self._relist():
                        self._wait_absent()
                        continue
                self._watch(stream)
                self.on_restart("timeout")
            except Stopped:
                break
            except client.ApiException as error:
                if self.stopping.is_set():
                    break
                if error.status == GONE:
                    self._answered()
                    self.expirations += 1
                    self.resource_version, self.relist_pending = None, True
                    log.info("%s: watch expired (410 Gone); relisting", self.name)
                    self.on_restart("expired")
                    self._changed()
                    if self.expirations > 1:  # expired again straight after a relist: do not spin
                        self.stopping.wait(self.backoff.delay(self.expirations - 1, self._rng))
                elif error.status == NOT_FOUND and self.optional:
                    self._answered()
                    log.info("%s: went away (404); relisting", self.name)
                    self.on_restart("absent")
                    self.resource_version = None
                    self._changed()
                else:
                    self.on_restart("error")
                    if self.unanswered:  # the first answer after an outage, if an error: the count starts afresh
                        self.failures = 0
                    self.error_answered = True
                    self._fail(f"API error {error.status} {error.reason}")
            except Exception as error:  # connection refused / reset, bad JSON...: reconnect
                if self.stopping.is_set():
                    break
                self.on_restart("error")
                self.error_answered = False
                self._fail(f"{type(error).__name__}: {error}", refused=_refused_address(error), unanswered=True)

    def _wait_absent(self) -> None:
        """Until the next look at an absent collection: `absent_retry` seconds, or until woken (or stopped:
        the owner sets `wake` when it stops)."""
        if self.wake is None:
            self.stopping.wait(self.absent_retry)
            return
        self.wake.wait(self.absent_retry)
        self.wake.clear()

    def cut(self) -> None:
        """Shut the socket under an open watch, so that its blocked read returns now."""
        with self._guard:
            response = self._response
        connection = getattr(response, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _touch(self) -> None:
        self.last_activity = time.monotonic()

    def _changed(self) -> None:
        try:
            self.on_change()
        except Exception:  # the owner's bug must not end the loop
            log.exception("%s: on_change failed", self.name)

    def _answered(self) -> None:
        """The server answered: the next failure starts the backoff afresh."""
        if self.failures:
            log.info("%s: the API server answers again (after %d failed attempts)", self.name, self.failures)
        self.failures = 0
        self.unanswered = False
        self.error_answered = False

    def _fail(self, what: str, refused: tuple[str, int] | None = None, unanswered: bool = False) -> None:
        """Count a failure and wait the backoff; after a refused connection, only until the address listens."""
        self.unanswered = unanswered
        self.failures += 1
        delay = self.backoff.delay(self.failures, self._rng)
        log.log(self.failure_log_level, "%s: %s (failure %d; retrying within %.1fs%s)", self.name, what,
                self.failures, delay, ", sooner once it listens again" if refused else "")
        self._changed()
        if refused is None:
            self.stopping.wait(delay)
            return
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:
            if self.stopping.wait(min(self.refused_probe, left)) or _listens(refused, self.refused_probe):
                return

    def _relist(self) -> bool:
        """List and hand the collection over; False when it is optional and absent (then it is empty)."""
        try:
            response = self.list_call(_preload_content=False, _request_timeout=self.request_timeout)
        except client.ApiException as error:
            if error.status != NOT_FOUND or not self.optional:
                raise
            if self.present is not False:
                log.info("%s: absent (404); asking again every %ss", self.name, self.absent_retry)
            self._answered()
            self.present, self.synced = False, True
            self.on_replace([], None)
            self.relist_pending = False
            self._touch()
            self._changed()
            return False
        try:
            body = json.loads(response.data)
        finally:
            response.release_conn()
        items = [item for item in body.get("items") or () if isinstance(item, dict)]
        version = (body.get("metadata") or {}).get("resourceVersion")
        if not isinstance(version, str) or not version:
            raise ValueError(f"{self.name}: list without metadata.resourceVersion")
        self._answered()
        self.on_replace(items, version)
        self.resource_version, self.present, self.synced = version, True, True
        self.relist_pending = False
        self._touch()
        self._changed()
        log.info("%s: listed %d at resourceVersion %s", self.name, len(items), version)
        return True

    def _watch(self, stream: watch.Watch) -> None:
        """One watch request, from the last resourceVersion, until the server ends it."""

        def open_watch(**kwargs: Any) -> Any:
            response = self.list_call(**kwargs)
            with self._guard:
                if self.stopping.is_set():
                    response.close()
                    raise Stopped
                self._response = response
            self._answered()
            self._touch()
            self._changed()
            return response

        try:
            for event in stream.stream(
                open_watch,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self.watch_timeout,
                _request_timeout=(self.request_timeout, self.watch_timeout + self.request_timeout),
            ):
                if self.stopping.is_set():
                    raise Stopped
                self._apply(event)
        finally:
            with self._guard:
                self._response = None
        self.expirations = 0
        self._touch()
        self._changed()

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("raw_object")
        if not isinstance(obj, dict):
            return
        meta = obj.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self.on_event(str(kind), obj)
        if isinstance(version, str) and version:
            self.resource_version = version  # objects and BOOKMARKs alike
        self.expirations = 0
        self._touch()


def _refused_address(error: BaseException) -> tuple[str, int] | None:
    """(host, port) that refused the connection, if that is what failed; urllib3 chains the
    socket's error under its own (MaxRetryError.reason, NewConnectionError.conn)."""
    address = None
    refused = False
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        refused = refused or isinstance(current, ConnectionRefusedError)
        connection = getattr(current, "conn", None)
        host, port = getattr(connection, "host", None), getattr(connection, "port", None)
        if address is None and isinstance(host, str) and isinstance(port, int):
            address = (host, port)
        reason = getattr(current, "reason", None)
        todo.extend([reason if isinstance(reason, BaseException) else None, current.__cause__, current.__context__])
    return address if refused else None


def _listens(address: tuple[str, int], timeout: float) -> bool:
    try:
        socket.create_connection(address, timeout=timeout).close()
    except OSError:
        return False
    return True
