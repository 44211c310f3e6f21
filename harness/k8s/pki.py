"""Per-run certificates: a throwaway CA, serving certs with IP SANs, client certs.

The API server reaches Kueue's webhooks at https://127.0.0.1:PORT, and Go checks IP SANs
(never the CN), so every serving cert carries IP 127.0.0.1. ECDSA P-256 keys keep
generation instant.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=30)
BACKDATE = dt.timedelta(hours=1)  # tolerate small clock differences between processes


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str, orgs: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM private key."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Write `<stem>.crt` and `<stem>.key` (key mode 0600); returns both paths."""
        directory.mkdir(parents=True, exist_ok=True)
        crt, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        crt.write_bytes(self.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(self.key_pem)
        return crt, key


class Authority:
    """A self-signed CA that issues the run's serving and client certificates."""

    def __init__(self, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> None:
        self._key = key
        self._cert = cert

    @classmethod
    def create(cls, common_name: str = "kueue-tas-harness-ca") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        name = _name(common_name)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    @property
    def pair(self) -> KeyPair:
        return KeyPair(self._cert.public_bytes(serialization.Encoding.PEM), _key_pem(self._key))

    @property
    def bundle_b64(self) -> str:
        """The CA certificate as base64 PEM, the form `caBundle` fields take."""
        return base64.b64encode(self.pair.cert_pem).decode()

    def issue(
        self,
        common_name: str,
        *,
        ips: Sequence[str] = (),
        dns: Sequence[str] = (),
        orgs: Sequence[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> KeyPair:
        """A leaf certificate signed by this CA with the given SANs and key usages."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, orgs))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), False
            )
        )
        if usages:
            builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        sans += [x509.DNSName(d) for d in dns]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def signing_key() -> KeyPair:
    """Service-account token signing key: private key PEM plus its public key PEM
    (in `cert_pem`, which the API server's --service-account-key-file accepts)."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(public, _key_pem(key))


FRONT_PROXY_CLIENT = "front-proxy-client"
"""The name the API server's aggregation layer presents to extension servers (kubeadm's
name); --requestheader-allowed-names lists it, so no other client cert may set X-Remote-*."""


def front_proxy() -> tuple[Authority, KeyPair]:
    """The aggregation layer's own CA and client certificate. A separate CA (as kubeadm
    keeps one): an extension server such as Kueue's visibility server trusts the identity
    headers of a request only when its client cert chains to --requestheader-client-ca-file,
    so an admin's ordinary client cert must not chain there."""
    ca = Authority.create("kueue-tas-harness-front-proxy-ca")
    return ca, ca.issue(FRONT_PROXY_CLIENT, client=True)
