"""A node for the chart's pods on this host: the API server reaches their Service here.

The test clusters have no kubelet and no network for pods. `Node(cluster, namespace,
pod_ip=host_address())` is tests/e2e/kubelet.py's stand-in giving every pod this host's own address,
so the endpoints controller puts that address behind the pods' Services, and an API server run with
endpoint routing (`--enable-aggregator-routing`, tests/e2e/helm_release.py's cluster) calls a webhook
served here for the chart's Service, checking its certificate for the Service's name. It also
finishes the deletion of a terminating pod, as a kubelet does, so namespaces can be deleted.

`serve_webhook(...)`: what the webhook pod would run, on that address: `fieldwarden serve` with the
Deployment's arguments, the serving Secret written where the pod mounts it, the ConfigMap's
configuration and a token of the Deployment's ServiceAccount.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

from tests.e2e.cluster import Cluster
from tests.e2e.install import container_args, replace_options
from tests.e2e.kubectl import Kubectl
from tests.e2e.kubelet import NODE, Kubelet
from tests.e2e.processes import Process, wait_for
from tests.webhook.live import clean_environment

WEBHOOK_PORT = 8443  # the chart's containerPort: the Service's endpoints name it
Obj = dict[str, Any]


def host_address() -> str | None:
    """This host's non-loopback IPv4 address (Endpoints may not hold a loopback one), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


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


def served_certificate(address: str, ca: Path) -> bytes | None:
    """The DER certificate the webhook on `address` serves, verified against `ca` (None if it does not answer)."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # the API server checks the Service's name; this reads what is served
    try:
        with socket.create_connection((address, WEBHOOK_PORT), timeout=2) as raw:
            with context.wrap_socket(raw) as tls:
                return tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return None


def readyz(address: str, ca: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    connection = http.client.HTTPSConnection(address, WEBHOOK_PORT, context=context, timeout=2)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def serve_webhook(cluster: Cluster, kubectl: Kubectl, namespace: str, release: str, address: str,
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
    args = replace_options(container_args(deployment), {"--bind": f"{address}:{WEBHOOK_PORT}", "--cert-dir": str(tls),
                                                        "--config": str(folder / "config.yaml")})
    env = clean_environment(folder)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    process = Process(f"fieldwarden-serve-{release}", [sys.executable, "-m", "fieldwarden", *args,
                                                       f"--kubeconfig={kubeconfig}"],
                      folder / "webhook.log", env=env, cwd=folder).start()
    try:
        wait_for(lambda: readyz(address, ca), f"the webhook's /readyz on {address}:{WEBHOOK_PORT}", 60,
                 failed=lambda: None if process.running() else f"it exited:\n{process.tail()}")
    except BaseException:
        process.stop()
        raise
    return process
