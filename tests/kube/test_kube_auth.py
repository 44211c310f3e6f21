"""Kubeconfigs read as kubectl reads them (no cluster): merging, relative paths, every
credential kind, kubectl's refusals in one line, and the refresh rules of tokenFile and
exec plugins. The same credentials against a real API server: test_kube_auth_apiserver.py."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.kube import auth, kubeconfig, transport
from harness.kube.kubeconfig import KubeconfigError

SERVER = "https://10.1.2.3:6443"


def config(
    user: dict[str, Any], cluster: dict[str, Any] | None = None, **ctx: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster or {"server": SERVER}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", **ctx}}],
        "current-context": "x",
    }


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def load(tmp_path: Path, doc: dict[str, Any], context: str | None = None) -> kubeconfig.Access:
    return kubeconfig.load([write(tmp_path / "kubeconfig", doc)], context)


def headers(access: kubeconfig.Access) -> dict[str, str]:
    return dict(auth.authenticator(access).current().headers)


def test_a_token_becomes_a_bearer_header(tmp_path: Path) -> None:
    """The reported bug: a kubeconfig with a token sent no Authorization header."""
    access = load(tmp_path, config({"token": "abc.def"}))
    assert headers(access) == {"Authorization": "Bearer abc.def"}


def test_basic_auth_and_impersonation_headers(tmp_path: Path) -> None:
    user = {"username": "ann", "password": "pw", "as": "bob", "as-groups": ["g1", "g2"]}
    creds = auth.authenticator(load(tmp_path, config(user))).current()
    assert ("Authorization", "Basic " + base64.b64encode(b"ann:pw").decode()) in creds.headers
    assert [v for h, v in creds.headers if h == "Impersonate-Group"] == ["g1", "g2"]
    assert ("Impersonate-User", "bob") in creds.headers


def test_relative_paths_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "sub" / "u.crt").write_bytes(b"CERT")
    (tmp_path / "sub" / "u.key").write_bytes(b"KEY")
    doc = config({"client-certificate": "u.crt", "client-key": "u.key", "tokenFile": "tok"},
                 {"server": SERVER, "certificate-authority": "ca.crt"})  # fmt: skip
    access = kubeconfig.load([write(tmp_path / "sub" / "kubeconfig", doc)])
    assert (access.ca_pem, access.cert_pem, access.key_pem) == (b"CA", b"CERT", b"KEY")
    assert access.token_file == tmp_path / "sub" / "tok"


def test_inline_data_is_base64(tmp_path: Path) -> None:
    b64 = base64.b64encode
    doc = config({"client-certificate-data": b64(b"C").decode(), "client-key-data": b64(b"K").decode()},
                 {"server": SERVER, "certificate-authority-data": b64(b"CA").decode(),
                  "tls-server-name": "api.example", "proxy-url": "http://proxy:3128"})  # fmt: skip
    access = load(tmp_path, doc)
    assert (access.ca_pem, access.cert_pem, access.key_pem) == (b"CA", b"C", b"K")
    assert (access.tls_server_name, access.proxy_url) == ("api.example", "http://proxy:3128")


def test_files_merge_first_one_wins(tmp_path: Path) -> None:
    """clientcmd's merge: the first file naming an entry wins, and its current-context."""
    first = write(tmp_path / "a", {"users": [{"name": "u", "user": {"token": "from-a"}}],
                                   "current-context": "x"})  # fmt: skip
    second = write(tmp_path / "b", {**config({"token": "from-b"}), "current-context": "other"})
    access = kubeconfig.load([first, second])
    assert (access.token, access.context, access.server) == ("from-a", "x", SERVER)


def test_kubeconfig_env_lists_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    assert kubeconfig.files_from(None) == [a, b]
    assert kubeconfig.files_from(str(b)) == [b]
    monkeypatch.delenv("KUBECONFIG")
    with pytest.raises(KubeconfigError, match="never read by default"):
        kubeconfig.files_from(None)


def test_namespace_and_context_choice(tmp_path: Path) -> None:
    doc = config({"token": "t"}, namespace="team-a")
    doc["contexts"].append({"name": "y", "context": {"cluster": "c", "user": "u"}})
    assert load(tmp_path, doc).namespace == "team-a"
    assert load(tmp_path, doc, "y").namespace == "default"


@pytest.mark.parametrize(
    ("user", "cluster", "context", "problem"),
    [
        ({}, {"server": SERVER}, "nope", "contexts: no context 'nope' (contexts: x)"),
        ({"token": "t", "username": "a", "password": "b"}, None, None,
         "users[name=u].user: username/password or bearer token may be set, but not both"),
        ({"client-certificate-data": "Qw=="}, None, None,
         "users[name=u].user: client-key-data or client-key must be specified"),
        ({"client-key-data": "!!"}, None, None, "users[name=u].user.client-key-data: is not base64"),
        ({}, {"server": SERVER, "insecure-skip-tls-verify": True, "certificate-authority-data": "Qw=="},
         None, "clusters[name=c].cluster.insecure-skip-tls-verify: specifying a root certificates"),
        ({}, {"server": SERVER, "certificate-authority": "/x", "certificate-authority-data": "Qw=="},
         None, "certificate-authority-data and certificate-authority are both specified"),
        ({}, {"server": "10.0.0.1:6443"}, None, "clusters[name=c].cluster.server: must be an https://"),
        ({}, {"server": SERVER, "certificate-authority": "missing.crt"}, None,
         "clusters[name=c].cluster.certificate-authority: cannot read"),
        ({"auth-provider": {"name": "gcp"}}, None, None,
         "users[name=u].user.auth-provider: auth provider 'gcp' is not supported"),
        ({"exec": {"command": "p", "apiVersion": "client.authentication.k8s.io/v1alpha1"}}, None, None,
         "users[name=u].user.exec.apiVersion: must be one of client.authentication.k8s.io/v1, "),
        ({"exec": {"command": "p", "apiVersion": "client.authentication.k8s.io/v1"}}, None, None,
         "users[name=u].user.exec.interactiveMode: must be one of Never, IfAvailable, Always (required"),
        ({"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1"}}, None, None,
         "users[name=u].user.exec.command: missing"),
    ],
)  # fmt: skip
def test_refusals_are_one_line(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any] | None, context: str | None,
    problem: str,
) -> None:  # fmt: skip
    with pytest.raises(KubeconfigError) as err:
        load(tmp_path, config(user, cluster), context)
    text = str(err.value)
    assert "\n" not in text and problem in text
    assert text.startswith(str(tmp_path / "kubeconfig") + ": ")


def test_an_empty_or_unparseable_file(tmp_path: Path) -> None:
    (tmp_path / "k").write_text("a: [")
    with pytest.raises(KubeconfigError, match="not YAML"):
        kubeconfig.load([tmp_path / "k"])
    (tmp_path / "k").write_text("")
    with pytest.raises(KubeconfigError, match="current-context: not set"):
        kubeconfig.load([tmp_path / "k"])


def test_the_kubeconfig_token_wins_over_the_exec_plugin(tmp_path: Path) -> None:
    """client-go: a token, basic auth or certificate in the kubeconfig skips the plugin."""
    exe = {"command": "/nonexistent", "apiVersion": "client.authentication.k8s.io/v1beta1"}
    access = load(tmp_path, config({"token": "t", "exec": exe}))
    assert isinstance(auth.authenticator(access), auth.Fixed)


def test_token_file_is_reread_after_its_period_and_after_a_401(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    now = [0.0]
    source = auth.TokenFile(token, auth.Credentials(), lambda: now[0])
    first = source.current()
    assert dict(first.headers) == {"Authorization": "Bearer one"}
    token.write_text("two")
    assert source.current() is first  # cached for a minute, as client-go
    assert source.after_unauthorized(first)  # a 401: read at once, and it changed
    assert dict(source.current().headers) == {"Authorization": "Bearer two"}
    token.write_text("three")
    now[0] = auth.TOKEN_FILE_PERIOD_S + 1
    assert dict(source.current().headers) == {"Authorization": "Bearer three"}
    assert not source.after_unauthorized(source.current())  # unchanged file: nothing to retry


def plugin(tmp_path: Path, answers: list[dict[str, Any]], exit_code: int = 0) -> Path:
    """An exec credential plugin (a real program): answers in turn, logs each call's
    KUBERNETES_EXEC_INFO to calls.jsonl."""
    state = tmp_path / "answers.json"
    state.write_text(json.dumps(answers))
    script = tmp_path / "plugin.py"
    script.write_text(f"""#!{sys.executable}
import json, os, pathlib, sys
state = pathlib.Path({str(state)!r})
answers = json.loads(state.read_text())
with open({str(tmp_path / "calls.jsonl")!r}, "a") as log:
    log.write(os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
if {exit_code}:
    print("plugin says no", file=sys.stderr)
    sys.exit({exit_code})
state.write_text(json.dumps(answers[1:]))
print(json.dumps(answers[0]))
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def credential(version: str = "v1", **status: Any) -> dict[str, Any]:
    return {"apiVersion": f"client.authentication.k8s.io/{version}", "kind": "ExecCredential",
            "status": status}  # fmt: skip


def exec_user(command: Path, **more: Any) -> dict[str, Any]:
    return {"exec": {"command": str(command), "apiVersion": "client.authentication.k8s.io/v1",
                     "interactiveMode": "Never", **more}}  # fmt: skip


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_exec_plugin_answers_are_kept_until_they_expire(tmp_path: Path) -> None:
    past, future = "2000-01-01T00:00:00Z", "2999-01-01T00:00:00Z"
    script = plugin(tmp_path, [credential(token="a", expirationTimestamp=past),
                               credential(token="b", expirationTimestamp=future)])  # fmt: skip
    doc = config(exec_user(script, provideClusterInfo=True, env=[{"name": "X", "value": "1"}]),
                 {"server": SERVER, "tls-server-name": "api.example", "extensions": [
                     {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k"}}]})  # fmt: skip
    source = auth.authenticator(load(tmp_path, doc))
    assert dict(source.current().headers) == {"Authorization": "Bearer a"}
    assert dict(source.current().headers) == {"Authorization": "Bearer b"}  # a had expired
    assert dict(source.current().headers) == {"Authorization": "Bearer b"}
    seen = calls(tmp_path)
    assert len(seen) == 2
    assert seen[0] == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False, "cluster": {"server": SERVER, "tls-server-name": "api.example",
                                                   "config": {"audience": "k"}}},
    }  # fmt: skip


def test_exec_plugin_runs_again_after_a_401(tmp_path: Path) -> None:
    script = plugin(tmp_path, [credential(token="old"), credential(token="new")])
    source = auth.authenticator(load(tmp_path, config(exec_user(script))))
    used = source.current()
    assert source.after_unauthorized(used)
    assert dict(source.current().headers) == {"Authorization": "Bearer new"}
    assert source.after_unauthorized(used)  # rotated already: retry without running it again
    assert len(calls(tmp_path)) == 2


@pytest.mark.parametrize(
    ("answers", "exit_code", "problem"),
    [
        ([credential()], 0, "it returned neither a token nor a certificate and key"),
        ([credential(clientCertificateData="C")], 0, "only a certificate or only a key"),
        ([credential("v1beta1", token="t")], 0,
         "configured for client.authentication.k8s.io/v1, it answered client.authentication.k8s.io/v1beta1"),
        ([credential(token="t", expirationTimestamp="soon")], 0, "expirationTimestamp 'soon' is not RFC 3339"),
        ([], 3, "exited with code 3"),
    ],
)  # fmt: skip
def test_exec_plugin_failures_name_the_user_entry(
    tmp_path: Path, answers: list[dict[str, Any]], exit_code: int, problem: str
) -> None:
    script = plugin(tmp_path, answers, exit_code)
    source = auth.authenticator(load(tmp_path, config(exec_user(script))))
    with pytest.raises(auth.CredentialError) as err:
        source.current()
    text = str(err.value)
    assert "\n" not in text and problem in text
    assert text.startswith(f"{tmp_path / 'kubeconfig'}: users[name=u].user.exec: exec plugin ")


def test_exec_plugin_not_installed_gives_its_install_hint(tmp_path: Path) -> None:
    user = exec_user(tmp_path / "nothere", installHint="install it with: brew install thing")
    with pytest.raises(auth.CredentialError, match=r"executable not found \(install it with: brew"):
        auth.authenticator(load(tmp_path, config(user))).current()


def test_interactive_always_needs_a_terminal(tmp_path: Path) -> None:
    user = exec_user(plugin(tmp_path, [credential(token="t")]), interactiveMode="Always")
    with pytest.raises(auth.CredentialError, match="standard input is not a terminal"):
        auth.authenticator(load(tmp_path, config(user))).current()


def test_environment_proxies_skip_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's http.ProxyFromEnvironment: $HTTPS_PROXY unless $NO_PROXY matches; loopback never."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "internal.corp")
    assert transport.proxy_for(load(tmp_path, config({}))) == "http://proxy.corp:3128"
    for server in ("https://127.0.0.1:6443", "https://localhost:6443", "https://api.internal.corp"):
        assert transport.proxy_for(load(tmp_path, config({}, {"server": server}))) is None
    given = config({}, {"server": SERVER, "proxy-url": "http://other:8080"})
    assert transport.proxy_for(load(tmp_path, given)) == "http://other:8080"


def test_a_dead_server_is_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on port 1: the user reads what failed, not urllib3's retry internals
    (issue 32 item 8)."""
    from harness.cli.main import main
    from harness.kube import Kube, KubeError

    path = write(tmp_path / "kubeconfig", config({"token": "t"}, {"server": "https://127.0.0.1:1"}))
    with pytest.raises(KubeError) as err:
        Kube(path).server_version()
    message = str(err.value)
    assert message.startswith("cannot connect to https://127.0.0.1:1 (connection refused)")
    for internal in ("HTTPSConnectionPool", "Max retries", "NewConnectionError", "object at 0x"):
        assert internal not in message
    assert main(["snapshot", "--kubeconfig", str(path)]) == 2
    assert capsys.readouterr().err.startswith(
        "cannot connect to https://127.0.0.1:1 (connection refused)"
    )


def test_unreachable_reasons_in_words() -> None:
    import socket
    import ssl

    import urllib3

    def refused() -> Exception:
        conn = urllib3.connection.HTTPSConnection("127.0.0.1", 1)
        return urllib3.exceptions.MaxRetryError(
            None,
            "/",
            urllib3.exceptions.NewConnectionError(
                conn, "Failed to establish a new connection: [Errno 111] Connection refused"
            ),
        )

    assert transport.unreachable(refused()) == "connection refused"
    timeout = urllib3.exceptions.ConnectTimeoutError(None, "timed out")
    assert transport.unreachable(urllib3.exceptions.MaxRetryError(None, "/", timeout)) == (
        "timed out connecting"
    )
    dns = urllib3.exceptions.NameResolutionError(
        "nope.example", None, socket.gaierror(-2, "Name or service not known")
    )
    assert transport.unreachable(urllib3.exceptions.MaxRetryError(None, "/", dns)) == (
        "cannot resolve host nope.example"
    )
    bad_tls = urllib3.exceptions.SSLError(
        ssl.SSLCertVerificationError("certificate verify failed: Hostname mismatch")
    )
    assert transport.unreachable(urllib3.exceptions.MaxRetryError(None, "/", bad_tls)).startswith(
        "TLS: certificate verify failed"
    )
