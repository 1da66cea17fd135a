"""The webhook's speed targets (issue 3), measured against a baseline served in the same run.

    python bench/webhook_load.py [--seconds S] [--slice S] [--workers W]
    python bench/webhook_load.py --matrix        # saturation for several worker counts

Starts the webhook as in production (`fieldwarden serve`: gunicorn, TLS, the repository's
gunicorn configuration, an HPA inventory file) and, with the same configuration and
certificate, a trivial Flask endpoint that answers "allowed" without reading the review.
A separate load process (this script with --load) sends a realistic mix of AdmissionReviews
captured from a real API server (tests/fixtures/admission/) over kept-alive HTTPS
connections that verify the certificate:

    35%  Pod CREATE                      -> /mutate   (readiness gate injected: a patch)
    25%  Pod UPDATE, image only          -> /validate (allowed)
    10%  Pod UPDATE, env changed         -> /validate (denied, paths listed)
    30%  Deployment UPDATE under an HPA  -> /mutate   (replicas kept: a patch + warning)

Figures:
- requests/s at saturation (closed loop, 16 connections), webhook and trivial endpoint;
  target >= 2,000 req/s and >= 0.8x the trivial endpoint. One load process keeps
  connections open to every server and drives them in turn, half a second each, until
  each has had --seconds: this host's busy moments last longer than a turn, so they weigh
  on all servers alike (runs of several seconds each, one server after the other, gave
  ratios from 0.3 to 1.1 on the same code). A server's rate is the median of its turns'
  rates, so a turn the host stalled for a second counts as one turn; the ratio is the
  median over the cycles of webhook / trivial within a cycle (turns a second apart, so
  the host's slower drifts cancel out). A third server (the trivial endpoint, but reading
  and parsing the review with orjson, as the webhook does, and echoing its uid) shows how
  much of the gap is JSON alone; a fourth answers the admission paths in WSGI middleware
  before Flask, as the webhook itself does, so "webhook / bare stack" is the webhook's
  whole work (JSON, decision, logs, metrics) against the server stack alone;
- p50 / p99 latency at a fixed 500 requests/s (open loop: each request has a scheduled
  send time and its latency counts from then, so a stall is not hidden); target p99 < 10 ms;
- the cost of one decision in-process (`handlers.admit` on the same bodies: no HTTP, no
  TLS), so each layer's share shows.

Load and servers share the machine's 2 cores, as they would not in a cluster: the
saturation figures are a floor. The exit code is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "admission"
HPA = FIXTURES / "hpa-web.yaml"  # the autoscaler of the Deployment UPDATE in the mix
TRIVIAL_ANSWER = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"","allowed":true}}'
SATURATION_CONNECTIONS = 16
FIXED_RATE = 500.0
FIXED_RATE_CONNECTIONS = 8


# -- the request mix ---------------------------------------------------------------------

class Item(NamedTuple):
    name: str
    path: str
    body: bytes
    weight: int


def _review(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())  # type: ignore[no-any-return]


def request_mix() -> list[Item]:
    """The mix, built from the captured reviews (one variant derived in code)."""
    denied = _review("pod-update-set-image")
    container = denied["request"]["object"]["spec"]["containers"][0]
    container["env"] = [{"name": "MODE", "value": "fast"}]
    return [
        Item("pod CREATE", "/mutate", json.dumps(_review("pod-create")).encode(), 35),
        Item("pod UPDATE image", "/validate", json.dumps(_review("pod-update-set-image")).encode(), 25),
        Item("pod UPDATE env", "/validate", json.dumps(denied).encode(), 10),
        Item("deployment UPDATE", "/mutate", json.dumps(_review("deployment-update-apply")).encode(), 30),
    ]


def http_requests(items: Sequence[Item]) -> list[bytes]:
    """The mix as 100 ready HTTP/1.1 requests in a shuffled but fixed order."""
    import random

    order = [item for item in items for _ in range(item.weight)]
    random.Random(3).shuffle(order)
    return [
        (f"POST {item.path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
         f"Content-Length: {len(item.body)}\r\n\r\n").encode() + item.body
        for item in order
    ]


# -- the load process --------------------------------------------------------------------

class Connection:
    """A kept-alive HTTPS connection speaking just enough HTTP/1.1 (Content-Length bodies)."""

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")
        self.buffer = b""

    def roundtrip(self, request: bytes) -> int:
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        status = int(head[9:12])
        lower = head.lower()
        at = lower.find(b"\r\ncontent-length:")
        if at < 0 or b"\r\nconnection: close" in lower:
            raise RuntimeError("the server did not keep the connection alive")
        length = int(lower[at + 17:lower.find(b"\r\n", at + 2) if lower.find(b"\r\n", at + 2) > 0 else None])
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed mid-response")
            rest += chunk
        self.buffer = rest[length:]
        return status

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def open_warm(port: int, context: ssl.SSLContext, requests: Sequence[bytes], connections: int) -> list[Connection]:
    """`connections` kept-alive connections, each warmed with 20 requests as soon as it is open
    (a new, silent connection holds a server thread; the warm-up makes both sides' code paths hot)."""
    opened = []
    for _ in range(connections):
        conn = Connection(port, context)
        for request in requests[:20]:
            conn.roundtrip(request)
        opened.append(conn)
    return opened


def run_fixed(port: int, ca: Path, seconds: float, connections: int, rate: float) -> dict[str, Any]:
    """Open loop at `rate`: each request has its scheduled send time; counts and latencies."""
    context = ssl.create_default_context(cafile=str(ca))
    requests = http_requests(request_mix())
    opened = open_warm(port, context, requests, connections)
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    counter = [0]
    start = time.perf_counter() + 0.05
    end = start + seconds

    def next_slot() -> int:
        with lock:
            counter[0] += 1
            return counter[0] - 1

    def worker(conn: Connection) -> None:
        mine: list[float] = []
        try:
            while True:
                slot = next_slot()
                scheduled = start + slot / rate
                if scheduled >= end:
                    break
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                status = conn.roundtrip(requests[slot % len(requests)])
                mine.append(time.perf_counter() - scheduled)
                if status != 200:
                    errors.append(f"HTTP {status}")
        except Exception as exc:  # counted, not raised: the figures say how many failed
            errors.append(f"{type(exc).__name__}: {exc}")
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(conn,)) for conn in opened]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    elapsed = max(time.perf_counter(), end) - start
    for conn in opened:
        conn.close()
    return {"requests": len(latencies), "seconds": elapsed, "latencies": sorted(latencies), "errors": errors[:5],
            "error_count": len(errors)}


def run_sliced(ports: Sequence[int], ca: Path, seconds: float, slice_seconds: float,
               connections: int) -> dict[str, Any]:
    """Closed loop on each server in turn, in short slices, over connections kept open to all.

    Every server gets `seconds` of saturation, as cycles of one `slice_seconds` slice
    each (the order turning every cycle): a busy moment of the host lasts over several
    slices, so it weighs on every server alike. A slice ends when its last request is
    answered; its time counts up to then.
    """
    context = ssl.create_default_context(cafile=str(ca))
    requests = http_requests(request_mix())
    opened = [open_warm(port, context, requests, connections) for port in ports]
    cycles = max(1, round(seconds / slice_seconds))
    counts = [[0] * cycles for _ in ports]
    times = [[0.0] * cycles for _ in ports]
    errors: list[str] = []
    lock = threading.Lock()
    gate = threading.Barrier(connections + 1, timeout=slice_seconds + 60)
    state: dict[str, Any] = {"server": 0, "cycle": 0, "end": 0.0, "stop": False}

    def worker(index: int) -> None:
        slot = index
        while True:
            gate.wait()  # the slice starts
            if state["stop"]:
                return
            server, cycle, end = state["server"], state["cycle"], state["end"]
            conn, done = opened[server][index], 0
            try:
                while time.perf_counter() < end:
                    status = conn.roundtrip(requests[slot % len(requests)])
                    slot += connections
                    done += 1
                    if status != 200:
                        errors.append(f"HTTP {status}")
            except Exception as exc:  # counted, not raised: the figures say how many failed
                errors.append(f"{type(exc).__name__}: {exc}")
            with lock:
                counts[server][cycle] += done
            gate.wait()  # the slice's last answer is in

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(connections)]
    for thread in threads:
        thread.start()
    for cycle in range(cycles):
        for turn in range(len(ports)):
            server = (cycle + turn) % len(ports)
            began = time.perf_counter()
            state.update(server=server, cycle=cycle, end=began + slice_seconds)
            gate.wait()
            gate.wait()
            times[server][cycle] = time.perf_counter() - began
    state["stop"] = True
    gate.wait()
    for per_server in opened:
        for conn in per_server:
            conn.close()
    return {"counts": counts, "times": times, "errors": errors[:5], "error_count": len(errors)}


# -- the servers -------------------------------------------------------------------------

def trivial_app(kind: str = "trivial") -> Any:
    """Flask, answering "allowed" to POST /mutate and /validate without reading the review.

    - `trivial`: Flask routes (the baseline of the ratio target since the target was set);
    - `parse`: the same routes, reading and parsing the review (with orjson, as the webhook
      does) and echoing its uid: the floor of any real answer, to show how much of the gap
      to the trivial endpoint is JSON alone;
    - `bare`: WSGI middleware in front of Flask answering those two paths, as the webhook's
      own admission endpoints are served (webhook/server/app.py): the floor of the server
      stack itself (gunicorn, gevent, TLS), with no Flask dispatch.
    """
    import orjson
    from flask import Flask, Response, request

    app = Flask("trivial")

    @app.post("/mutate")
    @app.post("/validate")
    def allowed() -> Response:
        if kind != "parse":
            return Response(TRIVIAL_ANSWER, 200, mimetype="application/json")
        review = orjson.loads(request.get_data(cache=False))
        answer = {"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                  "response": {"uid": review["request"]["uid"], "allowed": True}}
        return Response(orjson.dumps(answer), 200, mimetype="application/json")

    if kind == "bare":
        flask_wsgi = app.wsgi_app

        def bare(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            if environ.get("PATH_INFO") not in ("/mutate", "/validate"):
                return flask_wsgi(environ, start_response)
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(TRIVIAL_ANSWER)))])
            return [TRIVIAL_ANSWER]

        app.wsgi_app = bare  # type: ignore[method-assign]
    return app


class Served:
    def __init__(self, name: str, command: list[str], port: int, folder: Path, ca: Path) -> None:
        self.name = name
        self.port = port
        self.log = folder / f"{name}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            cwd=folder)
        deadline = time.monotonic() + 30
        context = ssl.create_default_context(cafile=str(ca))
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{name} did not start:\n{self.log.read_text()}")
            try:
                conn = Connection(port, context)
                conn.close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{name} did not start in 30 s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_servers(folder: Path, workers: int | None) -> tuple[list[Served], Path]:
    from fieldwarden.webhook.server.certs import ensure_certificates

    paths = ensure_certificates(folder / "tls")
    assert paths.ca is not None
    sizing = ["--workers", str(workers)] if workers else []
    env_python = [sys.executable]
    port = free_port()
    servers = [Served("webhook", [*env_python, "-m", "fieldwarden", "serve", "--bind", f"127.0.0.1:{port}",
                                  "--cert-dir", str(folder / "tls"), "--inventory", str(HPA),
                                  *sizing], port, folder, paths.ca)]
    try:
        for kind in ("trivial", "parse", "bare"):
            port = free_port()
            servers.append(Served(kind, [*env_python, str(Path(__file__).resolve()), "--serve-trivial", kind,
                                         "--bind", f"127.0.0.1:{port}", "--cert-dir", str(folder / "tls"),
                                         *sizing], port, folder, paths.ca))
    except BaseException:
        for served in servers:
            served.stop()
        raise
    return servers, paths.ca


def serve_trivial(args: argparse.Namespace) -> int:
    from fieldwarden.webhook.server.serve import serve_wsgi

    options: dict[str, Any] = {"bind": [args.bind], "certfile": str(args.cert_dir / "tls.crt"),
                               "keyfile": str(args.cert_dir / "tls.key")}
    if args.workers:
        options["workers"] = args.workers
    return serve_wsgi(lambda: trivial_app(args.serve_trivial), options)


def load_process(arguments: Sequence[str], timeout: float, what: str) -> dict[str, Any]:
    """This script's `--load` mode in a separate process (its own interpreter and GIL): its result."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--load", *arguments],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"load process failed: {done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    if result["error_count"]:
        raise RuntimeError(f"{what}: {result['error_count']} failed requests, e.g. {result['errors']}")
    return result


def load_sliced(servers: Sequence[Served], ca: Path, seconds: float, slice_seconds: float) -> dict[str, Any]:
    """`run_sliced` in a separate process: per server, its median rate over the cycles, and each."""
    ports = ",".join(str(served.port) for served in servers)
    result = load_process(["sliced", "--ports", ports, "--ca", str(ca), "--seconds", str(seconds), "--slice",
                           str(slice_seconds), "--connections", str(SATURATION_CONNECTIONS)],
                          len(servers) * (seconds + 60) + 120, ", ".join(served.name for served in servers))
    found: dict[str, Any] = {}
    for served, counts, times in zip(servers, result["counts"], result["times"]):
        by_cycle = [n / t for n, t in zip(counts, times)]
        found[served.name] = statistics.median(by_cycle)  # (a slice the host stalled for seconds weighs one cycle)
        found[f"{served.name} by cycle"] = by_cycle
    return found


def load_fixed(served: Served, ca: Path, seconds: float, connections: int, rate: float) -> dict[str, Any]:
    """`run_fixed` in a separate process."""
    return load_process(["fixed", "--port", str(served.port), "--ca", str(ca), "--seconds", str(seconds),
                         "--connections", str(connections), "--rate", str(rate)], seconds + 120, served.name)


# -- in-process ---------------------------------------------------------------------------

def decision_cost(rounds: int = 5, per_round: int = 2000) -> tuple[float, dict[str, float]]:
    """Microseconds per `handlers.admit` call over the mix (median of rounds), and per item."""
    import logging

    from fieldwarden.policies.config import Settings
    from fieldwarden.webhook.server import logs
    from fieldwarden.webhook.server.handlers import admit
    from fieldwarden.webhook.inventory.sources import StaticInventory

    import yaml

    # The server logs one JSON line per request: keep that cost, but to a sink, not the terminal.
    logs.configure(open(os.devnull, "w"), logging.INFO)  # noqa: SIM115 - lives as long as the process
    settings = Settings()
    inventory = StaticInventory(yaml.safe_load_all(HPA.read_text()))
    items = request_mix()

    def one(item: Item) -> Callable[[], Any]:
        endpoint = "mutate" if item.path == "/mutate" else "validate"
        return lambda: admit(item.body, "application/json", endpoint, settings, inventory)  # type: ignore[arg-type]

    per_item: dict[str, float] = {}
    for item in items:
        call = one(item)
        status, _ = call()
        assert status == 200
        samples = []
        for _ in range(rounds):
            began = time.perf_counter()
            for _ in range(per_round // 4):
                call()
            samples.append((time.perf_counter() - began) / (per_round // 4) * 1e6)
        per_item[item.name] = statistics.median(samples)
    total_weight = sum(item.weight for item in items)
    mixed = sum(per_item[item.name] * item.weight for item in items) / total_weight
    return mixed, per_item


# -- orchestration -----------------------------------------------------------------------

def percentile(values: Sequence[float], fraction: float) -> float:
    return values[min(len(values) - 1, int(fraction * len(values)))]


def measure(args: argparse.Namespace, workers: int | None) -> dict[str, Any]:
    """Saturation rates of each server (sliced, interleaved) and the fixed-rate run."""
    with tempfile.TemporaryDirectory(prefix="fieldwarden-bench-") as tmp:
        servers, ca = start_servers(Path(tmp), workers)
        try:
            found = load_sliced(servers, ca, args.seconds, args.slice)
            if not args.matrix:
                found["fixed"] = load_fixed(servers[0], ca, args.fixed_seconds, FIXED_RATE_CONNECTIONS, FIXED_RATE)
        finally:
            for served in servers:
                served.stop()
    by_cycle = zip(found["webhook by cycle"], found["trivial by cycle"])
    found["ratios"] = sorted(webhook / trivial for webhook, trivial in by_cycle)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="saturation time per server")
    parser.add_argument("--slice", type=float, default=0.5, help="length of one server's turn at saturation")
    parser.add_argument("--fixed-seconds", type=float, default=10.0, help="length of the 500 req/s run")
    parser.add_argument("--workers", type=int, help="gunicorn workers (default: the configuration's)")
    parser.add_argument("--matrix", action="store_true", help="saturation for several worker counts")
    parser.add_argument("--sizes", default="1,2,3,4", help="the --matrix worker counts (default %(default)s)")
    # Internal modes: the load process and the trivial server.
    parser.add_argument("--load", choices=["sliced", "fixed"], help=argparse.SUPPRESS)
    parser.add_argument("--ports", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ca", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--serve-trivial", choices=["trivial", "parse", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--bind", help=argparse.SUPPRESS)
    parser.add_argument("--cert-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.load == "sliced":
        ports = [int(port) for port in args.ports.split(",")]
        print(json.dumps(run_sliced(ports, args.ca, args.seconds, args.slice, args.connections)))
        return 0
    if args.load:
        print(json.dumps(run_fixed(args.port, args.ca, args.seconds, args.connections, args.rate)))
        return 0
    if args.serve_trivial:
        return serve_trivial(args)

    if args.matrix:
        print(f"{'workers':>7} {'webhook req/s':>14} {'trivial req/s':>14} {'ratio':>6}", flush=True)
        for size in args.sizes.split(","):
            workers = int(size)
            found = measure(args, workers)
            print(f"{workers:>7} {found['webhook']:>14.0f} {found['trivial']:>14.0f} "
                  f"{statistics.median(found['ratios']):>6.2f}", flush=True)
        return 0

    mixed, per_item = decision_cost()
    found = measure(args, args.workers)
    fixed = found["fixed"]
    latencies = fixed["latencies"]
    p50, p99 = percentile(latencies, 0.50) * 1000, percentile(latencies, 0.99) * 1000
    achieved = fixed["requests"] / fixed["seconds"]
    ratios = found["ratios"]
    ratio = statistics.median(ratios)
    bare_ratio = statistics.median(w / b for w, b in zip(found["webhook by cycle"], found["bare by cycle"]))
    spread = (f"{percentile(ratios, 0.1):.2f} / {percentile(ratios, 0.5):.2f} / {percentile(ratios, 0.9):.2f}"
              f" over {len(ratios)} cycles; ratio of the two medians above: {found['webhook'] / found['trivial']:.2f}")
    targets = [
        ("saturation, webhook", f"{found['webhook']:,.0f} req/s", ">= 2,000 req/s", found["webhook"] >= 2000),
        ("saturation, trivial endpoint", f"{found['trivial']:,.0f} req/s", "", None),
        ("saturation, trivial + JSON (no decision)", f"{found['parse']:,.0f} req/s", "", None),
        ("saturation, bare stack (no Flask dispatch)", f"{found['bare']:,.0f} req/s", "", None),
        ("ratio webhook / trivial (median of cycles)", f"{ratio:.2f}", ">= 0.80", ratio >= 0.8),
        ("ratio webhook / bare stack (median of cycles)", f"{bare_ratio:.2f}", "", None),
        (f"at {FIXED_RATE:.0f} req/s (achieved {achieved:.0f}): p50", f"{p50:.2f} ms", "", None),
        (f"at {FIXED_RATE:.0f} req/s (achieved {achieved:.0f}): p99", f"{p99:.2f} ms", "< 10 ms", p99 < 10),
        ("one decision in-process (mix)", f"{mixed:.0f} us", "", None),
    ]
    for name, cost in per_item.items():
        targets.append((f"  {name}", f"{cost:.0f} us", "", None))
    width = max(len(t[0]) for t in targets)
    for name, value, goal, met in targets:
        verdict = "" if met is None else ("  met" if met else "  MISSED")
        print(f"{name:<{width}}  {value:>14}  {goal:<15}{verdict}")
    cores = os.cpu_count() or 1
    cpu = {name: 1e6 / found[name] * cores for name in ("bare", "trivial", "parse", "webhook")}
    print(f"\nwebhook / trivial cycle by cycle, 10th / 50th / 90th percentile: {spread}")
    print(f"CPU per request at saturation ({cores} cores, load generator included): bare stack {cpu['bare']:.0f} us;"
          f" Flask's dispatch {cpu['trivial'] - cpu['bare']:+.0f} us (the trivial endpoint);"
          f" + reading, parsing and answering JSON {cpu['parse'] - cpu['trivial']:+.0f} us;"
          f" the webhook (no Flask dispatch: JSON, deciding, logging, metrics)"
          f" {cpu['webhook'] - cpu['bare']:+.0f} us over the bare stack"
          f" (one decision in-process, one core busy: {mixed:.0f} us).")
    return 0 if all(t[3] is not False for t in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
