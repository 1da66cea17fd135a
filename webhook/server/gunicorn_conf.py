"""gunicorn's configuration for the webhook, in production and in the tests alike.

`fieldwarden serve` loads these settings and lays its command-line choices over them;
each can also come from the environment (FIELDWARDEN_BIND, FIELDWARDEN_TLS_CERT,
FIELDWARDEN_TLS_KEY, FIELDWARDEN_WORKERS, FIELDWARDEN_WORKER_CONNECTIONS,
FIELDWARDEN_TLS_RELOAD_SECONDS, FIELDWARDEN_LOG_LEVEL, FIELDWARDEN_HANDSHAKE_SECONDS,
FIELDWARDEN_FIRST_REQUEST_SECONDS, FIELDWARDEN_REQUEST_SECONDS). The choices, and why:

- `fieldwarden.webhook.server.worker.WebhookWorker`, gunicorn's gevent worker with a
  deadline on each phase of a connection (webhook/server/worker.py says how). Any pod can
  reach the webhook's Service: with threads (gthread), 16 connections that finished TLS
  and sent nothing held all 2 x 4 threads, and 200 slowloris connections failed most
  normal requests, so the policies were off (`failurePolicy: Ignore`) or the cluster
  blocked (`Fail`). A gevent connection costs a greenlet, not a thread; the deadlines
  free it: `handshake_seconds` 5 for TLS, `first_request_seconds` 10 for the first
  request to start, `request_seconds` 10 for a whole request once started (the API
  server waits at most 30 s, the chart's webhooks 5 s). bench/webhook_load.py measured it
  faster than 2 x 4 gthread (7,700 against 5,600 req/s in one hour, the admission
  endpoints outside Flask's dispatch counted in): a decision is pure CPU, and one greenlet
  at a time per process has no GIL contention.
- 2 workers (one per core; `FIELDWARDEN_WORKERS`), `worker_connections` 1000 each
  (`FIELDWARDEN_WORKER_CONNECTIONS`): 500 silent, 200 slowloris or 200 half-done
  handshakes leave room for the API server's connections (tests/webhook/server/
  test_hostile_clients.py); past the bound, new connections wait in the backlog until
  the deadlines free slots. An idle TLS connection costs about 30 kB.
- `keepalive` 120 s: longer than the API server's 90 s idle-connection timeout (Go's
  default transport), so the client, never the server, closes an idle connection
  and no request is ever sent into a connection the server is closing.
- `graceful_timeout` 25 s: after SIGTERM a worker stops accepting, finishes the
  requests in flight and closes kept-alive connections; 25 s fits in Kubernetes'
  default 30 s termination grace period.
- `timeout` 30 s: the API server gives up on a webhook after at most 30 s.
- TLS through `ssl_context` (webhook/server/tls.py): TLS 1.2+, the certificate re-read when
  the files change on disk, without a restart.
- No access log: the application logs one JSON line per admission request, with its
  uid; gunicorn's own messages go to stderr as JSON lines too.
- No control socket (gunicorn >= 25 makes one in $HOME by default, shared by every
  gunicorn of the user).
- A worker has booted once its application is built and its certificate loads
  (`post_worker_init`); only then does `fieldwarden serve` say "serving" (boot.py).
"""

from __future__ import annotations

import os
import ssl
from typing import TYPE_CHECKING, Any, Callable

from gunicorn import glogging  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from .tls import ReloadingContext

DEFAULT_BIND = "127.0.0.1:8443"
DEFAULT_WORKERS = 2
DEFAULT_WORKER_CONNECTIONS = 1000


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


bind = [_env("FIELDWARDEN_BIND", DEFAULT_BIND)]
certfile = os.environ.get("FIELDWARDEN_TLS_CERT")
keyfile = os.environ.get("FIELDWARDEN_TLS_KEY")
worker_class = "fieldwarden.webhook.server.worker.WebhookWorker"
workers = int(_env("FIELDWARDEN_WORKERS", str(DEFAULT_WORKERS)))
worker_connections = int(_env("FIELDWARDEN_WORKER_CONNECTIONS", str(DEFAULT_WORKER_CONNECTIONS)))
# Read by WebhookWorker (not gunicorn settings).
handshake_seconds = float(_env("FIELDWARDEN_HANDSHAKE_SECONDS", "5"))
first_request_seconds = float(_env("FIELDWARDEN_FIRST_REQUEST_SECONDS", "10"))
request_seconds = float(_env("FIELDWARDEN_REQUEST_SECONDS", "10"))
keepalive = 120
timeout = 30
graceful_timeout = 25
backlog = 2048
limit_request_line = 8190
limit_request_fields = 100
accesslog = None
errorlog = "-"
loglevel = _env("FIELDWARDEN_LOG_LEVEL", "info")
proc_name = "fieldwarden-webhook"
logger_class = "fieldwarden.webhook.server.gunicorn_conf.JsonLogger"
control_socket_disable = True
tls_reload_seconds = float(_env("FIELDWARDEN_TLS_RELOAD_SECONDS", "5"))

_contexts: dict[tuple[str, str], ReloadingContext] = {}


class JsonLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger with the webhook's JSON-lines format."""

    def setup(self, cfg: Any) -> None:
        from .logs import JsonFormatter

        super().setup(cfg)
        for handler in self.error_log.handlers:
            handler.setFormatter(JsonFormatter())


def ssl_context(config: Any, default_ssl_context_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """gunicorn hook (per connection in WebhookWorker): the freshest server context."""
    return _reloading(config).context()


def _reloading(config: Any) -> ReloadingContext:
    from .tls import ReloadingContext

    key = (str(config.certfile), str(config.keyfile))
    reloading = _contexts.get(key)
    if reloading is None:  # (a pair that does not load raises here)
        reloading = _contexts[key] = ReloadingContext(key[0], key[1], tls_reload_seconds)
    return reloading


def post_worker_init(worker: Any) -> None:
    """gunicorn hook (in a worker, its application loaded): load the certificate now, so that a
    worker that could not complete a handshake does not boot; then report the boot to
    `fieldwarden serve` (boot.py), which then says "serving"."""
    if worker.cfg.is_ssl:
        _reloading(worker.cfg)
    report = getattr(worker.app, "boot_report", None)
    if report is not None:
        report.booted()


def worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook: stop what the worker's application started (the inventory's watch)."""
    stop = getattr(worker.app, "on_worker_exit", None)
    if callable(stop):
        stop()
    import logging

    # Flush and close the log handlers now, while gevent is whole: at the interpreter's teardown
    # each handler's weakref callback takes logging's lock, which gevent's patching made depend
    # on module globals that are gone by then ("Exception ignored ... get_ident").
    logging.shutdown()
    del logging._handlerList[:]  # type: ignore[attr-defined]


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn hook (in the master): a worker is gone; drop its live gauges from the pod's metrics."""
    from .multiproc import process_dead

    try:
        process_dead(worker.pid)
    except ImportError:
        pass  # no metrics library, so the worker wrote no metrics (it could not boot)


def settings() -> dict[str, Any]:
    """The settings above, by gunicorn setting name (for gunicorn.app.base.BaseApplication)."""
    names = (
        "bind", "certfile", "keyfile", "worker_class", "workers", "worker_connections",
        "keepalive", "timeout", "graceful_timeout", "backlog", "limit_request_line",
        "limit_request_fields", "accesslog", "errorlog", "loglevel", "proc_name", "logger_class",
        "control_socket_disable", "ssl_context", "post_worker_init", "worker_exit", "child_exit",
    )
    values = globals()
    return {name: values[name] for name in names}
