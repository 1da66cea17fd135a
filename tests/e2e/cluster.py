"""A test cluster: etcd + kube-apiserver (+ kube-controller-manager) on free 127.0.0.1 ports.

    cluster = Cluster(folder, find_assets(), ClusterOptions(controller_manager=True)).start()
    cluster.kubeconfig          # admin (group system:masters), context namespace `default`
    cluster.api.get("/api/v1/namespaces/default")
    cluster.restart_apiserver() # same ports, same etcd data
    cluster.compact_etcd()
    cluster.stop()

Everything lives in `folder`: `pki/` (pki.py), `etcd/` (the data), `kubeconfig`, and one log per
component (`etcd.log`, `kube-apiserver.log`, `kube-controller-manager.log`); a start that fails raises
`ClusterError` with the end of each log. There is no kubelet and no scheduler: pods stay Pending.
Without kube-controller-manager nothing creates ServiceAccounts (`ensure_namespace` does), deleted
namespaces stay Terminating and Deployments get no ReplicaSets.

The flags are those a kube-apiserver needs to serve on loopback with x509 clients, RBAC and
service-account tokens (see `apiserver_argv`); the alpha MutatingAdmissionPolicy API (v1alpha1 in
Kubernetes 1.32) is an option.
"""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from tests.e2e.assets import Assets
from tests.e2e.pki import Pair, Pki
from tests.e2e.processes import Process, wait_for

SERVICE_CIDR = "10.0.0.0/24"
ISSUER = "https://kubernetes.default.svc.cluster.local"
START_ATTEMPTS = 3  # another process may take a chosen free port before the component binds it


class ClusterError(Exception):
    """The cluster did not start (the message carries the end of each component's log)."""


@dataclass(frozen=True)
class ClusterOptions:
    controller_manager: bool = False  # ReplicaSets, namespace deletion, GC, ServiceAccounts, HPA controller...
    mutating_admission_policy: bool = False  # admissionregistration.k8s.io/v1alpha1 + its feature gate
    apiserver_flags: tuple[str, ...] = ()  # more kube-apiserver flags
    name: str = ""  # options that differ only by name start apart: a cluster one test module has to itself


@dataclass
class Response:
    status: int
    body: Any  # the decoded JSON (a Status on errors), or the text when it is not JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class Api:
    """A small HTTPS client for the API server (one connection per request: restarts cannot strand it)."""

    url: str
    ca: Path
    client: Pair | None = None
    token: str | None = None
    _context: ssl.SSLContext = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._context = ssl.create_default_context(cafile=str(self.ca))
        if self.client is not None:
            self._context.load_cert_chain(str(self.client.cert), str(self.client.key))

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, str] | None = None,
                content_type: str = "application/json", timeout: float = 10.0) -> Response:
        parsed = urllib.parse.urlsplit(self.url)
        connection = http.client.HTTPSConnection(parsed.hostname or "127.0.0.1", parsed.port, context=self._context,
                                                 timeout=timeout)
        headers = {"Accept": "application/json", "User-Agent": "fieldwarden-e2e"}
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        try:
            connection.request(method, path, body=data, headers=headers)
            reply = connection.getresponse()
            raw = reply.read()
        finally:
            connection.close()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        return Response(reply.status, decoded)

    def get(self, path: str, **query: str) -> Any:
        """The object at `path`; an AssertionError naming the Status on anything but 200."""
        response = self.request("GET", path, query=query or None)
        assert response.status == 200, f"GET {path}: {response.status} {response.body}"
        return response.body

    def create(self, path: str, obj: Mapping[str, Any], exist_ok: bool = False) -> Any:
        response = self.request("POST", path, obj)
        if exist_ok and response.status == 409:
            return None
        assert response.ok, f"POST {path}: {response.status} {response.body}"
        return response.body

    def reachable(self, path: str = "/readyz") -> bool:
        try:
            return self.request("GET", path, timeout=2).status == 200
        except (OSError, http.client.HTTPException):
            return False


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 right now (all held open while choosing)."""
    sockets = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            sockets.append(probe)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for probe in sockets:
            probe.close()


def kubeconfig_text(url: str, ca: Path, *, client: Pair | None = None, token: str | None = None,
                    namespace: str = "default", user: str = "e2e") -> str:
    if client is not None:
        credentials = {"client-certificate": str(client.cert), "client-key": str(client.key)}
    else:
        assert token is not None, "a client certificate or a token"
        credentials = {"token": token}
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user, "namespace": namespace}}],
    }
    return json.dumps(config, indent=1)  # JSON is YAML: every client reads it


class Cluster:
    def __init__(self, folder: Path, assets: Assets, options: ClusterOptions = ClusterOptions()) -> None:
        if options.controller_manager and assets.controller_manager is None:
            raise ClusterError(f"kube-controller-manager was asked for, but {assets.source} has none")
        self.folder = folder
        self.assets = assets
        self.options = options
        self.pki: Pki | None = None
        self.etcd_port = self.peer_port = self.port = 0
        self.etcd: Process | None = None
        self.apiserver: Process | None = None
        self.controller_manager: Process | None = None

    # -- what the tests use --------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def ca(self) -> Path:
        return self._pki.ca.cert

    @property
    def ca_bundle(self) -> str:
        """base64 of the CA: the `caBundle` of a webhook serving `webhook_cert`."""
        return base64.b64encode(self.ca.read_bytes()).decode()

    @property
    def webhook_cert(self) -> Path:
        """A serving certificate for https://127.0.0.1 (and localhost), signed by `ca`."""
        return self._pki.webhook.cert

    @property
    def webhook_key(self) -> Path:
        return self._pki.webhook.key

    @property
    def api(self) -> Api:
        """The API as the admin (system:masters)."""
        return Api(self.url, self.ca, client=self._pki.admin)

    @property
    def _pki(self) -> Pki:
        assert self.pki is not None, "the cluster has not been started"
        return self.pki

    def processes(self) -> list[Process]:
        return [p for p in (self.etcd, self.apiserver, self.controller_manager) if p is not None]

    def logs(self, lines: int = 25) -> str:
        """The end of each component's log, for failure reports."""
        parts = []
        for process in self.processes():
            shown = min(lines, 8) if process is self.etcd else lines  # etcd's lines are long and seldom the story
            parts.append(f"----- {process.name} ({process.log}), last {shown} lines:\n{process.tail(shown)}")
        return "\n".join(parts)

    def write_kubeconfig(self, path: Path, *, client: Pair | None = None, token: str | None = None,
                         namespace: str = "default") -> Path:
        """A kubeconfig for this cluster as another user (a client certificate or a bearer token)."""
        path.write_text(kubeconfig_text(self.url, self.ca, client=client, token=token, namespace=namespace))
        return path

    def service_account_token(self, namespace: str, name: str, seconds: int = 7200) -> str:
        """A bound token for ServiceAccount `namespace/name` (the TokenRequest API, as `kubectl create token`)."""
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": seconds}}
        created = self.api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", request)
        return str(created["status"]["token"])

    def ensure_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Namespace `name` with its ServiceAccount `default` (pods are refused without one)."""
        api = self.api
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": name, "labels": dict(labels or {})}}, exist_ok=True)
        api.create(f"/api/v1/namespaces/{name}/serviceaccounts",
                   {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, exist_ok=True)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> Cluster:
        """etcd, then kube-apiserver until /readyz, then kube-controller-manager (not waited for)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.pki is None:
            self.pki = Pki.create(self.folder / "pki")
        for attempt in range(START_ATTEMPTS):
            try:
                self._start_once(timeout)
                return self
            except ClusterError as error:
                report = f"{error}\n{self.logs()}"
                port_taken = "address already in use" in report
                self.stop()
                if not port_taken or attempt == START_ATTEMPTS - 1:
                    raise ClusterError(report) from None
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> None:
        self.etcd_port, self.peer_port, self.port = free_ports(3)
        self.kubeconfig.write_text(kubeconfig_text(self.url, self.ca, client=self._pki.admin))
        shutil.rmtree(self.folder / "etcd", ignore_errors=True)  # a fresh store on every start
        self._start_etcd(timeout)
        self._start_apiserver(timeout)
        # Nothing else creates it without the controller manager; with it, this only wins a race.
        assert self.apiserver is not None
        self._wait(self.apiserver, self._create_default_service_account, "ServiceAccount default/default", timeout)
        if self.options.controller_manager:
            self.controller_manager = Process("kube-controller-manager", self.controller_manager_argv(),
                                              self.folder / "kube-controller-manager.log").start()

    def _create_default_service_account(self) -> bool:
        try:
            response = self.api.request("POST", "/api/v1/namespaces/default/serviceaccounts",
                                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        except (OSError, http.client.HTTPException):
            return False
        return response.ok or response.status == 409  # 404 while the default namespace is being made

    def _dead(self) -> str | None:
        for process in self.processes():
            if not process.running():
                return f"{process.name} exited with status {process.returncode}"
        return None

    def _start_etcd(self, timeout: float) -> None:
        data = self.folder / "etcd"
        peer = f"http://127.0.0.1:{self.peer_port}"
        self.etcd = Process("etcd", [
            str(self.assets.etcd), "--name=e2e", f"--data-dir={data}",
            f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=e2e={peer}", "--initial-cluster-state=new", "--logger=zap", "--log-outputs=stderr",
        ], self.folder / "etcd.log").start()
        self._wait(self.etcd, self._etcd_healthy, "etcd /health", timeout)

    def _etcd_healthy(self) -> bool:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=2)
            try:
                connection.request("GET", "/health")
                return bool(json.loads(connection.getresponse().read()).get("health") == "true")
            finally:
                connection.close()
        except (OSError, ValueError, http.client.HTTPException):
            return False

    def apiserver_argv(self) -> list[str]:
        pki = self._pki
        argv = [
            str(self.assets.apiserver),
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.port}",
            f"--etcd-servers={self.etcd_url}",
            f"--tls-cert-file={pki.apiserver.cert}", f"--tls-private-key-file={pki.apiserver.key}",
            f"--client-ca-file={pki.ca.cert}", f"--cert-dir={self.folder / 'apiserver-certs'}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={ISSUER}", f"--service-account-key-file={pki.service_account_public}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--endpoint-reconciler-type=none",  # no kubelet, no endpoints for the `kubernetes` Service
            "--allow-privileged=true", "--profiling=false",
        ]
        if self.options.mutating_admission_policy:
            argv += ["--feature-gates=MutatingAdmissionPolicy=true",
                     "--runtime-config=admissionregistration.k8s.io/v1alpha1=true"]
        return argv + list(self.options.apiserver_flags)

    def controller_manager_argv(self) -> list[str]:
        assert self.assets.controller_manager is not None
        pki = self._pki
        return [
            str(self.assets.controller_manager), f"--kubeconfig={self.kubeconfig}",
            "--secure-port=0",  # no health endpoint: nothing here needs one
            "--leader-elect=false", "--controllers=*", "--use-service-account-credentials=false",
            f"--service-account-private-key-file={pki.service_account_key}", f"--root-ca-file={pki.ca.cert}",
            f"--cluster-signing-cert-file={pki.ca.cert}", f"--cluster-signing-key-file={pki.ca.key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--profiling=false",
        ]

    def _start_apiserver(self, timeout: float) -> None:
        self.apiserver = Process("kube-apiserver", self.apiserver_argv(), self.folder / "kube-apiserver.log").start()
        self._wait(self.apiserver, self.api.reachable, f"{self.url}/readyz", timeout)

    def _wait(self, process: Process, check: Callable[[], bool], what: str, timeout: float) -> None:
        try:
            wait_for(check, what, timeout, interval=0.05, failed=self._dead)
        except AssertionError as error:
            raise ClusterError(f"{process.name}: {error}") from None

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (etcd and its data stay); `start_apiserver` brings it back."""
        if self.apiserver is not None:
            self.apiserver.stop()

    def start_apiserver(self, timeout: float = 60.0) -> float:
        """Start kube-apiserver again on the same port with the same etcd; seconds until /readyz."""
        began = time.monotonic()
        self._start_apiserver(timeout)
        return time.monotonic() - began

    def restart_apiserver(self, timeout: float = 60.0) -> float:
        """SIGTERM kube-apiserver and start it again on the same port and etcd; seconds until /readyz."""
        self.stop_apiserver()
        return self.start_apiserver(timeout)

    def etcd_call(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST to etcd's JSON gateway (`/v3/kv/range`, `/v3/kv/compaction`, ...)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        try:
            connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
            reply = connection.getresponse()
            data = reply.read()
        finally:
            connection.close()
        assert reply.status == 200, f"etcd {path}: {reply.status} {data!r}"
        return json.loads(data)

    def etcd_revision(self) -> int:
        key = base64.b64encode(b"/registry/").decode()
        return int(self.etcd_call("/v3/kv/range", {"key": key, "count_only": True})["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (watches from older resourceVersions get 410 Gone)."""
        revision = self.etcd_revision()
        self.etcd_call("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def stop(self) -> None:
        """Stop kube-controller-manager, kube-apiserver, then etcd (each SIGTERM, then SIGKILL)."""
        for process in (self.controller_manager, self.apiserver, self.etcd):
            if process is not None:
                process.stop()
