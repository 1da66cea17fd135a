"""TEST FAKE of a Kubernetes API server: the list/watch subset the autoscaler inventory uses.

Not an API server, and not for production: it serves two collections over real HTTP
on 127.0.0.1 so that tests can drive the unchanged `kubernetes` client through the
same paths, query parameters and wire formats as a real kube-apiserver:

- `GET /apis/autoscaling/v2/horizontalpodautoscalers` and
  `GET /apis/autoscaling.k8s.io/v1/verticalpodautoscalers` (all namespaces): a list
  with `metadata.resourceVersion`. As for the real server, items of the built-in HPA
  list carry no apiVersion/kind; custom resources (VPA) carry theirs.
- the same with `watch=true&resourceVersion=RV[&allowWatchBookmarks=true][&timeoutSeconds=N]`:
  a chunked stream of JSON lines `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR,
  "object": ...}` of the changes after RV, open until timeoutSeconds. One
  resourceVersion counter is shared by every change of either collection.
- history is a window: after `compact()`, watching from an older resourceVersion
  gets `410 Gone` — by default as the real server does for watches, a 200 stream with
  one ERROR event carrying a `Status` with code 410; with `gone_as_http=True` as an
  HTTP 410 response instead.
- the VPA collection answers 404 while its "CRD" is not installed.

Test controls: `apply` (add or modify), `delete`, `compact`, `bookmark`,
`drop_watches` (cut open watch connections mid-stream), `set_unavailable` (503 for
everything), `install_crd` / `remove_crd`; and `calls` records every request.
"""

from __future__ import annotations

import copy
import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

HPA = "horizontalpodautoscalers"
VPA = "verticalpodautoscalers"


class Collection(NamedTuple):
    path: str
    api_version: str
    kind: str
    builtin: bool  # built-in types' list items omit apiVersion and kind


COLLECTIONS = {
    HPA: Collection("/apis/autoscaling/v2/horizontalpodautoscalers", "autoscaling/v2", "HorizontalPodAutoscaler", True),
    VPA: Collection("/apis/autoscaling.k8s.io/v1/verticalpodautoscalers", "autoscaling.k8s.io/v1", "VerticalPodAutoscaler", False),
}
BY_KIND = {c.kind: name for name, c in COLLECTIONS.items()}
BY_PATH = {c.path: name for name, c in COLLECTIONS.items()}


class Call(NamedTuple):
    """One request the fake answered (or refused)."""

    collection: str | None  # HPA, VPA or None (an unknown path)
    watch: bool
    resource_version: str | None
    params: dict[str, str]
    status: int


class Event(NamedTuple):
    resource_version: int
    collection: str
    type: str
    object: dict[str, Any]


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class FakeApiServer:
    """The fake; use as a context manager (`with FakeApiServer() as api: api.url`)."""

    def __init__(self, *, vpa_crd: bool = True, gone_as_http: bool = False) -> None:
        self.gone_as_http = gone_as_http
        self.calls: list[Call] = []
        self.gone_answers = 0  # watches answered 410 Gone, either way
        self._cond = threading.Condition()
        self._version = 1000
        self._floor = self._version  # watching from below this is 410 Gone
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {name: {} for name in COLLECTIONS}
        self._history: list[Event] = []
        self._crd = vpa_crd
        self._unavailable = False
        self._generation = 0  # bumped by drop_watches(): older watch streams are cut
        self._bookmarks = 0  # bumped by bookmark()
        self._closing = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    # -- test controls ------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._version)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an HPA or VPA (by kind, namespace, name); returns the stored copy."""
        collection = BY_KIND[obj["kind"]]
        stored = copy.deepcopy(obj)
        meta = stored.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        key = (meta["namespace"], meta["name"])
        with self._cond:
            if collection == VPA and not self._crd:
                raise LookupError("the VPA CRD is not installed")
            old = self._objects[collection].get(key)
            meta["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
            meta.setdefault("creationTimestamp", "2024-01-01T00:00:00Z")
            self._record(collection, "MODIFIED" if old else "ADDED", stored)
            self._objects[collection][key] = stored
            return copy.deepcopy(stored)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        collection = BY_KIND[kind]
        with self._cond:
            stored = self._objects[collection].pop((namespace, name))
            self._record(collection, "DELETED", stored)

    def compact(self) -> None:
        """Forget the history: watching from any resourceVersion older than now is 410 Gone."""
        with self._cond:
            self._floor = self._version
            self._history.clear()
            self._cond.notify_all()

    def bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion to watches that allow bookmarks."""
        with self._cond:
            self._bookmarks += 1
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Cut every open watch connection mid-stream (no terminating chunk)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def set_unavailable(self, unavailable: bool) -> None:
        """Answer every request 503 (and cut open watches) until set back."""
        with self._cond:
            self._unavailable = unavailable
            if unavailable:
                self._generation += 1
            self._cond.notify_all()

    def install_crd(self) -> None:
        with self._cond:
            self._crd = True

    def remove_crd(self) -> None:
        """Delete the CRD: its objects go, open VPA watches end, the path answers 404."""
        with self._cond:
            self._crd = False
            self._objects[VPA].clear()
            self._history = [e for e in self._history if e.collection != VPA]
            self._generation += 1
            self._cond.notify_all()

    def list_calls(self, collection: str) -> int:
        return sum(1 for c in self.calls if c.collection == collection and not c.watch and c.status == 200)

    def watch_versions(self, collection: str) -> list[str | None]:
        """The resourceVersion of every watch request on a collection, in order."""
        return [c.resource_version for c in self.calls if c.collection == collection and c.watch]

    # -- serving --------------------------------------------------------------------------

    def _record(self, collection: str, kind: str, stored: dict[str, Any]) -> None:
        self._version += 1
        stored["metadata"]["resourceVersion"] = str(self._version)
        self._history.append(Event(self._version, collection, kind, copy.deepcopy(stored)))
        self._cond.notify_all()

    def _wire(self, collection: str, obj: dict[str, Any], in_list: bool) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        info = COLLECTIONS[collection]
        if in_list and info.builtin:
            out.pop("apiVersion", None)
            out.pop("kind", None)
        else:
            out["apiVersion"], out["kind"] = info.api_version, info.kind
        return out

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        collection = BY_PATH.get(parts.path)
        is_watch = params.get("watch", "").lower() in ("true", "1")
        version = params.get("resourceVersion")

        def answer(code: int, body: dict[str, Any]) -> None:
            self.calls.append(Call(collection, is_watch, version, params, code))
            data = json.dumps(body).encode()
            handler.send_response(code)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)

        with self._cond:
            if self._unavailable:
                return answer(503, status(503, "ServiceUnavailable", "the fake is unavailable"))
            if collection is None or (collection == VPA and not self._crd):
                return answer(404, status(404, "NotFound", "the server could not find the requested resource"))
            if not is_watch:
                info = COLLECTIONS[collection]
                items = [self._wire(collection, o, True) for o in self._objects[collection].values()]
                return answer(200, {"apiVersion": info.api_version, "kind": info.kind + "List",
                                    "metadata": {"resourceVersion": str(self._version)}, "items": items})
            start = int(version) if version and version != "0" else None
            gone = start is not None and start < self._floor
            self.gone_answers += gone
            if gone and self.gone_as_http:
                return answer(410, status(410, "Expired", f"too old resource version: {start} ({self._floor})"))
            self.calls.append(Call(collection, True, version, params, 200))
            generation, bookmarks = self._generation, self._bookmarks
            if start is None:  # no resourceVersion: synthetic ADDED for what exists, then changes
                initial = [{"type": "ADDED", "object": self._wire(collection, o, False)}
                           for o in self._objects[collection].values()]
                cursor = self._version
            else:
                initial, cursor = [], start
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if gone:
            expired = status(410, "Expired", f"too old resource version: {start} ({self._floor})")
            self._chunk(handler, [{"type": "ERROR", "object": expired}])
            return self._chunk(handler, None)
        self._chunk(handler, initial)
        self._stream(handler, collection, cursor, generation, bookmarks, params)

    def _stream(self, handler: BaseHTTPRequestHandler, collection: str, cursor: int, generation: int,
                bookmarks: int, params: dict[str, str]) -> None:
        timeout = float(params.get("timeoutSeconds", "1800"))
        deadline = time.monotonic() + timeout
        allow_bookmarks = params.get("allowWatchBookmarks", "").lower() in ("true", "1")
        while True:
            if time.monotonic() >= deadline:
                return self._chunk(handler, None)
            with self._cond:
                pending = [e for e in self._history if e.resource_version > cursor]
                send_bookmark = allow_bookmarks and self._bookmarks != bookmarks
                cut = self._closing or self._generation != generation
                expired = cursor < self._floor and not cut
                if not (pending or send_bookmark or cut or expired):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return self._chunk(handler, None)
                    self._cond.wait(left)
                    continue
                bookmarks = self._bookmarks
                if pending:
                    cursor = pending[-1].resource_version
                lines = [{"type": e.type, "object": self._wire(collection, e.object, False)}
                         for e in pending if e.collection == collection]
                if send_bookmark:
                    cursor = self._version
                    info = COLLECTIONS[collection]
                    lines.append({"type": "BOOKMARK", "object": {"apiVersion": info.api_version, "kind": info.kind,
                                                                 "metadata": {"resourceVersion": str(cursor)}}})
                if expired:
                    self.gone_answers += 1
                    lines = [{"type": "ERROR", "object": status(410, "Expired", "too old resource version")}]
            if cut:
                handler.close_connection = True
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self._chunk(handler, lines)
            if expired:
                return self._chunk(handler, None)

    @staticmethod
    def _chunk(handler: BaseHTTPRequestHandler, lines: list[dict[str, Any]] | None) -> None:
        """Write JSON lines as one HTTP chunk, or the terminating chunk for None."""
        if lines is None:
            handler.wfile.write(b"0\r\n\r\n")
        elif lines:
            data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()


def _handler(fake: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            try:
                fake._serve(self)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
