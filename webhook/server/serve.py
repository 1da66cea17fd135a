"""`fieldwarden serve`: the admission webhook over HTTPS, served by gunicorn.

Everything that can be wrong is checked here, in the master process, before gunicorn
starts: the policy configuration (against the shipped JSON Schema), the certificate
folder (a CA and serving certificate are made when it has none), the inventory file.
Each gunicorn worker then builds the Flask app and starts the inventory after the fork;
the workers keep their metrics in files in one private folder made here (multiproc.py),
so that any worker's `/metrics` shows the whole pod's.

Which autoscaler inventory:
1. `--inventory FILE`: the HPAs / ScaledObjects / VPAs in that file;
2. else a cluster, when there is one to talk to (`--kubeconfig`, $KUBECONFIG,
   ~/.kube/config, or the in-cluster service account): list + watch;
3. else none: an empty inventory, said so at startup (autoscaler protection is off).

Bind address: `--bind`, else $FIELDWARDEN_BIND, else 0.0.0.0:8443 inside a pod (the
API server reaches it through a Service) and 127.0.0.1:8443 anywhere else.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from ...policies.config import ConfigError, Settings, load_settings
from ..inventory.sources import FileInventory, Inventory, InventoryError, StaticInventory
from . import multiproc

LOCAL_BIND = "127.0.0.1:8443"
CLUSTER_BIND = "0.0.0.0:8443"
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
# Debug and info log lines (an admitted request's) are written at most this late, in batches;
# warnings and errors at once (logs.JsonLinesHandler says why).
LOG_BATCH_SECONDS = 0.2


class ServeError(Exception):
    """A startup problem, worded for the person starting the server."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `fieldwarden serve`."""
    parser.add_argument("--bind", metavar="HOST:PORT",
                        help=f"address to listen on (default: {CLUSTER_BIND} in a pod, {LOCAL_BIND} elsewhere)")
    parser.add_argument("--cert-dir", metavar="DIR", type=Path,
                        help="folder with tls.crt and tls.key; when it has none, a CA (ca.crt) and a serving "
                             "certificate are generated into it (default: $XDG_STATE_HOME/fieldwarden/tls)")
    parser.add_argument("--dns-name", metavar="NAME", action="append", default=[],
                        help="extra name (or IP) for a generated certificate, e.g. fieldwarden.fieldwarden.svc "
                             "(repeatable; localhost and 127.0.0.1 are always in)")
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help="policy configuration (.fieldwarden.yaml or pyproject.toml)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--inventory", metavar="FILE", type=Path,
                        help="YAML/JSON file of HPA / ScaledObject / VPA manifests: the autoscalers, with no cluster")
    source.add_argument("--kubeconfig", metavar="FILE", type=Path,
                        help="watch the HPAs and VPAs of this cluster (default: $KUBECONFIG, ~/.kube/config, "
                             "or the in-cluster service account)")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    parser.add_argument("--workers", type=_positive, metavar="N", help="gunicorn worker processes (default 2)")
    parser.add_argument("--worker-connections", type=_positive, metavar="N",
                        help="open connections a worker holds at most (default 1000); more wait in the backlog")
    parser.add_argument("--tls-reload-seconds", type=float, metavar="S", default=None,
                        help="how often the certificate files are checked for rotation (default 5)")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default=None)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def run(args: argparse.Namespace) -> int:
    """Check everything, print where the server is, and serve until SIGTERM / SIGINT."""
    try:
        import cryptography  # noqa: F401
        import flask  # noqa: F401
        import gevent  # noqa: F401
        import gunicorn  # type: ignore[import-untyped]  # noqa: F401
    except ImportError as exc:
        print(f"fieldwarden: serve needs the webhook extra: pip install 'fieldwarden[webhook]' ({exc})",
              file=sys.stderr)
        return 2
    from .certs import CertError, ensure_certificates

    try:
        settings = load_settings(args.config)
        cert_dir = (args.cert_dir or default_cert_dir()).absolute()
        certs = ensure_certificates(cert_dir, args.dns_name)
        inventory = choose_inventory(args, settings)
        check_certificate(certs.cert, certs.key)
        check_worker()
    except (ConfigError, CertError, InventoryError, ServeError) as exc:
        print(f"fieldwarden: {exc}", file=sys.stderr)
        return 2
    try:  # (before anything imports prometheus_client: it reads the variable at import)
        metrics_folder = multiproc.create()
    except OSError as exc:
        print(f"fieldwarden: cannot make a folder for the workers' metrics: {exc}",
              file=sys.stderr)
        return 2
    bind = args.bind or default_bind()
    options: dict[str, Any] = {"bind": [bind], "certfile": str(certs.cert), "keyfile": str(certs.key)}
    for name in ("workers", "worker_connections"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.log_level:
        options["loglevel"] = args.log_level
    if args.tls_reload_seconds is not None:
        from . import gunicorn_conf

        gunicorn_conf.tls_reload_seconds = args.tls_reload_seconds

    if certs.generated:
        print(f"fieldwarden: generated a CA and a serving certificate in {cert_dir}")
    from ..inventory.notice import FirstSyncNotice, summary

    print(f"fieldwarden: autoscaler inventory: {summary(inventory)}")  # a cluster's: "listing...", then the count
    first_list = None if inventory.ready() else FirstSyncNotice(
        lambda text: print(f"fieldwarden: autoscaler inventory: {text}", flush=True))
    url = f"https://{_client_host(bind)}"
    ca = f"--cacert {certs.ca} " if certs.ca else ""

    def announce() -> None:  # in the first worker that boots (boot.py), before it accepts
        print(f"fieldwarden: serving {url} (POST /mutate, /validate; GET /healthz, /readyz, /metrics)")
        print(f"fieldwarden: try: curl {ca}{url}/healthz", flush=True)

    log_level = args.log_level or os.environ.get("FIELDWARDEN_LOG_LEVEL")

    def make_app() -> Any:
        import gc

        from . import logs
        from .app import create_app

        if log_level and log_level.lower() in ("debug", "info", "warning", "error", "critical"):
            logs.configure(level=log_level)  # the admission lines follow the level gunicorn's own lines use
        logs.configure(batch_seconds=LOG_BATCH_SECONDS)
        inventory.start()
        if first_list is not None:
            first_list.watch(inventory)
        app = create_app(settings, inventory)
        gc.freeze()  # the startup heap is permanent: full collections stop walking it per request
        return app

    try:
        return serve_wsgi(make_app, options, on_worker_exit=inventory.stop, announce=announce)
    finally:
        metrics_folder.remove()


def default_bind() -> str:
    """$FIELDWARDEN_BIND, else all interfaces in a pod (behind a Service), else loopback only."""
    return os.environ.get("FIELDWARDEN_BIND") or (CLUSTER_BIND if in_pod() else LOCAL_BIND)


def default_cert_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "fieldwarden" / "tls"


def in_pod() -> bool:
    """Running in a Kubernetes pod (the kubelet sets this variable in every container)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def in_cluster() -> bool:
    """Running in a pod with a service account (the kubernetes client's own test)."""
    return in_pod() and SERVICE_ACCOUNT_TOKEN.is_file()


def choose_inventory(args: argparse.Namespace, settings: Settings) -> Inventory:
    """The autoscaler inventory the options and the environment ask for (see the module doc)."""
    if args.inventory is not None:
        return FileInventory(args.inventory, settings.default_namespace)
    inventory = None
    kubeconfig = cluster_kubeconfig(args.kubeconfig)
    if kubeconfig is not None or in_cluster() or args.context is not None:
        inventory = _cluster_inventory(kubeconfig, args.context, settings)
    if inventory is None:
        print("fieldwarden: notice: no --inventory file and no cluster (kubeconfig or in-cluster service "
              "account): the autoscaler inventory is empty, so replicas and resources are not protected",
              file=sys.stderr)
        return StaticInventory((), settings.default_namespace, source="empty")
    return inventory


def cluster_kubeconfig(explicit: Path | None) -> str | None:
    """The kubeconfig to use: --kubeconfig, else $KUBECONFIG, else ~/.kube/config outside a pod.

    None when there is none: the in-cluster service account then, if any.
    """
    if explicit is not None:
        return str(explicit)
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]  # the client merges a path list itself
    default = Path.home() / ".kube" / "config"
    return str(default) if default.is_file() and not in_cluster() else None


def patch_ssl_for_the_workers() -> None:
    """Give `ssl` gevent's classes now, in the master, before the kubernetes client is imported.

    The workers run on gevent, which patches the standard library in each worker after the
    fork. urllib3 (under the kubernetes client), imported here in the master, takes
    `ssl.SSLContext` at import; with the unpatched class every HTTPS request to the API
    server would fail in the workers with RecursionError. The rest is left to the workers.
    """
    import gevent.monkey

    gevent.monkey.patch_ssl()


def _cluster_inventory(kubeconfig: str | None, context: str | None, settings: Settings) -> Inventory | None:
    patch_ssl_for_the_workers()
    try:
        from ..inventory.cluster import from_environment
    except ImportError as exc:
        raise ServeError(f"watching a cluster needs the webhook extra: pip install 'fieldwarden[webhook]' "
                         f"({exc}); or pass --inventory FILE") from None
    try:
        return from_environment(settings.default_namespace, kubeconfig=kubeconfig, context=context)
    except Exception as exc:  # the kubernetes client's configuration errors share no base class
        raise ServeError(f"cannot use the cluster of {kubeconfig or 'the in-cluster service account'}: "
                         f"{exc}") from None


def check_certificate(cert: Path, key: Path) -> None:
    """Refuse a certificate and key that TLS cannot load: no handshake could succeed."""
    import ssl

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise ServeError(f"the TLS certificate does not load: {_pair_problem(cert, key) or exc}") from None
    except OSError as exc:
        raise ServeError(f"cannot read {cert} or {key}: {exc.strerror or exc}") from None


def _pair_problem(cert: Path, key: Path) -> str | None:
    """Which file of a pair that TLS refused is wrong, and how (None: not found out)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        certificate = x509.load_pem_x509_certificates(cert.read_bytes())[0]
    except (ValueError, IndexError):
        return f"{cert} holds no PEM certificate"
    try:
        private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    except (ValueError, TypeError):
        return f"{key} holds no unencrypted PEM private key"
    if private.public_key() != certificate.public_key():
        return f"{key} is not the private key of the certificate in {cert}"
    return None


def check_worker() -> None:
    """Load gunicorn's worker class now, as its master would: a package missing from the
    install is said before gunicorn starts, not by a worker that cannot boot."""
    try:
        from . import worker  # noqa: F401
    except ImportError as exc:
        raise ServeError(f"the webhook's gunicorn worker cannot be loaded: {exc}. This install is "
                         f"incomplete: pip install 'fieldwarden[webhook]' into a fresh virtualenv") from None


def _client_host(bind: str) -> str:
    host, _, port = bind.rpartition(":")
    if host in ("0.0.0.0", "", "[::]", "::"):
        host = "localhost"
    return f"{host}:{port}"


def serve_wsgi(make_app: Callable[[], Any], options: Mapping[str, Any],
               on_worker_exit: Callable[[], None] | None = None,
               announce: Callable[[], None] = lambda: None) -> int:
    """Run gunicorn with webhook/server/gunicorn_conf.py's settings, `options` laid over them.

    `make_app` runs in each worker after the fork; `announce` in the first worker that boots,
    before it accepts a connection. Returns gunicorn's exit status: 0 after a graceful
    SIGTERM / SIGINT shutdown; not 0, said why on stderr, when a worker could not boot.
    """
    from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]
    from gunicorn.errors import HaltServer  # type: ignore[import-untyped]

    from . import gunicorn_conf
    from .boot import BootReport

    settings = {**gunicorn_conf.settings(), **options}
    _raise_open_file_limit(int(settings["worker_connections"]))

    report = BootReport(announce)

    class Server(BaseApplication):  # type: ignore[misc]
        boot_report = report  # (the workers reach it as worker.app.boot_report)

        def load_config(self) -> None:
            for name, value in settings.items():
                if name in self.cfg.settings and value is not None:  # older gunicorns lack some
                    self.cfg.set(name, value)

        def load(self) -> Any:
            return make_app()

        def on_worker_exit(self) -> None:
            if on_worker_exit is not None:
                on_worker_exit()

    master = os.getpid()
    try:
        Server().run()
    except SystemExit as exc:
        if os.getpid() != master:
            raise  # a worker leaving through the same stack: its exit is gunicorn's business
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except HaltServer as exc:  # a second worker failed to boot while gunicorn halted for the first
        code = int(exc.exit_status)
    else:
        code = 0
    failure = boot_failure(code, report.announced(), report.reasons())
    report.close()
    if failure:
        print(f"fieldwarden: {failure}", file=sys.stderr, flush=True)
    return code


def boot_failure(code: int, announced: bool, reasons: list[str]) -> str | None:
    """What to say when gunicorn stopped with status `code`, None when it stopped as asked."""
    if code == 0:
        return None
    why = "; ".join(reasons)
    if any(reason.startswith(("ModuleNotFoundError", "ImportError")) for reason in reasons):
        why += " (this install is incomplete: pip install 'fieldwarden[webhook]' into a fresh virtualenv)"
    if not announced:
        if why:
            return f"the webhook did not start: no worker could boot: {why}"
        return f"the webhook did not start (gunicorn exit status {code}): see gunicorn's messages above"
    if why:
        return f"the webhook stopped: a worker could not boot: {why}"
    return f"the webhook stopped (gunicorn exit status {code}): see gunicorn's messages above"


def _raise_open_file_limit(connections: int) -> None:
    """Lift the soft limit on open files towards the hard one, so a worker can hold its
    `worker_connections` (some systems still default to 1,024 descriptors a process)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 256  # its listening socket, TLS files, the inventory's watches, logs
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    except (ValueError, OSError):
        pass  # the limit stays; past it, accept() fails and gunicorn retries
