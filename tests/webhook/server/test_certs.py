"""webhook/server/certs.py: the generated CA and serving certificate verify as a client would."""

from __future__ import annotations

import ipaddress
import os
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from fieldwarden.webhook.server import certs


def test_generates_a_ca_and_a_serving_certificate_for_the_names(tmp_path: Path) -> None:
    paths = certs.ensure_certificates(tmp_path / "tls", ["fieldwarden.fieldwarden.svc"])
    assert paths.generated and paths.ca == tmp_path / "tls" / "ca.crt"
    cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {"fieldwarden.fieldwarden.svc", "localhost"}
    assert set(names.get_values_for_type(x509.IPAddress)) == {ipaddress.ip_address("127.0.0.1"),
                                                              ipaddress.ip_address("::1")}
    assert os.stat(paths.key).st_mode & 0o077 == 0
    assert os.stat(tmp_path / "tls" / "ca.key").st_mode & 0o077 == 0
    # The pair loads, and the CA verifies it (as curl --cacert and the API server's caBundle do).
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(paths.cert, paths.key)
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(paths.ca.read_bytes()))


def test_existing_certificates_are_used_as_they_are(tmp_path: Path) -> None:
    first = certs.ensure_certificates(tmp_path)
    content = first.cert.read_bytes()
    again = certs.ensure_certificates(tmp_path, ["other.name"])
    assert not again.generated and again.cert.read_bytes() == content


def test_a_folder_without_ca_crt_is_fine(tmp_path: Path) -> None:
    certs.ensure_certificates(tmp_path)
    (tmp_path / "ca.crt").unlink()
    assert certs.ensure_certificates(tmp_path).ca is None


def test_half_a_pair_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("x")
    with pytest.raises(certs.CertError, match="has tls.crt but no tls.key"):
        certs.ensure_certificates(tmp_path)
