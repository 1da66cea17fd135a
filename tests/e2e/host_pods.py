"""The chart's webhook pod, run by the test where the API server calls the chart's Service.

The test clusters have no kubelet and no network for pods. tests/e2e/helm_release.py's cluster gives
Services ClusterIPs in 127.100.0.0/16, and its API server calls a webhook's `clientConfig.service` at
`https://<ClusterIP>:<port>`, checking the certificate for `<service>.<namespace>.svc`. Linux routes
all of 127/8 to the loopback interface, so `serve_webhook(...)` runs what the webhook pod would
(`fieldwarden serve` with the Deployment's arguments, the serving Secret written where the pod mounts
it, the ConfigMap's configuration, a token of the Deployment's ServiceAccount) on the Service's own
ClusterIP and port (`service_address`): the API server reaches it through the chart's Service, and no
traffic leaves loopback. The port is the chart's, 443: binding it needs root or CAP_NET_BIND_SERVICE
(`check_can_serve`).

`Node(cluster, namespace)`: tests/e2e/kubelet.py's stand-in (pods bound, Running and Ready, with
made-up IPs nothing dials, so Deployments roll out and the Service gets endpoints), which also
finishes the deletion of a terminating pod, as a kubelet does, so namespaces can be deleted.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

from tests.e2e.cluster import Cluster
from tests.e2e.conftest import unavailable
from tests.e2e.helm_release import SERVICE_RANGE
from tests.e2e.install import container_args, replace_options
from tests.e2e.kubectl import Kubectl
from tests.e2e.kubelet import NODE, Kubelet
from tests.e2e.processes import Process, wait_for
from tests.webhook.live import clean_environment

SERVICE_PORT = 443  # the chart's webhook Service port, which its webhook configurations name
Address = tuple[str, int]
Obj = dict[str, Any]


def check_can_serve() -> None:
    """Skip (fail under FIELDWARDEN_REQUIRE_E2E=1) unless this process can listen on a Service's port."""
    with socket.socket() as probe:
        try:
            probe.bind((str(SERVICE_RANGE[-2]), SERVICE_PORT))
        except OSError as error:
            unavailable(f"this test serves the chart's webhook on its Service's ClusterIP (in {SERVICE_RANGE}) and "
                        f"port {SERVICE_PORT}, which this process cannot bind ({error.strerror}): run it as root "
                        "or with CAP_NET_BIND_SERVICE")


def service_address(kubectl: Kubectl, namespace: str, release: str) -> Address:
    """The ClusterIP and port of the release's webhook Service: where the API server calls the webhook."""
    spec = kubectl.get("service", f"{release}-webhook", namespace)["spec"]
    address = spec["clusterIP"]
    assert ipaddress.IPv4Address(address) in SERVICE_RANGE, f"ClusterIP {address} is outside {SERVICE_RANGE}"
    assert [port["port"] for port in spec["ports"]] == [SERVICE_PORT], spec["ports"]
    return address, SERVICE_PORT


def register_node(cluster: Cluster) -> None:
    cluster.api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}},
                       exist_ok=True)


class Node(Kubelet):
    """The kubelet stand-in, which also finishes the deletion of a terminating pod, as a kubelet does."""

    def _sync(self, pod: Obj) -> None:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            self.cluster.api.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{meta['name']}",
                                     {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                      "preconditions": {"uid": meta["uid"]}})
            return
        super()._sync(pod)


def mount_secret(data: Obj, folder: Path, items: tuple[str, ...] = ("tls.crt", "tls.key")) -> Path:
    """A Secret's items as files, the way a pod's volume shows them (rewritten in place when called again)."""
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        staged = folder / f".{item}.new"
        staged.write_bytes(base64.b64decode(data[item]))
        staged.replace(folder / item)  # a new inode, as the kubelet's atomic writer gives
    return folder


def served_certificate(address: Address, ca: Path) -> bytes | None:
    """The DER certificate the webhook on `address` serves, verified against `ca` (None if it does not answer)."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # the API server checks the Service's name; this reads what is served
    try:
        with socket.create_connection(address, timeout=2) as raw:
            with context.wrap_socket(raw) as tls:
                return tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return None


def readyz(address: Address, ca: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    connection = http.client.HTTPSConnection(*address, context=context, timeout=2)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def serve_webhook(cluster: Cluster, kubectl: Kubectl, namespace: str, release: str, address: Address,
                  folder: Path) -> Process:
    """`fieldwarden serve` as the release's webhook pod runs it, on `address`; returns once /readyz answers."""
    folder.mkdir(parents=True, exist_ok=True)
    deployment = kubectl.get("deployment", f"{release}-webhook", namespace)
    config = kubectl.get("configmap", f"{release}-config", namespace)["data"]["config.yaml"]
    (folder / "config.yaml").write_text(config)
    secret = kubectl.get("secret", f"{release}-webhook-tls", namespace)["data"]
    tls = mount_secret(secret, folder / "tls")
    ca = folder / "ca.crt"
    ca.write_bytes(base64.b64decode(secret["ca.crt"]))
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    kubeconfig = cluster.write_kubeconfig(folder / "webhook.kubeconfig",
                                          token=cluster.service_account_token(namespace, account), namespace=namespace)
    host, port = address
    args = replace_options(container_args(deployment), {"--bind": f"{host}:{port}", "--cert-dir": str(tls),
                                                        "--config": str(folder / "config.yaml")})
    env = clean_environment(folder)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    process = Process(f"fieldwarden-serve-{release}", [sys.executable, "-m", "fieldwarden", *args,
                                                       f"--kubeconfig={kubeconfig}"],
                      folder / "webhook.log", env=env, cwd=folder).start()
    try:
        wait_for(lambda: readyz(address, ca), f"the webhook's /readyz on {host}:{port}", 60,
                 failed=lambda: None if process.running() else f"it exited:\n{process.tail()}")
    except BaseException:
        process.stop()
        raise
    return process
