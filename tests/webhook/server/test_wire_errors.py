"""What the HTTP layer refuses gets the same JSON Status body as the application's errors.

Raw requests over real TLS to a real `fieldwarden serve`: malformed chunked bodies (which
once escaped the application as a 500), a bad Content-Length, a request line over the
limit (414) and too many header fields (431).
"""

from __future__ import annotations

import json
import socket
import ssl
from typing import Any

import pytest

from tests.webhook.live import Server
from tests.webhook.samples import review


def exchange(server: Server, raw: bytes) -> tuple[int, dict[str, str], Any]:
    """Send `raw` over a new TLS connection; the status, headers and JSON body of the one answer."""
    context = ssl.create_default_context(cafile=str(server.ca))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as plain:
        with context.wrap_socket(plain, server_hostname="localhost") as tls:
            tls.sendall(raw)
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = tls.recv(65536)
                assert chunk, f"the server closed without an answer: {received!r}"
                received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers["content-length"])
            while len(body) < length:
                chunk = tls.recv(65536)
                assert chunk
                body += chunk
    return int(lines[0].split()[1]), headers, json.loads(body)


def chunked(path: str, chunks: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\n\r\n").encode() + chunks


BODY = json.dumps(review("pod-create")).encode()

CASES = {
    "a chunk size that is not hex": (chunked("/mutate", b"zz\r\n" + BODY + b"\r\n0\r\n\r\n"), 400),
    "a chunk without its terminator": (chunked("/validate", b"%x\r\n" % len(BODY) + BODY + b"XX0\r\n\r\n"), 400),
    "a Content-Length that is not a number": (
        b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 12a\r\n\r\n",
        400),
    "two different Content-Lengths": (
        b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400),
    "a request line over the limit": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414),
    "too many header fields": (
        b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-F%d: y\r\n" % i for i in range(150)) + b"\r\n", 431),
    "not HTTP at all": (b"\x16\x03\x01 hello\r\n\r\n", 400),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_requests_get_a_json_status_never_a_500(server: Server, case: str) -> None:
    raw, expected = CASES[case]
    status, headers, body = exchange(server, raw)
    assert status == expected
    assert headers["content-type"] == "application/json"
    assert body["kind"] == "Status" and body["code"] == expected and body["message"]


def test_the_server_keeps_answering_after_the_refusals(server: Server) -> None:
    for raw, _ in CASES.values():
        exchange(server, raw)
    client = server.client()
    try:
        assert client.request("GET", "/healthz").status == 200
    finally:
        client.close()
    assert "Traceback" not in server.stderr()
