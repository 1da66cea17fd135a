"""The webhook's gunicorn worker: gevent, with a deadline on everything a client does.

Any pod that can reach the webhook's Service can open connections to it, and with the
chart's `failurePolicy: Ignore` a webhook that stops answering switches every policy off.
So a connection costs the server a greenlet (a few kilobytes), never a thread, and no
client can keep one for long without sending requests:

- the TLS handshake must finish within `handshake_seconds`;
- the first request must start within `first_request_seconds` of the handshake, and each
  request (headers, body and answer) must be done within `request_seconds` of its first
  byte: a silent client or one that trickles a byte at a time (slowloris) is dropped, a
  request cut short gets a 408;
- between requests a connection may idle for gunicorn's `keepalive` (120 s: longer than
  the API server's 90 s, so the API server closes its idle connections, never we);
- the HTTP parser's own refusals (a bad request line, Content-Length or chunk, 414, 431)
  are answered with the same JSON Status body as the application's errors;
- on SIGTERM the worker stops accepting, closes the connections that wait between
  requests or in a handshake at once, and lets the requests in flight finish within
  `graceful_timeout`.

`worker_connections` bounds the connections of a worker; past it, new ones wait in the
listen backlog. The timeouts come from webhook/server/gunicorn_conf.py.
"""

from __future__ import annotations

import logging
import select
import signal
import socket
import ssl
import time
from functools import partial
from typing import Any

import gevent
import orjson
from gevent.pool import Pool
from gevent.server import StreamServer
from gevent.socket import wait_read
from gunicorn import http  # type: ignore[import-untyped]
from gunicorn import sock as gunicorn_sock
from gunicorn.http import errors as http_errors  # type: ignore[import-untyped]
from gunicorn.workers.ggevent import GeventWorker  # type: ignore[import-untyped]

from . import gunicorn_conf, logs
from .response import error_body

# How the parser's refusals are answered; any other parse error is a plain 400.
_STATUS_OF_ERROR: tuple[tuple[type[BaseException], int], ...] = (
    (http_errors.LimitRequestLine, 414),
    (http_errors.LimitRequestHeaders, 431),
    (http_errors.UnsupportedTransferCoding, 501),
)
_REASONS = {400: "Bad Request", 408: "Request Timeout", 414: "URI Too Long",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented"}
MAX_DETAIL = 200
# Writing an error answer to a client that reads nothing must not hold the greenlet.
SEND_TIMEOUT = 2.0


class RequestTimeout(BaseException):
    """A request did not arrive (or was not answered) within its deadline.

    Not an `Exception`: raised inside the application (a body trickling in), it must pass
    Flask's error handlers and gunicorn's, up to `handle`.
    """


class WebhookWorker(GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker, with handshake, request and idle deadlines per connection."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handshake_seconds = gunicorn_conf.handshake_seconds
        self.first_request_seconds = gunicorn_conf.first_request_seconds
        self.request_seconds = gunicorn_conf.request_seconds
        # Connections waiting for a handshake or for their next request, by their greenlet:
        # shutdown drops those that have nothing to read.
        self.waiting: dict[gevent.Greenlet, Any] = {}

    def init_process(self) -> None:
        # gunicorn installs the worker's signal handlers after the gevent patching (tens of
        # milliseconds after the fork); until then the master's inherited handler would take
        # a SIGTERM and lose it, and the worker would serve on until the graceful timeout.
        signal.signal(signal.SIGTERM, self.handle_exit)
        try:
            super().init_process()  # patches, loads the app, boots (post_worker_init), runs
        except Exception as exc:
            report = getattr(self.app, "boot_report", None)
            if not self.booted and report is not None:
                report.failed(exc)  # why, for `fieldwarden serve` to say (boot.py)
            raise

    def run(self) -> None:
        servers = []
        for listener in self.sockets:
            listener.setblocking(1)
            server = StreamServer(listener, handle=partial(self.handle, listener), spawn=Pool(self.worker_connections))
            if self.cfg.workers > 1:
                server.max_accept = 1  # leave the next connection to an idler worker
            server.start()
            servers.append(server)
        while self.alive:
            self.notify()
            gevent.sleep(1.0)
        for server in servers:
            server.close()  # no new connections
        deadline = time.monotonic() + self.cfg.graceful_timeout
        while time.monotonic() < deadline:
            self.drop_waiting()
            if all(server.pool.free_count() == server.pool.size for server in servers):
                return
            self.notify()
            gevent.sleep(0.05)
        self.log.warning("graceful timeout: %d requests still in flight are cut", sum(
            server.pool.size - server.pool.free_count() for server in servers))
        for server in servers:
            server.stop(timeout=1)

    def drop_waiting(self) -> None:
        """End the connections that have no request in flight.

        A connection whose bytes have arrived but whose greenlet has not run yet (a request
        sent just before the signal, or the last handshake message with a request behind it)
        is in flight for its client: it is left to be served.
        """
        for greenlet, client in list(self.waiting.items()):
            if not _readable(client):
                del self.waiting[greenlet]
                greenlet.kill(block=False)

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        me = gevent.getcurrent()
        req = None
        try:
            client.setblocking(1)
            self.waiting[me] = client
            try:
                if self.cfg.is_ssl:
                    client = self.tls_handshake(client)
                parser = http.get_parser(self.cfg, client, addr)
                listener_name = listener.getsockname()
                wait = self.first_request_seconds
                while True:
                    if not _buffered(parser, client):
                        if not self.alive and not _readable(client):
                            return  # stopping, and no request has begun on this connection
                        self.waiting[me] = client
                        wait_read(client.fileno(), timeout=wait)
                    self.waiting.pop(me, None)
                    with gevent.Timeout(self.request_seconds, RequestTimeout):
                        req = next(parser)
                        if not req:
                            return
                        self.handle_request(listener_name, req, client, addr)  # (closes when stopping)
                    if not self.cfg.keepalive:
                        return
                    req = None
                    wait = self.cfg.keepalive
            finally:
                self.waiting.pop(me, None)
        except (StopIteration, http_errors.NoMoreData, gevent.GreenletExit, socket.timeout):
            pass  # the client is done, idled too long, or the worker is stopping
        except RequestTimeout:
            self.send_error(client, 408, f"the request did not arrive within {self.request_seconds:g} s")
        except ssl.SSLError as exc:
            self.log.debug("TLS error from %s: %s", addr, exc)
        except OSError as exc:
            self.log.debug("socket error from %s: %s", addr, exc)
        except Exception as exc:
            self.handle_error(req, client, addr, exc)
        finally:
            try:
                client.close()
            except OSError:
                pass

    def tls_handshake(self, client: Any) -> Any:
        """`client` wrapped in TLS with a fresh context; the handshake done within the deadline."""
        context = gunicorn_sock.ssl_context(self.cfg)
        secure = context.wrap_socket(client, server_side=True, do_handshake_on_connect=False,
                                     suppress_ragged_eofs=True)
        with gevent.Timeout(self.handshake_seconds, socket.timeout("TLS handshake timed out")):
            secure.do_handshake()
        return secure

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """The HTTP parser refused the request (or something broke): a JSON Status, then close."""
        if isinstance(exc, http_errors.ParseException):
            status = next((code for kind, code in _STATUS_OF_ERROR if isinstance(exc, kind)), 400)
            detail = f"{type(exc).__name__}: {exc}"
            if len(detail) > MAX_DETAIL:
                detail = detail[:MAX_DETAIL] + "..."
            logs.event("http error", logging.WARNING, status=status, error=type(exc).__name__)
        else:
            status, detail = 500, "internal error"
            logs.event("unhandled error", logging.ERROR, exc_info=True)  # (called from the except clause)
        self.send_error(client, status, detail)

    def send_error(self, client: Any, status: int, message: str) -> None:
        body = orjson.dumps(error_body(status, message))
        head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        try:
            with gevent.Timeout(SEND_TIMEOUT, False):
                client.sendall(head + body)
        except OSError:
            pass


def _buffered(parser: Any, client: Any) -> bool:
    """Whether bytes of the next request are already read (pipelined, or decrypted by TLS)."""
    if parser.unreader.buf.tell():
        return True
    pending = getattr(client, "pending", None)
    return bool(pending and pending())


def _readable(client: Any) -> bool:
    """Whether `client` has bytes to read now (in the kernel, or decrypted and held by TLS)."""
    pending = getattr(client, "pending", None)
    try:
        if pending and pending():
            return True
        readable, _, _ = select.select([client], [], [], 0)
    except (OSError, ValueError):  # closed meanwhile: nothing to serve
        return False
    return bool(readable)
