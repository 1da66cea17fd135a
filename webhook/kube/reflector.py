"""One collection of a live cluster, listed and then watched: client-go's reflector loop.

A `Reflector` runs in a thread of its owner and calls back with what it learns:

- list the collection and hand over the whole of it (`on_replace(items, resourceVersion)`);
  then watch from that resourceVersion, with bookmarks, and hand over every change as it
  arrives (`on_event(type, object)`, type ADDED, MODIFIED or DELETED);
- a watch that ends (the server's timeoutSeconds) or breaks resumes from the last
  resourceVersion seen (an object's or a bookmark's): no relist;
- `410 Gone` (an HTTP 410 on the watch request, or an ERROR event with code 410 in the
  stream: the resourceVersion left the server's history) means relist, at once the
  first time;
- other errors reconnect after an exponential backoff with jitter, capped;
- an `optional` collection (a CRD that may be absent) answering 404 is empty
  (`on_replace([], None)`), and is asked again every `absent_retry` seconds.

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
        self.resource_version: str | None = None
        self.synced = False  # listed (or found absent) at least once
        self.present: bool | None = None  # for an optional collection: None until first asked
        self.failures = 0
        self.last_activity: float | None = None  # time.monotonic()
        self._guard = threading.Lock()
        self._response: Any = None  # the open watch response, to cut on stop
        self._rng = random.Random()

    def run(self) -> None:
        stream = watch.Watch(return_type="object")  # "object": plain dicts, bookmarks tracked
        while not self.stopping.is_set():
            try:
                if self.resource_version is None:
                    if not self._relist():
                        self.stopping.wait(self.absent_retry)
                        continue
                self._watch(stream)
                self.on_restart("timeout")
            except Stopped:
                break
            except client.ApiException as error:
                if self.stopping.is_set():
                    break
                if error.status == GONE:
                    log.info("%s: watch expired (410 Gone); relisting", self.name)
                    self.on_restart("expired")
                    self.resource_version = None
                    self._fail(first_is_free=True)
                elif error.status == NOT_FOUND and self.optional:
                    log.info("%s: went away (404); relisting", self.name)
                    self.on_restart("absent")
                    self.resource_version = None
                else:
                    log.warning("%s: API error %s %s", self.name, error.status, error.reason)
                    self.on_restart("error")
                    self._fail()
            except Exception as error:  # connection refused / reset, bad JSON...: reconnect
                if self.stopping.is_set():
                    break
                log.warning("%s: %s: %s", self.name, type(error).__name__, error)
                self.on_restart("error")
                self._fail()

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

    def _fail(self, first_is_free: bool = False) -> None:
        self.failures += 1
        if first_is_free and self.failures == 1:
            return
        self.stopping.wait(self.backoff.delay(self.failures, self._rng))

    def _relist(self) -> bool:
        """List and hand the collection over; False when it is optional and absent (then it is empty)."""
        try:
            response = self.list_call(_preload_content=False, _request_timeout=self.request_timeout)
        except client.ApiException as error:
            if error.status != NOT_FOUND or not self.optional:
                raise
            if self.present is not False:
                log.info("%s: absent (404); asking again every %ss", self.name, self.absent_retry)
            self.present, self.synced = False, True
            self.on_replace([], None)
            self._touch()
            return False
        try:
            body = json.loads(response.data)
        finally:
            response.release_conn()
        items = [item for item in body.get("items") or () if isinstance(item, dict)]
        version = (body.get("metadata") or {}).get("resourceVersion")
        if not isinstance(version, str) or not version:
            raise ValueError(f"{self.name}: list without metadata.resourceVersion")
        self.on_replace(items, version)
        self.resource_version, self.present, self.synced = version, True, True
        self._touch()
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
            self._touch()
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
        self.failures = 0
        self._touch()

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
        self.failures = 0
        self._touch()
