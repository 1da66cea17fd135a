"""The webhook as the API server meets it: real gunicorn, real TLS on 127.0.0.1, real reviews.

One server per module (`fieldwarden serve --inventory FILE --config FILE`, a certificate
generated into the test's folder); every request verifies the server against the
generated CA and goes over kept-alive connections. Patches are applied with jsonpatch
to the request's object and the resulting object is checked.
"""

from __future__ import annotations

import copy
import http.client
import json
import signal
import socket
import ssl
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from cryptography import x509

from fieldwarden.webhook.server import certs
from tests.webhook.live import Client, Server
from tests.webhook.server.serving import MAX_REQUEST_BYTES, admit, server_args
from tests.webhook.samples import edit, patched, review

GATE = {"conditionType": "InPlaceUpdateReady"}
INJECTED_LABEL = "fieldwarden.io/readiness-gate"


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    connection = server.client()
    yield connection
    connection.close()


# -- the policies ---------------------------------------------------------------------

def test_pod_update_that_only_sets_an_image_is_allowed(client: Client) -> None:
    answer = admit(client, "/validate", review("pod-update-set-image"))
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]


def test_pod_update_that_changes_env_is_denied_naming_the_paths(client: Client) -> None:
    def change(request: dict[str, Any]) -> None:
        spec = request["object"]["spec"]
        spec["containers"][0]["env"] = [{"name": "MODE", "value": "fast"}]
        spec["activeDeadlineSeconds"] = 600

    data = edit(review("pod-update-set-image"), change)
    answer = admit(client, "/validate", data)
    response = answer["response"]
    assert response["allowed"] is False
    assert "patch" not in response
    name = data["request"]["object"]["spec"]["containers"][0]["name"]
    message = response["status"]["message"]
    assert "FW401" in message
    assert f"spec.containers[name={name}].env" in message
    assert "spec.activeDeadlineSeconds" in message


def test_pod_label_change_is_allowed(client: Client) -> None:
    answer = admit(client, "/validate", review("pod-update-label"))
    assert answer["response"]["allowed"] is True


def test_pod_create_gets_the_readiness_gate_and_label(client: Client) -> None:
    data = review("pod-create")
    answer = admit(client, "/mutate", data)
    assert answer["response"]["allowed"] is True
    expected = copy.deepcopy(data["request"]["object"])
    assert "readinessGates" not in expected["spec"]
    expected["spec"]["readinessGates"] = [GATE]
    expected["metadata"].setdefault("labels", {})[INJECTED_LABEL] = "injected"
    pod = patched(data, answer)
    assert pod == expected

    # Reinvoked with its own result (reinvocationPolicy: IfNeeded): nothing more to do.
    again = edit(data, lambda request: request.update(object=pod))
    assert "patch" not in admit(client, "/mutate", again)["response"]


def test_pod_create_appends_to_existing_readiness_gates(client: Client) -> None:
    other = {"conditionType": "example.com/LoadBalancerReady"}
    data = edit(review("pod-create"), lambda r: r["object"]["spec"].update(readinessGates=[other]))
    pod = patched(data, admit(client, "/mutate", data))
    assert pod["spec"]["readinessGates"] == [other, GATE]


def test_deployment_update_under_an_hpa_keeps_the_live_replicas(client: Client) -> None:
    data = review("deployment-update-apply")
    live = data["request"]["oldObject"]["spec"]["replicas"]
    assert data["request"]["object"]["spec"]["replicas"] != live  # what the apply would reset
    answer = admit(client, "/mutate", data)
    response = answer["response"]
    assert response["allowed"] is True
    expected = copy.deepcopy(data["request"]["object"])
    expected["spec"]["replicas"] = live
    assert patched(data, answer) == expected
    assert any("replicas" in warning for warning in response["warnings"])


def test_dry_run_update_gets_the_same_patch(client: Client) -> None:
    data = review("deployment-update-dryrun")
    assert data["request"]["dryRun"] is True
    answer = admit(client, "/mutate", data)
    live = data["request"]["oldObject"]["spec"]["replicas"]
    assert patched(data, answer)["spec"]["replicas"] == live


def test_scale_subresource_is_never_touched(client: Client) -> None:
    data = review("deployment-scale-subresource")
    for endpoint in ("/mutate", "/validate"):
        response = admit(client, endpoint, data)["response"]
        assert response["allowed"] is True
        assert "patch" not in response and "warnings" not in response


# -- the wire -------------------------------------------------------------------------

def test_requests_reuse_one_kept_alive_connection(client: Client) -> None:
    admit(client, "/validate", review("pod-update-set-image"))
    first = client.socket
    assert first is not None
    for _ in range(5):
        reply = client.post("/mutate", review("pod-create"))
        assert reply.status == 200
        assert reply.headers.get("connection", "").lower() != "close"
    assert client.socket is first


def bad_requests() -> list[tuple[str, str, bytes | None, str | None, int]]:
    pod = review("pod-create")
    return [
        ("not json", "/mutate", b"{not json", "application/json", 400),
        ("wrong content type", "/validate", json.dumps(pod).encode(), "text/plain", 415),
        ("no content type", "/validate", json.dumps(pod).encode(), None, 415),
        ("wrong apiVersion", "/mutate", json.dumps({**pod, "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
         "application/json", 400),
        ("wrong kind", "/mutate", json.dumps({**pod, "kind": "Pod"}).encode(), "application/json", 400),
        ("no request", "/validate", json.dumps({k: v for k, v in pod.items() if k != "request"}).encode(),
         "application/json", 400),
        ("no uid", "/validate", json.dumps(edit(pod, lambda r: r.pop("uid"))).encode(), "application/json", 400),
        ("object not a mapping", "/mutate", json.dumps(edit(pod, lambda r: r.update(object=[1]))).encode(),
         "application/json", 400),
        ("body over the limit", "/mutate", b" " * (MAX_REQUEST_BYTES + 1) + json.dumps(pod).encode(),
         "application/json", 413),
        ("GET on an admission endpoint", "/mutate", None, None, 405),
        ("unknown path", "/nowhere", b"{}", "application/json", 404),
    ]


@pytest.mark.parametrize(("case", "path", "body", "content_type", "status"), bad_requests(),
                         ids=[case[0] for case in bad_requests()])
def test_bad_requests_get_a_4xx_with_a_json_error(server: Server, case: str, path: str, body: bytes | None,
                                                  content_type: str | None, status: int) -> None:
    client = server.client()
    try:
        reply = client.request("GET" if body is None else "POST", path, body, content_type)
    finally:
        client.close()
    assert reply.status == status
    assert reply.headers["content-type"].startswith("application/json")
    error = reply.json()
    assert isinstance(error, dict) and error  # a JSON body saying what is wrong, never a traceback
    assert "Traceback" not in reply.body.decode()


def _post_chunked(client: Client, path: str, body: bytes) -> tuple[int, Any]:
    """POST `body` with Transfer-Encoding: chunked (no Content-Length), in 4 KiB chunks."""
    chunks = (body[at:at + 4096] for at in range(0, len(body), 4096))
    client.connection.request("POST", path, body=chunks, headers={"Content-Type": "application/json"},
                              encode_chunked=True)
    response = client.connection.getresponse()
    return response.status, json.loads(response.read())


def test_a_chunked_review_is_answered_and_a_chunked_body_over_the_limit_is_413(server: Server) -> None:
    client = server.client()
    try:
        data = review("pod-create")
        status, answer = _post_chunked(client, "/mutate", json.dumps(data).encode())
        assert status == 200 and answer["response"]["uid"] == data["request"]["uid"]
        assert patched(data, answer)["spec"]["readinessGates"] == [GATE]
    finally:
        client.close()
    client = server.client()
    try:
        status, error = _post_chunked(client, "/mutate", b" " * (MAX_REQUEST_BYTES + 1) + json.dumps(data).encode())
        assert status == 413 and error["reason"] == "RequestEntityTooLarge"
    finally:
        client.close()


def test_health_readiness_and_metrics(client: Client) -> None:
    assert client.request("GET", "/healthz").status == 200
    ready = client.request("GET", "/readyz")
    assert ready.status == 200
    assert ready.json()["inventory"]["size"] == 1
    # Every worker's /metrics shows the whole pod's counters (tests/webhook/server/test_metrics_live.py).
    data = edit(review("pod-update-set-image"), lambda r: r["object"]["spec"].update(activeDeadlineSeconds=5))
    assert admit(client, "/validate", data)["response"]["allowed"] is False
    metrics = client.request("GET", "/metrics")
    assert metrics.status == 200 and metrics.headers["content-type"].startswith("text/plain")
    lines = metrics.body.decode().splitlines()
    assert any(line.startswith("fieldwarden_admission_requests_total{")
               and 'endpoint="validate"' in line and 'kind="Pod"' in line and 'decision="denied"' in line
               for line in lines)
    assert any(line.startswith("fieldwarden_admission_duration_seconds_bucket") for line in lines)


def test_admission_requests_are_logged_as_json_lines_with_their_uid(server: Server, client: Client) -> None:
    # A denial is logged at info level (plain allows only at debug).
    data = edit(review("pod-update-set-image"), lambda r: r["object"]["spec"].update(activeDeadlineSeconds=600))
    assert admit(client, "/validate", data)["response"]["allowed"] is False
    uid = data["request"]["uid"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        entries = [json.loads(line) for line in server.stderr().splitlines() if line.startswith("{")]
        if any(entry.get("uid") == uid for entry in entries):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"no log line carries uid {uid}")


# -- TLS ------------------------------------------------------------------------------

def served_serial(server: Server) -> int:
    """The serial of the certificate a new connection is shown (verified against the CA)."""
    context = ssl.create_default_context(cafile=str(server.ca))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_a_rotated_certificate_is_served_without_a_restart(server: Server) -> None:
    before = served_serial(server)
    ca_cert, ca_key = certs.load_ca(server.cert_dir)
    cert, key = certs.issue_serving_certificate(ca_cert, ca_key)
    certs.write_pair(server.cert_dir, cert, key)
    assert cert.serial_number != before
    deadline = time.monotonic() + 20
    seen: set[int] = set()
    # Both workers reload on their own: wait until several new connections all see it.
    while time.monotonic() < deadline:
        serials = [served_serial(server) for _ in range(4)]
        seen.update(serials)
        if set(serials) == {cert.serial_number}:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"still served: {seen - {cert.serial_number}}")
    assert server.process is not None and server.process.poll() is None  # no restart
    fresh = server.client()
    try:
        assert admit(fresh, "/validate", review("pod-update-set-image"))["response"]["allowed"] is True
    finally:
        fresh.close()


def test_plain_http_is_refused(server: Server) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        status = connection.getresponse().status
    except (ConnectionError, http.client.HTTPException):
        return
    finally:
        connection.close()
    assert status >= 400


# -- shutdown -------------------------------------------------------------------------

def test_sigterm_finishes_the_request_in_flight_then_exits_0(tmp_path: Path) -> None:
    running = Server(server_args(tmp_path), tmp_path)
    try:
        data = review("deployment-update-apply")
        body = json.dumps(data).encode()
        context = ssl.create_default_context(cafile=str(running.ca))
        with socket.create_connection(("127.0.0.1", running.port), timeout=20) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                # A worker has accepted the connection (the handshake is done); half the request.
                head = (f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode()
                tls.sendall(head + body[: len(body) // 2])
                running.signal(signal.SIGTERM)
                # Both workers got SIGTERM once the idle one has exited; then finish the request.
                deadline = time.monotonic() + 20
                while running.stderr().count("Worker exiting") < 1 and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert "Handling signal: term" in running.stderr()
                tls.sendall(body[len(body) // 2:])
                response = http.client.HTTPResponse(tls)  # type: ignore[arg-type]
                response.begin()
                answer = json.loads(response.read())
        assert response.status == 200
        assert answer["response"]["uid"] == data["request"]["uid"]
        assert patched(data, answer)["spec"]["replicas"] == data["request"]["oldObject"]["spec"]["replicas"]
        assert running.wait() == 0
    finally:
        running.stop()


def test_sigterm_while_a_worker_boots_ends_every_worker_promptly_and_quietly(tmp_path: Path) -> None:
    # The server answers once one worker is up; the other is often still booting (patching
    # for gevent) when the signal comes, and must not lose it and serve on for 25 s.
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        running = Server(server_args(folder), folder)
        try:
            start = time.monotonic()
            running.signal(signal.SIGTERM)
            assert running.wait(timeout=20) == 0
            assert time.monotonic() - start < 5
            assert "Traceback" not in running.stderr() and "Exception ignored" not in running.stderr()
        finally:
            running.stop()


@pytest.mark.parametrize("level", ["debug", "warning"])
def test_log_level_applies_to_the_admission_lines(tmp_path: Path, level: str) -> None:
    server = Server([*server_args(tmp_path), "--log-level", level], tmp_path)
    try:
        client = server.client()
        allowed = review("pod-update-set-image")  # a plain allow: logged at debug level only
        denied = edit(review("pod-update-set-image"), lambda r: r["object"]["spec"].update(activeDeadlineSeconds=9))
        denied["request"]["uid"] = "denied-" + denied["request"]["uid"]
        assert admit(client, "/validate", allowed)["response"]["allowed"] is True
        assert admit(client, "/validate", denied)["response"]["allowed"] is False
        assert client.request("POST", "/validate", b"{", "application/json").status == 400  # a warning line
        client.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            entries = [json.loads(line) for line in server.stderr().splitlines() if line.startswith("{")]
            if any(entry.get("message") == "bad request" for entry in entries):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the bad request was not logged")
        uids = {entry.get("uid") for entry in entries}
        if level == "debug":
            assert {allowed["request"]["uid"], denied["request"]["uid"]} <= uids
        else:
            assert allowed["request"]["uid"] not in uids and denied["request"]["uid"] not in uids
    finally:
        server.stop()
