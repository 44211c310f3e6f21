"""Real kubeconfig credentials against a real API server (the local provider's etcd and
kube-apiserver flags, plus a static token file): who the server says we are
(SelfSubjectReview) proves which credential was sent."""

from __future__ import annotations

import base64
import select
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_auth import calls, credential, exec_user, plugin  # tests/ is on sys.path

from harness.kube import Kube, KubeError
from harness.kube.auth import CredentialError

pytestmark = pytest.mark.cluster

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


@pytest.fixture(scope="module")
def api(apiserver_only: Callable[..., AbstractContextManager[Any]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:  # fmt: skip
    """One API server for the module, accepting the TOKENS (users in system:masters)."""
    tokens = tmp_path_factory.mktemp("tokens") / "tokens.csv"
    tokens.write_text("".join(f'{t},{u},uid-{u},"system:masters"\n' for t, u in TOKENS.items()))
    with apiserver_only([f"--token-auth-file={tokens}"]) as server:
        yield server


def kubeconfig(tmp_path: Path, api: Any, user: dict[str, Any], **cluster: Any) -> Path:
    ca = (api.layout.pki / "ca.crt").read_bytes()
    body = {"server": api.server, "certificate-authority-data": base64.b64encode(ca).decode()}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {**body, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def whoami(kube: Kube) -> str:
    review = kube.create({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


def test_a_kubeconfig_token_authenticates(tmp_path: Path, api: Any) -> None:
    """The reported bug: a kubeconfig with a token sent no Authorization header."""
    assert whoami(Kube(kubeconfig(tmp_path, api, {"token": "tok-alice"}))) == "alice"


def test_a_token_file_authenticates(tmp_path: Path, api: Any) -> None:
    (tmp_path / "token").write_text("tok-bob\n")
    assert whoami(Kube(kubeconfig(tmp_path, api, {"tokenFile": "token"}))) == "bob"


def test_a_refused_token_says_whose_credentials(tmp_path: Path, api: Any) -> None:
    kube = Kube(kubeconfig(tmp_path, api, {"token": "tok-nobody"}))
    with pytest.raises(KubeError) as err:
        kube.server_version()
    assert err.value.status == 401
    assert "did not accept the credentials of user 'u', context 'x'" in str(err.value)


def test_inline_client_certificate(tmp_path: Path, api: Any) -> None:
    pki = api.layout.pki
    user = {k: base64.b64encode((pki / f).read_bytes()).decode() for k, f in
            (("client-certificate-data", "admin.crt"), ("client-key-data", "admin.key"))}  # fmt: skip
    assert whoami(Kube(kubeconfig(tmp_path, api, user))) == "kubernetes-admin"


def test_exec_plugin_token_refreshed_when_expired(tmp_path: Path, api: Any) -> None:
    """Each expired answer makes the next request run the plugin again; a lasting one is
    kept (the first whoami sends two requests: API discovery, then the review)."""
    expired = credential(token="tok-alice", expirationTimestamp="2000-01-01T00:00:00Z")
    script = plugin(tmp_path, [expired, expired, credential(token="tok-bob")])
    kube = Kube(kubeconfig(tmp_path, api, exec_user(script)))
    assert [whoami(kube) for _ in range(3)] == ["alice", "bob", "bob"]
    assert len(calls(tmp_path)) == 3


def test_exec_plugin_runs_again_when_the_server_says_401(tmp_path: Path, api: Any) -> None:
    script = plugin(tmp_path, [credential(token="tok-revoked"), credential(token="tok-alice")])
    kube = Kube(kubeconfig(tmp_path, api, exec_user(script, provideClusterInfo=True)))
    assert whoami(kube) == "alice"
    seen = calls(tmp_path)
    assert len(seen) == 2 and seen[0]["spec"]["cluster"]["server"] == api.server


def test_exec_plugin_client_certificate(tmp_path: Path, api: Any) -> None:
    pair = api.ca.issue("exec-cert-user", orgs=["system:masters"], client=True)
    script = plugin(tmp_path, [credential(clientCertificateData=pair.cert_pem.decode(),
                                          clientKeyData=pair.key_pem.decode())])  # fmt: skip
    assert whoami(Kube(kubeconfig(tmp_path, api, exec_user(script)))) == "exec-cert-user"


def test_exec_plugin_failure_is_one_line(tmp_path: Path, api: Any) -> None:
    kube = Kube(kubeconfig(tmp_path, api, exec_user(plugin(tmp_path, [], exit_code=1))))
    with pytest.raises(CredentialError) as err:
        kube.server_version()
    assert str(err.value) == (
        f"{tmp_path / 'kubeconfig'}: users[name=u].user.exec: exec plugin "
        f"{tmp_path / 'plugin.py'}: exited with code 1"
    )


def test_tls_server_name_is_the_name_checked(tmp_path: Path, api: Any) -> None:
    """Reached by IP, the server's certificate is checked against tls-server-name (one of
    its DNS names), and a name it does not carry fails."""
    good = kubeconfig(
        tmp_path, api, {"token": "tok-alice"}, **{"tls-server-name": "kubernetes.default.svc"}
    )
    assert whoami(Kube(good)) == "alice"
    bad = kubeconfig(
        tmp_path, api, {"token": "tok-alice"}, **{"tls-server-name": "not-the-server.example"}
    )
    with pytest.raises(KubeError, match=r"cannot connect to .*TLS: .*not-the-server\.example"):
        Kube(bad).server_version()


class ConnectProxy(socketserver.ThreadingTCPServer):
    """A minimal HTTP CONNECT proxy (what corporate proxies offer kubectl); records targets."""

    daemon_threads = True

    def __init__(self) -> None:
        self.targets: list[str] = []
        super().__init__(("127.0.0.1", 0), _Tunnel)


class _Tunnel(socketserver.StreamRequestHandler):
    server: ConnectProxy

    def handle(self) -> None:
        request = self.rfile.readline().decode()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        method, target, _ = request.split(" ", 2)
        assert method == "CONNECT", request
        self.server.targets.append(target)
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as upstream:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            ends = [self.connection, upstream]
            while True:
                ready, _, _ = select.select(ends, [], [], 5)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.connection else self.connection).sendall(data)


def test_proxy_url_tunnels_through_the_proxy(tmp_path: Path, api: Any) -> None:
    proxy = ConnectProxy()
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{proxy.server_address[1]}"
        kube = Kube(kubeconfig(tmp_path, api, {"token": "tok-bob"}, **{"proxy-url": url}))
        assert whoami(kube) == "bob"
        kube.close()
        assert proxy.targets and set(proxy.targets) == {api.server.removeprefix("https://")}
    finally:
        proxy.shutdown()
        proxy.server_close()
