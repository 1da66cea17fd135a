"""A throwaway PKI for one test cluster, made with `cryptography` (ECDSA P-256: fast to generate).

`Pki.create(folder)` writes: `ca.crt`/`ca.key` (signs everything, and is the clients' and the API
server's trust root), `apiserver.*` (serving, 127.0.0.1 and the in-cluster names), `admin.*` (client,
group `system:masters`), `webhook.*` (serving `https://127.0.0.1` / `localhost` for local webhooks:
their `caBundle` is `ca.crt`), `sa.key`/`sa.pub` (service-account token signing, ES256).
`client(name, groups)` issues more client certificates (a user RBAC then restricts).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = datetime.timedelta(days=2)
APISERVER_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local")
APISERVER_IPS = ("127.0.0.1", "10.0.0.1")  # 10.0.0.1: the `kubernetes` Service in --service-cluster-ip-range


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, private: bool = False) -> Path:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)
    return path


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


class Authority:
    """The CA's certificate and key, and the certificates it issues into `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fieldwarden e2e CA")])
        self._cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.pair = Pair(_write(folder / "ca.crt", self._cert.public_bytes(serialization.Encoding.PEM)),
                         _write(folder / "ca.key", _key_pem(self._key), private=True))

    def issue(self, file_name: str, common_name: str, *, server: bool, dns: Sequence[str] = (),
              ips: Sequence[str] = (), organizations: Sequence[str] = ()) -> Pair:
        """A serving (`server`) or client certificate signed by the CA, written as `file_name`.crt/.key."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
                            + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(self._cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                           critical=False)
        )
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return Pair(_write(self.folder / f"{file_name}.crt", cert.public_bytes(serialization.Encoding.PEM)),
                    _write(self.folder / f"{file_name}.key", _key_pem(key), private=True))


@dataclass(frozen=True)
class Pki:
    authority: Authority
    apiserver: Pair
    admin: Pair
    webhook: Pair
    service_account_key: Path
    service_account_public: Path

    @classmethod
    def create(cls, folder: Path) -> Pki:
        authority = Authority(folder)
        sa_key = ec.generate_private_key(ec.SECP256R1())
        sa_public = sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
        return cls(
            authority,
            apiserver=authority.issue("apiserver", "kube-apiserver", server=True, dns=APISERVER_NAMES,
                                      ips=APISERVER_IPS),
            admin=authority.issue("admin", "e2e-admin", server=False, organizations=["system:masters"]),
            webhook=authority.issue("webhook", "127.0.0.1", server=True, dns=("localhost",), ips=("127.0.0.1",)),
            service_account_key=_write(folder / "sa.key", _key_pem(sa_key), private=True),
            service_account_public=_write(folder / "sa.pub", sa_public),
        )

    @property
    def ca(self) -> Pair:
        return self.authority.pair

    def client(self, file_name: str, user: str, groups: Sequence[str] = ()) -> Pair:
        """A client certificate for `user` in `groups` (x509 authentication: CN is the user, O the groups)."""
        return self.authority.issue(file_name, user, server=False, organizations=groups)
