"""Self-signed TLS for running the webhook without a certificate manager.

`ensure_certificates(folder, dns_names)` uses `tls.crt` / `tls.key` when the folder has
them (a mounted Kubernetes TLS Secret, cert-manager's layout); otherwise it makes a CA
(`ca.crt`, `ca.key`) and a serving certificate signed by it for localhost, 127.0.0.1,
::1 and the given DNS names. The API server's `caBundle` (and curl's `--cacert`) is
`ca.crt`. Keys are ECDSA P-256: the handshake costs a fraction of RSA's.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path
from typing import Iterable, NamedTuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
CA_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
CA_DAYS = 3650
SERVING_DAYS = 365


class CertError(Exception):
    """A certificate folder that cannot be used as it is."""


class CertPaths(NamedTuple):
    cert: Path
    key: Path
    ca: Path | None  # None: the folder brought its own certificate and no ca.crt
    generated: bool


def ensure_certificates(folder: str | Path, dns_names: Iterable[str] = ()) -> CertPaths:
    """The serving certificate in `folder`, generated (with its CA) when there is none."""
    folder = Path(folder)
    cert, key, ca = folder / CERT_FILE, folder / KEY_FILE, folder / CA_FILE
    if cert.exists() or key.exists():
        if not (cert.is_file() and key.is_file()):
            missing = key if cert.exists() else cert
            raise CertError(f"{folder}: has {cert.name if cert.exists() else key.name} but no {missing.name}")
        return CertPaths(cert, key, ca if ca.is_file() else None, False)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CertError(f"{folder}: cannot create the folder: {exc.strerror or exc}") from None
    ca_cert, ca_key = make_ca()
    write_pem(folder / CA_KEY_FILE, key_pem(ca_key), private=True)
    write_pem(ca, cert_pem(ca_cert))
    serving_cert, serving_key = issue_serving_certificate(ca_cert, ca_key, dns_names)
    write_pair(folder, serving_cert, serving_key)
    return CertPaths(cert, key, ca, True)


def make_ca(common_name: str = "fieldwarden webhook CA") -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new self-signed CA certificate and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def issue_serving_certificate(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    dns_names: Iterable[str] = (),
    days: int = SERVING_DAYS,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A server certificate for the local names plus `dns_names` (names or IP addresses)."""
    key = ec.generate_private_key(ec.SECP256R1())
    names = list(dict.fromkeys([*dns_names, *LOCAL_NAMES]))
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def load_ca(folder: str | Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The CA that `ensure_certificates` wrote into `folder` (to issue a new serving certificate)."""
    folder = Path(folder)
    cert = x509.load_pem_x509_certificate((folder / CA_FILE).read_bytes())
    key = serialization.load_pem_private_key((folder / CA_KEY_FILE).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertError(f"{folder / CA_KEY_FILE}: not an EC key")
    return cert, key


def write_pair(folder: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    """Replace tls.key then tls.crt, each atomically (readers never see half a file)."""
    write_pem(folder / KEY_FILE, key_pem(key), private=True)
    write_pem(folder / CERT_FILE, cert_pem(cert))


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_pem(path: Path, data: bytes, private: bool = False) -> None:
    """Write through a temporary file and rename; keys are readable by the owner only."""
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
    os.replace(temporary, path)


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)
