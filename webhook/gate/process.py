"""`fieldwarden controller`: the readiness-gate controller as a process (several replicas, one leads).

Wires the pieces together and serves the probes: the policy configuration (FW402's
`condition-type` and `injected-label`, so the controller watches exactly the pods the
webhook gates), the cluster connection, the Lease election, the `GateController`, and an
HTTP endpoint (plain HTTP: probes and Prometheus scrapes stay inside the cluster):

- `GET /healthz`: 200 while the controller's threads run;
- `GET /readyz`: 200 once the pod list has been read (a standby is ready too: it is
  warm and takes over when the leader goes);
- `GET /metrics`: see `controller_metrics`.

SIGTERM or SIGINT stops it: the lease is released, so a standby takes over at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from ...policies.config import ConfigError, Settings, load_settings
from ...policies.rules import pod_without_readiness_gate as fw402

LOCAL_BIND = "127.0.0.1:8080"
CLUSTER_BIND = "0.0.0.0:8080"
DEFAULT_LEASE = "fieldwarden-controller"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `fieldwarden controller`."""
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help="policy configuration: FW402's condition-type and injected-label (the webhook's file)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="default: $KUBECONFIG, ~/.kube/config or in-cluster")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    parser.add_argument("--lease-namespace", metavar="NS",
                        help="namespace of the leader-election Lease (default: the pod's own, or the context's)")
    parser.add_argument("--lease-name", metavar="NAME", default=DEFAULT_LEASE, help="default %(default)s")
    parser.add_argument("--identity", metavar="ID", help="this replica's name in the Lease (default: host + random)")
    parser.add_argument("--lease-duration", type=float, default=15.0, metavar="S", help="default %(default)s")
    parser.add_argument("--renew-deadline", type=float, default=10.0, metavar="S", help="default %(default)s")
    parser.add_argument("--retry-period", type=float, default=2.0, metavar="S", help="default %(default)s")
    parser.add_argument("--bind", metavar="HOST:PORT",
                        help=f"probes and metrics (default: {CLUSTER_BIND} in a pod, {LOCAL_BIND} elsewhere)")
    parser.add_argument("--workers", type=int, default=2, metavar="N", help="threads writing conditions (default 2)")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")


def gate_settings(settings: Settings) -> tuple[str, str]:
    """(condition type, label selector) from FW402's options, as the webhook applies them."""
    conf = {**fw402.DEFAULTS, **settings.rule_conf(fw402.CODE)}
    label = conf["injected-label"]
    return str(conf["condition-type"]), f"{label['key']}={label['value']}"


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM / SIGINT; 2 when it cannot start."""
    from ..server import logs
    from .metrics import ControllerMetrics
    from .controller import FIELD_MANAGER, GateController
    from ..kube.api import Leases, NoCluster, connect, current_namespace
    from .leader import LeaderElection

    logs.configure(level=args.log_level)
    try:
        settings = load_settings(args.config)
        condition_type, selector = gate_settings(settings)
        if args.workers < 1:
            raise ValueError("--workers must be at least 1")
        api_client = connect(args.kubeconfig, args.context, "the controller", program="controller")
    except (ConfigError, NoCluster, ValueError) as exc:
        print(f"fieldwarden: {exc}", file=sys.stderr)
        return 2
    namespace = args.lease_namespace or current_namespace(args.kubeconfig, args.context)
    metrics = ControllerMetrics()
    holder: dict[str, Any] = {}
    try:
        election = LeaderElection(
            Leases(api_client, field_manager=FIELD_MANAGER), namespace, args.lease_name, args.identity,
            lease_duration=args.lease_duration, renew_deadline=args.renew_deadline, retry_period=args.retry_period,
            on_started_leading=lambda: holder["controller"].started_leading(),
        )
    except ValueError as exc:
        print(f"fieldwarden: {exc}", file=sys.stderr)
        return 2
    controller = holder["controller"] = GateController(
        api_client, condition_type=condition_type, label_selector=selector, is_leader=election.is_leader,
        workers=args.workers, metrics=metrics,
    )
    try:
        server = health_server(args.bind or default_bind(), controller, election.is_leader)
    except (OSError, ValueError) as exc:
        print(f"fieldwarden: cannot listen on {args.bind or default_bind()}: {exc}", file=sys.stderr)
        return 2
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    controller.start()
    elector = threading.Thread(target=election.run, args=(stopping,), name="fieldwarden-leader", daemon=True)
    elector.start()
    serving = threading.Thread(target=server.serve_forever, name="fieldwarden-probes", daemon=True)
    serving.start()
    host, port = server.server_address[:2]
    host = host.decode() if isinstance(host, bytes) else host
    print(f"fieldwarden: controller {election.identity}: pods {selector}, condition {condition_type}, "
          f"lease {namespace}/{args.lease_name}; probes and metrics on http://{host}:{port}", flush=True)
    stopping.wait()
    elector.join(args.renew_deadline)  # releases the lease when it leads
    controller.stop()
    server.shutdown()
    server.server_close()
    return 0


def default_bind() -> str:
    return CLUSTER_BIND if os.environ.get("KUBERNETES_SERVICE_HOST") else LOCAL_BIND


def health_server(bind: str, controller: Any, is_leader: Callable[[], bool]) -> ThreadingHTTPServer:
    """The probes and metrics endpoint (not started)."""
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--bind wants HOST:PORT, not {bind!r}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                alive = controller.alive()
                self._answer(200 if alive else 503, "ok\n" if alive else "controller threads stopped\n")
            elif self.path == "/readyz":
                synced = controller.synced()
                self._answer(200 if synced else 503, "ok\n" if synced else "pod list not read yet\n")
            elif self.path == "/metrics":
                watched, in_progress = controller.snapshot()
                data = controller.metrics.render(watched, in_progress, is_leader(), controller.synced())
                self._answer(200, data, "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._answer(404, "not found\n")

        def _answer(self, code: int, text: str | bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            data = text.encode() if isinstance(text, str) else text
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            logging.getLogger(__name__).debug("probe: " + format, *args)

    server = ThreadingHTTPServer((host.strip("[]"), int(port)), Handler)
    server.daemon_threads = True
    return server
