"""PKI: certificates chain to the run's CA and carry what Go's TLS checks (IP SANs, EKUs)."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from harness.k8s import pki


def _cert(pair: pki.KeyPair) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pair.cert_pem)


def test_ca_is_self_signed_ca() -> None:
    ca = pki.Authority.create()
    cert = _cert(ca.pair)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    cert.verify_directly_issued_by(cert)
    assert base64.b64decode(ca.bundle_b64) == ca.pair.cert_pem


def test_server_cert_has_ip_san_and_server_auth() -> None:
    ca = pki.Authority.create()
    leaf = _cert(ca.issue("kueue-webhook", ips=["127.0.0.1"], dns=["localhost"], server=True))
    leaf.verify_directly_issued_by(_cert(ca.pair))
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    ekus = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(ekus) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_client_cert_carries_groups_as_organisation() -> None:
    ca = pki.Authority.create()
    leaf = _cert(ca.issue("kubernetes-admin", orgs=["system:masters"], client=True))
    orgs = leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    assert [o.value for o in orgs] == ["system:masters"]
    ekus = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(ekus) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_key_file_is_private(tmp_path: Path) -> None:
    crt, key = pki.Authority.create().pair.write(tmp_path, "ca")
    assert crt.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    assert key.stat().st_mode & 0o077 == 0


def _handshake(tmp_path: Path, served: pki.KeyPair, ca: pki.Authority) -> None:
    """Serve `served` on 127.0.0.1 and connect verifying against the CA by IP, as the API
    server does for a webhook URL https://127.0.0.1:PORT."""
    crt, key = served.write(tmp_path, "srv")
    cafile, _ = ca.pair.write(tmp_path, "ca")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(crt, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cafile=str(cafile))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            tls.sendall(b"x")
    finally:
        thread.join(5)
        listener.close()


def test_tls_handshake_by_ip_succeeds(tmp_path: Path) -> None:
    ca = pki.Authority.create()
    _handshake(tmp_path, ca.issue("w", ips=["127.0.0.1"], server=True), ca)


def test_tls_handshake_without_ip_san_fails(tmp_path: Path) -> None:
    ca = pki.Authority.create()
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(tmp_path, ca.issue("w", dns=["localhost"], server=True), ca)


def test_tls_handshake_with_foreign_ca_fails(tmp_path: Path) -> None:
    ca, other = pki.Authority.create(), pki.Authority.create()
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(tmp_path, other.issue("w", ips=["127.0.0.1"], server=True), ca)


def test_signing_key_pair_matches() -> None:
    from cryptography.hazmat.primitives import serialization

    pair = pki.signing_key()
    private = serialization.load_pem_private_key(pair.key_pem, None)
    public = serialization.load_pem_public_key(pair.cert_pem)
    assert private.public_key().public_numbers() == public.public_numbers()  # type: ignore[union-attr]
