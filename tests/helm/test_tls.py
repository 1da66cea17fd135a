"""The chart's TLS: the caBundle matches the serving certificate, and stays put across `helm upgrade`.

Without cert-manager Helm makes the CA and the serving certificate; an upgrade reads the
installed Secrets back with `lookup`. Offline rendering (`helm template`) cannot look
anything up, so the upgrade tests render against the Kubernetes API test fake
(tests/webhook/fake_apiserver.py) on 127.0.0.1, holding the Secrets the install rendered, as
Helm would find them in a cluster.
"""

from __future__ import annotations

import base64
import copy
import datetime
import ssl
from pathlib import Path
from typing import Iterator

import pytest
from cryptography import x509

from fieldwarden.webhook.server.certs import ensure_certificates
from fieldwarden.webhook.server.tls import ReloadingContext
from tests.helm.chart import NAMESPACE, Obj, of_kind, one, render, render_upgrade, secret_text, webhooks
from tests.webhook.fake_apiserver import SECRET, FakeApiServer
from tests.webhook.kubeconfig import kubeconfig_text

CA_SECRET = "fieldwarden-webhook-ca"
TLS_SECRET = "fieldwarden-webhook-tls"
# cert-manager's Secrets are named apart, so a release can switch modes without Helm and
# cert-manager claiming the same Secret.
CM_CA_SECRET = "fieldwarden-webhook-cert-ca"
CM_TLS_SECRET = "fieldwarden-webhook-cert"
SERVICE_NAME = f"fieldwarden-webhook.{NAMESPACE}.svc"  # what the API server dials, and checks the certificate for
DNS_NAMES = {SERVICE_NAME, f"{SERVICE_NAME}.cluster.local", f"fieldwarden-webhook.{NAMESPACE}", "fieldwarden-webhook"}


def ca_bundles(objects: list[Obj]) -> set[str]:
    return {hook["clientConfig"].get("caBundle", "") for _, hook in webhooks(objects)}


def certificate(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def handshake(cert_dir: Path, ca_pem: str, server_name: str) -> str:
    """A TLS handshake between the webhook's own server context and a client trusting `ca_pem`.

    Returns the negotiated version. Raises ssl.SSLCertVerificationError when the client
    refuses the certificate (wrong CA, wrong name).
    """
    server = ReloadingContext(cert_dir / "tls.crt", cert_dir / "tls.key").context()
    client = ssl.create_default_context(cadata=ca_pem)
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client_side = client.wrap_bio(c_in, c_out, server_hostname=server_name)
    server_side = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for name, side, out_bio, peer_in in (("client", client_side, c_out, s_in), ("server", server_side, s_out, c_in)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            peer_in.write(out_bio.read())
        if all(done.values()):
            return str(client_side.version())
    raise AssertionError("the handshake did not finish")


def mounted(tls_secret: Obj, folder: Path) -> Path:
    """The Secret as the webhook pod sees it at /tls (only the items the chart mounts)."""
    folder.mkdir()
    for key in ("tls.crt", "tls.key"):
        (folder / key).write_text(secret_text(tls_secret, key), encoding="utf-8")
    return folder


# --- the generated certificate -----------------------------------------------------------


def test_the_generated_ca_is_the_ca_bundle_and_signs_the_serving_certificate(tmp_path: Path) -> None:
    objects = render()
    ca_secret, tls_secret = one(objects, "Secret", CA_SECRET), one(objects, "Secret", TLS_SECRET)
    assert tls_secret["type"] == "kubernetes.io/tls" and ca_secret["type"] == "Opaque"
    ca_pem = secret_text(ca_secret, "ca.crt")
    assert secret_text(tls_secret, "ca.crt") == ca_pem
    assert ca_bundles(objects) == {base64.b64encode(ca_pem.encode()).decode()}
    assert len(list(webhooks(objects))) == 3

    ca, serving = certificate(ca_pem), certificate(secret_text(tls_secret, "tls.crt"))
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == DNS_NAMES
    usage = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in usage
    not_after = datetime.datetime.fromisoformat(tls_secret["metadata"]["annotations"]["fieldwarden.io/not-after"])
    assert abs(not_after - serving.not_valid_after_utc) < datetime.timedelta(minutes=5)

    # The webhook takes the mounted pair as it is (nothing generated, nothing written) and
    # serves it; a client that trusts only the caBundle accepts it for the Service's name.
    cert_dir = mounted(tls_secret, tmp_path / "tls")
    assert not ensure_certificates(cert_dir).generated
    assert handshake(cert_dir, ca_pem, SERVICE_NAME) in ("TLSv1.2", "TLSv1.3")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(cert_dir, ca_pem, "fieldwarden-webhook.elsewhere.svc")
    other_ca = secret_text(one(render(), "Secret", CA_SECRET), "ca.crt")  # a fresh install's CA
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(cert_dir, other_ca, SERVICE_NAME)


def test_the_webhook_mounts_the_serving_secret() -> None:
    objects = render()
    volumes = one(objects, "Deployment", "fieldwarden-webhook")["spec"]["template"]["spec"]["volumes"]
    assert {"secretName": TLS_SECRET}.items() <= next(v for v in volumes if v["name"] == "tls")["secret"].items()


# --- cert-manager ------------------------------------------------------------------------


def test_cert_manager_issues_the_certificate_and_injects_its_ca() -> None:
    objects = render({"tls": {"certManager": {"enabled": True}}})
    assert of_kind(objects, "Secret") == []  # cert-manager writes them
    certificates = {c["metadata"]["name"]: c for c in of_kind(objects, "Certificate")}
    issuers = {i["metadata"]["name"]: i for i in of_kind(objects, "Issuer")}
    serving, ca = certificates[CM_TLS_SECRET], certificates[CM_CA_SECRET]
    # selfSigned issuer -> CA certificate (its key kept across renewals) -> CA issuer -> serving certificate.
    assert ca["spec"]["isCA"] is True and ca["spec"]["privateKey"]["rotationPolicy"] == "Never"
    assert issuers[ca["spec"]["issuerRef"]["name"]]["spec"] == {"selfSigned": {}}
    assert issuers[serving["spec"]["issuerRef"]["name"]]["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
    assert serving["spec"]["secretName"] == CM_TLS_SECRET
    assert set(serving["spec"]["dnsNames"]) == DNS_NAMES and serving["spec"]["commonName"] == SERVICE_NAME
    assert "server auth" in serving["spec"]["usages"]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = one(objects, kind)["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{CM_TLS_SECRET}"}
    assert ca_bundles(objects) == {""}  # the CA injector fills it in
    volumes = one(objects, "Deployment", "fieldwarden-webhook")["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "tls")["secret"]["secretName"] == CM_TLS_SECRET


def test_cert_manager_with_an_existing_issuer() -> None:
    issuer = {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    objects = render({"tls": {"certManager": {"enabled": True, "issuerRef": issuer, "duration": "720h",
                                              "renewBefore": "240h"}}})
    assert of_kind(objects, "Issuer") == []
    (serving,) = of_kind(objects, "Certificate")
    assert serving["spec"]["issuerRef"] == issuer
    assert (serving["spec"]["duration"], serving["spec"]["renewBefore"]) == ("720h", "240h")


def test_switching_tls_modes_never_hands_one_secret_to_both_helm_and_cert_manager() -> None:
    helm_made = {s["metadata"]["name"] for s in of_kind(render(), "Secret")}
    cert_manager = render({"tls": {"certManager": {"enabled": True}}})
    issued = {c["spec"]["secretName"] for c in of_kind(cert_manager, "Certificate")}
    assert helm_made == {CA_SECRET, TLS_SECRET} and issued == {CM_CA_SECRET, CM_TLS_SECRET}


# --- helm upgrade ------------------------------------------------------------------------


@pytest.fixture
def installed() -> Iterator[tuple[FakeApiServer, list[Obj]]]:
    """A release installed with the default values: its Secrets are in the (fake) cluster."""
    objects = render()
    with FakeApiServer(kubelet=False) as api:
        for secret in of_kind(objects, "Secret"):
            api.apply(copy.deepcopy(secret))
        yield api, objects


def _secrets(objects: list[Obj]) -> tuple[Obj, Obj]:
    return one(objects, "Secret", CA_SECRET), one(objects, "Secret", TLS_SECRET)


def test_upgrade_keeps_the_ca_the_ca_bundle_and_the_serving_certificate(installed: tuple[FakeApiServer, list[Obj]]) -> None:
    api, before = installed
    after = render_upgrade({"webhook": {"replicas": 3}}, kubeconfig_text(api.url))
    assert _secrets(after) == _secrets(before)  # byte for byte: the upgrade changes no Secret
    assert ca_bundles(after) == ca_bundles(before)
    assert {f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}" for name in (CA_SECRET, TLS_SECRET)} <= {call.path for call in api.calls}
    # And again: stable over any number of upgrades.
    assert _secrets(render_upgrade(None, kubeconfig_text(api.url))) == _secrets(before)


def _reissued(before: list[Obj], after: list[Obj], tmp_path: Path) -> x509.Certificate:
    """Checks that `after` kept the CA but carries a new serving certificate that it signed."""
    (ca_before, tls_before), (ca_after, tls_after) = _secrets(before), _secrets(after)
    assert ca_after == ca_before and ca_bundles(after) == ca_bundles(before)
    assert tls_after["data"]["tls.crt"] != tls_before["data"]["tls.crt"]
    assert tls_after["data"]["tls.key"] != tls_before["data"]["tls.key"]
    new = certificate(secret_text(tls_after, "tls.crt"))
    new.verify_directly_issued_by(certificate(secret_text(ca_after, "ca.crt")))
    handshake(mounted(tls_after, tmp_path / "tls"), secret_text(ca_after, "ca.crt"),
              new.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
              .get_values_for_type(x509.DNSName)[0])
    return new


def test_upgrade_reissues_a_serving_certificate_near_expiry_from_the_same_ca(
        installed: tuple[FakeApiServer, list[Obj]], tmp_path: Path) -> None:
    api, before = installed
    soon = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    expiring = api.get(SECRET, NAMESPACE, TLS_SECRET)
    expiring["metadata"]["annotations"]["fieldwarden.io/not-after"] = soon
    api.apply(expiring)
    after = render_upgrade(None, kubeconfig_text(api.url))
    new = _reissued(before, after, tmp_path)
    assert new.not_valid_after_utc - datetime.datetime.now(datetime.timezone.utc) > datetime.timedelta(days=1800)


def test_upgrade_reissues_when_the_service_names_change(installed: tuple[FakeApiServer, list[Obj]], tmp_path: Path) -> None:
    api, before = installed
    after = render_upgrade({"clusterDomain": "corp.internal"}, kubeconfig_text(api.url))
    new = _reissued(before, after, tmp_path)
    names = new.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"{SERVICE_NAME}.corp.internal" in names.get_values_for_type(x509.DNSName)


def test_upgrade_reissues_a_certificate_another_ca_signed(installed: tuple[FakeApiServer, list[Obj]], tmp_path: Path) -> None:
    api, before = installed
    stranger = one(render(), "Secret", TLS_SECRET)  # another install's pair, with its own CA
    api.apply(copy.deepcopy(stranger))
    after = render_upgrade(None, kubeconfig_text(api.url))
    _reissued(before, after, tmp_path)


def test_a_deleted_ca_secret_makes_a_new_ca_and_a_matching_certificate(installed: tuple[FakeApiServer, list[Obj]],
                                                                        tmp_path: Path) -> None:
    api, before = installed
    api.delete("Secret", NAMESPACE, CA_SECRET)
    after = render_upgrade(None, kubeconfig_text(api.url))
    (ca_before, _), (ca_after, tls_after) = _secrets(before), _secrets(after)
    assert ca_after["data"]["ca.crt"] != ca_before["data"]["ca.crt"]
    assert ca_bundles(after) == {ca_after["data"]["ca.crt"]}
    certificate(secret_text(tls_after, "tls.crt")).verify_directly_issued_by(certificate(secret_text(ca_after, "ca.crt")))
    assert handshake(mounted(tls_after, tmp_path / "tls"), secret_text(ca_after, "ca.crt"), SERVICE_NAME)


def test_a_first_upgrade_over_an_empty_cluster_is_an_install(tmp_path: Path) -> None:
    with FakeApiServer(kubelet=False) as api:
        objects = render_upgrade(None, kubeconfig_text(api.url))
    ca_secret, tls_secret = _secrets(objects)
    assert ca_bundles(objects) == {ca_secret["data"]["ca.crt"]}
    assert handshake(mounted(tls_secret, tmp_path / "tls"), secret_text(ca_secret, "ca.crt"), SERVICE_NAME)
