"""A server TLS context that follows its certificate files as they are rotated on disk.

cert-manager and kubelet rotate a mounted Secret by swapping the files (a symlink flip,
so each read sees a consistent pair). `ReloadingContext.context()` returns a context
loaded from the current files, re-checking their identity (inode, size, mtime) at most
every `interval` seconds, so a handshake costs one clock read, not two stat calls.
Every context it makes also carries an SNI callback that moves a handshake onto the
freshest context: a server that built its context once (rather than per connection,
as fieldwarden's gunicorn worker does) still serves the new certificate. A pair that does
not load (the key written but not yet the certificate) keeps the previous context
until the next check.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 5.0

_Identity = tuple[tuple[int, int, int, int], ...]


class ReloadingContext:
    """Server SSLContexts (TLS 1.2 and later) for a certificate / key file pair."""

    def __init__(self, certfile: str | Path, keyfile: str | Path, interval: float = DEFAULT_INTERVAL) -> None:
        self.certfile = str(certfile)
        self.keyfile = str(keyfile)
        self.interval = interval
        self.reloads = 0
        self._lock = threading.Lock()
        self._identity = self._stat()
        self._context = self._build()  # a broken pair at startup is an error, raised here
        self._checked = time.monotonic()

    def context(self) -> ssl.SSLContext:
        """The context for the next handshake (reloaded when the files changed)."""
        now = time.monotonic()
        if now - self._checked < self.interval:
            return self._context
        with self._lock:
            if now - self._checked >= self.interval:
                self._refresh()
                self._checked = time.monotonic()
        return self._context

    def _refresh(self) -> None:
        try:
            identity = self._stat()
        except OSError as exc:
            log.warning("TLS files unreadable, keeping the current certificate: %s", exc)
            return
        if identity == self._identity:
            return
        try:
            context = self._build()
        except (OSError, ssl.SSLError) as exc:
            log.warning("TLS files changed but do not load (yet), keeping the current certificate: %s", exc)
            return
        self._context = context
        self._identity = identity
        self.reloads += 1
        log.info("TLS certificate reloaded from %s", self.certfile)

    def _stat(self) -> _Identity:
        found = []
        for path in (self.certfile, self.keyfile):
            st = os.stat(path)  # follows symlinks: a flipped Secret volume shows a new inode
            found.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(found)

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
        context.load_cert_chain(self.certfile, self.keyfile)
        context.sni_callback = self._on_client_hello
        return context

    def _on_client_hello(self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None,
                         context: ssl.SSLContext) -> None:
        fresh = self.context()
        if fresh is not context:
            connection.context = fresh
