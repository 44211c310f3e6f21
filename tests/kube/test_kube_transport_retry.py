"""Which broken connections the client sends a request again on, against a real TLS server
on loopback: a handshake that breaks off is retried (no request was written, so a POST is
safe to repeat); a request whose answer never comes is not (it may have been processed);
a certificate that fails verification is not (it would fail the same way again)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from harness.k8s import pki
from harness.kube import Kube, KubeError


@dataclass
class FlakyServer:
    """Answers every request with an empty JSON object, except that the connections whose
    numbers (from 1) are in `drop_before_handshake` are closed unanswered as soon as they
    are accepted, and those in `drop_after_request` after the request was read."""

    pair: pki.KeyPair
    drop_before_handshake: set[int] = field(default_factory=set)
    drop_after_request: set[int] = field(default_factory=set)
    connections: int = 0
    requests: list[str] = field(default_factory=list)

    def serve(self, listener: socket.socket, tmp_path: Path) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener was closed: the test is over
                return
            self.connections += 1
            if self.connections in self.drop_before_handshake:
                conn.close()
                continue
            crt, key = self.pair.write(tmp_path, "server")  # the test may have changed it
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(crt, key)
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    self._answer(tls)
            except (ssl.SSLError, OSError):
                pass

    def _answer(self, tls: ssl.SSLSocket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = tls.recv(65536)
            if not chunk:
                return
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            body += tls.recv(65536)
        self.requests.append(head.split(b"\r\n")[0].decode())
        if self.connections in self.drop_after_request:
            return
        answer = json.dumps({"gitVersion": "v1.36.1"}).encode()
        tls.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(answer)}\r\n\r\n".encode()
            + answer
        )


@pytest.fixture
def ca() -> pki.Authority:
    return pki.Authority.create()


@pytest.fixture
def serve(tmp_path: Path, ca: pki.Authority) -> Iterator[tuple[FlakyServer, Kube]]:
    """A FlakyServer (configured by the test before its first request) and a client that
    trusts `ca`."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = FlakyServer(ca.issue("api", ips=["127.0.0.1"], server=True))
    kubeconfig = tmp_path / "kubeconfig"
    cluster = {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": ca.bundle_b64}
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    thread = threading.Thread(target=server.serve, args=(listener, tmp_path), daemon=True)
    thread.start()
    kube = Kube(kubeconfig, timeout=5)
    try:
        yield server, kube
    finally:
        kube.close()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone does not
        listener.close()
        thread.join(5)


def test_a_post_whose_handshake_broke_off_is_sent_again(
    serve: tuple[FlakyServer, Kube],
) -> None:
    """Seen in a make e2e run: `TLS: EOF occurred in violation of protocol` on a pod create
    failed the scenario, the API server alive."""
    server, kube = serve
    server.drop_before_handshake = {1, 2}
    kube.request("POST", "/api/v1/namespaces/n/pods", {"kind": "Pod"})
    assert server.connections == 3
    assert server.requests == ["POST /api/v1/namespaces/n/pods HTTP/1.1"]


def test_a_handshake_that_always_breaks_off_is_one_plain_line(
    serve: tuple[FlakyServer, Kube],
) -> None:
    server, kube = serve
    server.drop_before_handshake = {1, 2, 3, 4, 5}
    with pytest.raises(KubeError) as err:
        kube.server_version()
    assert str(err.value).startswith(f"cannot connect to {kube.host} (TLS: ")
    assert "HandshakeFailed" not in str(err.value)
    assert server.connections == 4  # the first try and three retries
    assert server.requests == []


def test_a_post_without_an_answer_is_not_sent_again(serve: tuple[FlakyServer, Kube]) -> None:
    """The server read the request: it may have created the pod, so only the caller may
    decide to try again."""
    server, kube = serve
    server.drop_after_request = {1}
    with pytest.raises(KubeError, match="cannot connect to"):
        kube.request("POST", "/api/v1/namespaces/n/pods", {"kind": "Pod"})
    assert server.requests == ["POST /api/v1/namespaces/n/pods HTTP/1.1"]
    assert server.connections == 1


def test_a_certificate_that_fails_verification_is_not_tried_again(
    serve: tuple[FlakyServer, Kube],
) -> None:
    server, kube = serve
    server.pair = pki.Authority.create().issue("api", ips=["127.0.0.1"], server=True)
    with pytest.raises(KubeError) as err:
        kube.server_version()
    assert "TLS: certificate verify failed" in str(err.value)
    assert server.connections == 1
