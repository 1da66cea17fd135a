"""gunicorn's configuration for the webhook, in production and in the tests alike.

`fieldwarden serve` loads these settings and lays its command-line choices over them;
each can also come from the environment (FIELDWARDEN_BIND, FIELDWARDEN_TLS_CERT,
FIELDWARDEN_TLS_KEY, FIELDWARDEN_WORKERS, FIELDWARDEN_THREADS,
FIELDWARDEN_TLS_RELOAD_SECONDS, FIELDWARDEN_LOG_LEVEL). The choices, and why:

- `gthread` workers: the only built-in worker class that keeps connections alive,
  which the API server relies on (it pools connections to a webhook). 2 workers x 4
  threads on 2 cores, chosen with bench/webhook_load.py: a decision is pure CPU, so
  one process per core does the work and a few threads per process hide the TLS
  reads and writes; more threads only add GIL contention (README, "The webhook").
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
"""

from __future__ import annotations

import os
import ssl
from typing import Any, Callable

from gunicorn import glogging  # type: ignore[import-untyped]

DEFAULT_BIND = "127.0.0.1:8443"
DEFAULT_WORKERS = 2
DEFAULT_THREADS = 4


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


bind = [_env("FIELDWARDEN_BIND", DEFAULT_BIND)]
certfile = os.environ.get("FIELDWARDEN_TLS_CERT")
keyfile = os.environ.get("FIELDWARDEN_TLS_KEY")
worker_class = "gthread"
workers = int(_env("FIELDWARDEN_WORKERS", str(DEFAULT_WORKERS)))
threads = int(_env("FIELDWARDEN_THREADS", str(DEFAULT_THREADS)))
worker_connections = 1000
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

_contexts: dict[tuple[str, str], Any] = {}


class JsonLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger with the webhook's JSON-lines format."""

    def setup(self, cfg: Any) -> None:
        from .logs import JsonFormatter

        super().setup(cfg)
        for handler in self.error_log.handlers:
            handler.setFormatter(JsonFormatter())


def ssl_context(config: Any, default_ssl_context_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """gunicorn hook (per connection in gthread workers): the freshest server context."""
    from .tls import ReloadingContext

    key = (str(config.certfile), str(config.keyfile))
    reloading = _contexts.get(key)
    if reloading is None:
        reloading = _contexts[key] = ReloadingContext(key[0], key[1], tls_reload_seconds)
    context: ssl.SSLContext = reloading.context()
    return context


def worker_exit(server: Any, worker: Any) -> None:
    """gunicorn hook: stop what the worker's application started (the inventory's watch)."""
    stop = getattr(worker.app, "on_worker_exit", None)
    if callable(stop):
        stop()


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn hook (in the master): a worker is gone; drop its live gauges from the pod's metrics."""
    from .multiproc import process_dead

    process_dead(worker.pid)


def settings() -> dict[str, Any]:
    """The settings above, by gunicorn setting name (for gunicorn.app.base.BaseApplication)."""
    names = (
        "bind", "certfile", "keyfile", "worker_class", "workers", "threads", "worker_connections",
        "keepalive", "timeout", "graceful_timeout", "backlog", "limit_request_line",
        "limit_request_fields", "accesslog", "errorlog", "loglevel", "proc_name", "logger_class",
        "control_socket_disable", "ssl_context", "worker_exit", "child_exit",
    )
    values = globals()
    return {name: values[name] for name in names}
