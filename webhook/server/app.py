"""The Flask application: HTTP in and out around `handlers.admit`.

- `POST /mutate`, `POST /validate`: AdmissionReview in, AdmissionReview out (or a 4xx
  with a JSON Status body when the request is not a usable AdmissionReview);
- `GET /healthz`: 200 while the process answers;
- `GET /readyz`: 200 once the autoscaler inventory finished its first sync, else 503;
- `GET /metrics`: Prometheus text, the whole pod's under `fieldwarden serve` (metrics.py).

Every error is JSON; a 500 (a bug outside the admission core, which allows requests
rather than fail) carries no internals, only "internal error", and logs the traceback.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any, Callable, Iterable, Mapping

import orjson

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from ...policies.config import Settings
from . import logs
from .handlers import MUTATE, VALIDATE, Endpoint, admit
from ..inventory.sources import Inventory
from .metrics import CONTENT_TYPE, METRICS
from .response import error_body


def create_app(settings: Settings, inventory: Inventory) -> Flask:
    """The webhook application for these settings and this autoscaler inventory."""
    logs.configure()
    app = Flask("fieldwarden.webhook")
    limit = settings.webhook.max_request_bytes
    app.config["MAX_CONTENT_LENGTH"] = limit  # (for whatever Werkzeug reads itself; `_body` keeps to it too)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"}, 200)

    @app.get("/readyz")
    def readyz() -> Response:
        ready = inventory.ready()
        state = {"status": "ok" if ready else "inventory not synced", "inventory": inventory.describe()}
        return _json(state, 200 if ready else 503)

    # The other workers' scrapes read this worker's gauges from its files: written now, and again
    # whenever the inventory changes, whether or not a request reaches this worker.
    inventory.on_change(lambda: METRICS.refresh_inventory(inventory))
    METRICS.refresh_inventory(inventory)

    @app.get("/metrics")
    def metrics() -> Response:
        METRICS.refresh_inventory(inventory)
        return Response(METRICS.render(), 200, content_type=CONTENT_TYPE)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        logs.event("http error", logging.WARNING, status=status, path=request.path, method=request.method)
        return _json(error_body(status, exc.description or exc.name), status)

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        logs.event("unhandled error", logging.ERROR, exc_info=True, path=request.path)
        return _json(error_body(500, "internal error"), 500)

    app.wsgi_app = admission_endpoints(app.wsgi_app, settings, inventory)  # type: ignore[method-assign,assignment]
    return app


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
ENDPOINTS: dict[str, Endpoint] = {"/mutate": MUTATE, "/validate": VALIDATE}


def admission_endpoints(other: WsgiApp, settings: Settings, inventory: Inventory) -> WsgiApp:
    """WSGI middleware answering `/mutate` and `/validate` itself, everything else through `other`.

    The admission endpoints are the hot path: Flask's request context, routing and response
    object cost about a fifth of a request's CPU (py-spy, bench/webhook_load.py), and these
    two need none of it. What they answer is what Flask routes answered: JSON bodies, a 405
    for another method, 413 over the size limit, a JSON 500 for a bug.
    """
    limit = settings.webhook.max_request_bytes

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        endpoint = ENDPOINTS.get(environ.get("PATH_INFO", ""))
        if endpoint is None:
            return other(environ, start_response)
        method = environ.get("REQUEST_METHOD", "")
        if method != "POST":
            logs.event("http error", logging.WARNING, status=405, path=environ["PATH_INFO"], method=method)
            return _reply(start_response, 405, error_body(405, f"{method} is not allowed here: POST an AdmissionReview"),
                          [("Allow", "POST")])
        try:
            body = _body(environ, limit)
        except RequestEntityTooLarge:
            logs.event("http error", logging.WARNING, status=413, path=environ["PATH_INFO"], method=method)
            return _reply(start_response, 413, error_body(413, f"the request body is over {limit} bytes"))
        except Exception as exc:  # the server's stream refused the body (a bad chunk, a cut connection)
            logs.event("unreadable body", logging.WARNING, error=type(exc).__name__)
            return _reply(start_response, 400, error_body(400, f"the request body could not be read: {type(exc).__name__}"))
        try:
            status, answer = admit(body, environ.get("CONTENT_TYPE", ""), endpoint, settings, inventory)
        except Exception:
            logs.event("unhandled error", logging.ERROR, exc_info=True, path=environ["PATH_INFO"])
            return _reply(start_response, 500, error_body(500, "internal error"))
        return _reply(start_response, status, answer)

    return application


_STATUS_LINES: dict[int, str] = {}


def _reply(start_response: Callable[..., Any], status: int, data: Any,
           headers: Iterable[tuple[str, str]] = ()) -> list[bytes]:
    body = orjson.dumps(data)
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = f"{status} {HTTPStatus(status).phrase}"
    start_response(line, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers])
    return [body]


def _body(environ: Mapping[str, Any], limit: int) -> bytes:
    """The request body; over `limit` bytes, a 413 (before any of it is read when declared).

    A declared length is read straight from the server's stream, which ends there. A
    body without one (chunked) is read until the server ends the stream, if the server
    says it does (`wsgi.input_terminated`, as gunicorn does); otherwise there is no body
    to read safely, as Werkzeug also decides.
    """
    stream = environ["wsgi.input"]
    declared = environ.get("CONTENT_LENGTH")
    if declared and declared.isdigit():
        length = int(declared)
        if length > limit:
            raise RequestEntityTooLarge()
        return stream.read(length) if length else b""
    if not environ.get("wsgi.input_terminated"):
        return b""
    chunks: list[bytes] = []
    received = 0
    while received <= limit:
        chunk = stream.read(limit + 1 - received)
        if not chunk:
            break
        chunks.append(chunk)
        received += len(chunk)
    if received > limit:
        raise RequestEntityTooLarge()
    return b"".join(chunks)


def _json(data: Any, status: int) -> Response:
    return Response(orjson.dumps(data), status, mimetype="application/json")
