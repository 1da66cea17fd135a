"""The Flask application: HTTP in and out around `handlers.admit`.

- `POST /mutate`, `POST /validate`: AdmissionReview in, AdmissionReview out (or a 4xx
  with a JSON Status body when the request is not a usable AdmissionReview);
- `GET /healthz`: 200 while the process answers;
- `GET /readyz`: 200 once the autoscaler inventory finished its first sync, else 503;
- `GET /metrics`: Prometheus text.

Every error is JSON; a 500 (a bug outside the admission core, which allows requests
rather than fail) carries no internals, only "internal error", and logs the traceback.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from ..policies.config import Settings
from . import logs
from .handlers import MUTATE, VALIDATE, Endpoint, admit
from .inventory import Inventory
from .metrics import CONTENT_TYPE, METRICS
from .response import error_body


def create_app(settings: Settings, inventory: Inventory) -> Flask:
    """The webhook application for these settings and this autoscaler inventory."""
    logs.configure()
    app = Flask("fieldwarden.webhook")
    # Werkzeug refuses longer bodies (413) before reading them; chunked ones too.
    app.config["MAX_CONTENT_LENGTH"] = settings.webhook.max_request_bytes

    def review(endpoint: Endpoint) -> Response:
        status, answer = admit(_body(), request.content_type or "", endpoint, settings, inventory)
        return _json(answer, status)

    @app.post("/mutate")
    def mutate() -> Response:
        return review(MUTATE)

    @app.post("/validate")
    def validate() -> Response:
        return review(VALIDATE)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"}, 200)

    @app.get("/readyz")
    def readyz() -> Response:
        ready = inventory.ready()
        state = {"status": "ok" if ready else "inventory not synced", "inventory": inventory.describe()}
        return _json(state, 200 if ready else 503)

    @app.get("/metrics")
    def metrics() -> Response:
        text = METRICS.render(inventory.describe(), inventory.ready(), inventory.stale())
        return Response(text, 200, content_type=CONTENT_TYPE)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        logs.event("http error", logging.WARNING, status=status, path=request.path, method=request.method)
        return _json(error_body(status, exc.description or exc.name), status)

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        logs.event("unhandled error", logging.ERROR, exc_info=True, path=request.path)
        return _json(error_body(500, "internal error"), 500)

    return app


def _body() -> bytes:
    """The request body: read straight from the server's stream when its length is declared.

    Werkzeug has already refused a declared length over MAX_CONTENT_LENGTH (413) when
    this runs; the server's stream ends at that length. A body without a declared
    length (chunked) goes through Werkzeug's limited stream.
    """
    length = request.content_length
    if length is None:
        return request.get_data(cache=False)
    limit = request.max_content_length
    if limit is not None and length > limit:
        raise RequestEntityTooLarge()
    return request.environ["wsgi.input"].read(length) if length else b""


def _json(data: Any, status: int) -> Response:
    return Response(orjson.dumps(data), status, mimetype="application/json")
