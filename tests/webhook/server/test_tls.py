"""webhook/server/tls.py: real handshakes on 127.0.0.1 against a context that follows its files."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest
from cryptography import x509

from fieldwarden.webhook.server import certs
from fieldwarden.webhook.server.tls import ReloadingContext


class TinyTLSServer:
    """Accepts connections on 127.0.0.1 and completes a TLS handshake with `context()`."""

    def __init__(self, context: Callable[[], ssl.SSLContext]) -> None:
        self.context = context
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.settimeout(10)
            try:
                with self.context().wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        self.listener.close()
        self.thread.join(10)


@pytest.fixture
def tls_dir(tmp_path: Path) -> Path:
    certs.ensure_certificates(tmp_path)
    return tmp_path


def client_context(tls_dir: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls_dir / certs.CA_FILE))


def served_serial(port: int, tls_dir: Path, host: str = "127.0.0.1",
                  context: ssl.SSLContext | None = None) -> int:
    """The serial number of the certificate a new connection is shown (verified against the CA)."""
    context = context or client_context(tls_dir)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
            tls.sendall(b"x")
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def file_serial(tls_dir: Path) -> int:
    return x509.load_pem_x509_certificate((tls_dir / certs.CERT_FILE).read_bytes()).serial_number


def rotate(tls_dir: Path) -> int:
    """Issue a new serving certificate from the same CA into the folder; its serial."""
    ca_cert, ca_key = certs.load_ca(tls_dir)
    cert, key = certs.issue_serving_certificate(ca_cert, ca_key)
    certs.write_pair(tls_dir, cert, key)
    return cert.serial_number


@pytest.fixture
def reloading(tls_dir: Path) -> ReloadingContext:
    return ReloadingContext(tls_dir / certs.CERT_FILE, tls_dir / certs.KEY_FILE, interval=0)


@pytest.fixture
def per_connection(reloading: ReloadingContext) -> Iterator[TinyTLSServer]:
    """A server asking for the context on each connection, as webhook/server/worker.py does."""
    server = TinyTLSServer(reloading.context)
    yield server
    server.close()


@pytest.fixture
def built_once(reloading: ReloadingContext) -> Iterator[TinyTLSServer]:
    """A server that took one context at startup and keeps it (other worker classes)."""
    first = reloading.context()
    server = TinyTLSServer(lambda: first)
    yield server
    server.close()


def test_serves_the_certificate_in_the_files(tls_dir: Path, per_connection: TinyTLSServer) -> None:
    assert served_serial(per_connection.port, tls_dir) == file_serial(tls_dir)
    assert served_serial(per_connection.port, tls_dir, host="localhost") == file_serial(tls_dir)


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_refuses_tls_older_than_1_2(tls_dir: Path, per_connection: TinyTLSServer) -> None:
    old = client_context(tls_dir)
    old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises((ssl.SSLError, ConnectionError)):
        served_serial(per_connection.port, tls_dir, context=old)


def test_rotated_files_are_served_to_new_connections(tls_dir: Path, per_connection: TinyTLSServer,
                                                     reloading: ReloadingContext) -> None:
    before = served_serial(per_connection.port, tls_dir)
    after = rotate(tls_dir)
    assert after != before
    assert served_serial(per_connection.port, tls_dir) == after
    assert reloading.reloads == 1


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])  # with SNI, and without (an IP)
def test_a_context_built_once_still_serves_the_rotated_certificate(
    tls_dir: Path, built_once: TinyTLSServer, host: str
) -> None:
    served_serial(built_once.port, tls_dir, host=host)
    after = rotate(tls_dir)
    assert served_serial(built_once.port, tls_dir, host=host) == after


def test_unchanged_files_keep_the_same_context(reloading: ReloadingContext) -> None:
    first = reloading.context()
    assert reloading.context() is first
    assert reloading.reloads == 0


def test_a_half_written_pair_keeps_the_old_certificate_until_complete(
    tls_dir: Path, per_connection: TinyTLSServer, reloading: ReloadingContext
) -> None:
    before = served_serial(per_connection.port, tls_dir)
    ca_cert, ca_key = certs.load_ca(tls_dir)
    cert, key = certs.issue_serving_certificate(ca_cert, ca_key)
    certs.write_pem(tls_dir / certs.CERT_FILE, certs.cert_pem(cert))  # the key is not there yet
    assert served_serial(per_connection.port, tls_dir) == before
    certs.write_pem(tls_dir / certs.KEY_FILE, certs.key_pem(key), private=True)
    assert served_serial(per_connection.port, tls_dir) == cert.serial_number


def test_files_are_checked_at_most_once_per_interval(tls_dir: Path) -> None:
    slow = ReloadingContext(tls_dir / certs.CERT_FILE, tls_dir / certs.KEY_FILE, interval=3600)
    first = slow.context()
    rotate(tls_dir)
    assert slow.context() is first


def test_a_broken_pair_at_startup_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("not a certificate")
    (tmp_path / "tls.key").write_text("not a key")
    with pytest.raises(ssl.SSLError):
        ReloadingContext(tmp_path / "tls.crt", tmp_path / "tls.key")
