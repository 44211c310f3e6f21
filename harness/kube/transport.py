"""The HTTP(S) connection pool for one cluster: TLS as the kubeconfig says, through a proxy
when it names one (or the environment does, as Go's http.ProxyFromEnvironment).

TLS: the cluster's CA (or the system's trust store), insecure-skip-tls-verify, the client
certificate, and tls-server-name, which client-go uses both as the SNI name and as the name
the server's certificate must carry (so a server reached by IP or through a tunnel can
present a certificate issued for its DNS name).
"""

from __future__ import annotations

import ipaddress
import ssl
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlsplit

import urllib3

from harness.kube.errors import KubeError
from harness.kube.kubeconfig import Access


def ssl_context(access: Access, cert: tuple[bytes, bytes] | None) -> ssl.SSLContext:
    """Verification per the kubeconfig, presenting `cert` (PEM certificate, PEM key)."""
    ctx = ssl.create_default_context(cadata=access.ca_pem.decode() if access.ca_pem else None)
    if access.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        # ssl loads a key pair only from files: write them privately, load, remove.
        with tempfile.TemporaryDirectory(prefix="kth-client-cert-") as tmp:
            crt, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            for path, data in ((crt, cert[0]), (key, cert[1])):
                path.touch(mode=0o600)
                path.write_bytes(data)
            try:
                ctx.load_cert_chain(str(crt), str(key))
            except ssl.SSLError as err:
                raise KubeError(f"{access.source}: user {access.user}: bad client certificate "
                                f"or key: {err.reason or err}") from None  # fmt: skip
    return ctx


def proxy_for(access: Access) -> str | None:
    """The kubeconfig's proxy-url, else $HTTPS_PROXY/$HTTP_PROXY unless $NO_PROXY matches;
    never for loopback (Go's httpproxy rule: localhost and loopback are never proxied)."""
    if access.proxy_url:
        return access.proxy_url
    url = urlsplit(access.server)
    host = url.hostname or ""
    if host == "localhost" or _is_loopback(host):
        return None
    proxies = urllib.request.getproxies_environment()
    chosen = proxies.get(url.scheme)
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # untyped
    if chosen and not bypass(host, proxies):
        return chosen
    return None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HandshakeFailed(urllib3.exceptions.NewConnectionError):
    """A new connection's TLS handshake broke off (the server closed it, or reset it) before
    any request was written. urllib3 counts a bare SSLError as an "other" error, never
    retried, because it cannot tell a handshake from a response read; as a connection error
    it is retried like a refused connection, which is safe for a POST too. A certificate
    that fails verification is not retried: the next handshake would fail the same way."""


class _HandshakeRetriedConnection(urllib3.connection.HTTPSConnection):
    def connect(self) -> None:
        try:
            super().connect()
        except ssl.SSLCertVerificationError:
            raise
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as err:
            raise HandshakeFailed(self, f"TLS handshake: {err}") from err


class _HandshakeRetriedPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HandshakeRetriedConnection


def pool(
    access: Access,
    cert: tuple[bytes, bytes] | None,
    *,
    maxsize: int,
    timeout: float,
) -> urllib3.PoolManager:
    """A pool for this cluster presenting `cert` (a new pool when the certificate rotates)."""
    options: dict[str, object] = {
        "maxsize": maxsize,
        "timeout": urllib3.Timeout(connect=5.0, read=timeout),
        "retries": urllib3.Retry(
            total=3, connect=3, read=0, status=0, other=0, redirect=0, backoff_factor=0.2
        ),
    }
    if access.server.startswith("https://"):
        options["ssl_context"] = ssl_context(access, cert)
        if access.tls_server_name:
            options["server_hostname"] = access.tls_server_name
            options["assert_hostname"] = access.tls_server_name
    proxy = proxy_for(access)
    if proxy is None:
        return _handshake_retried(urllib3.PoolManager(**options))  # type: ignore[arg-type]
    parsed = urlsplit(proxy)
    if parsed.scheme == "socks5":
        raise KubeError(
            f"{access.source}: proxy-url {proxy}: SOCKS5 proxies are not supported by the "
            "harness; use an HTTP(S) proxy (kubectl's CONNECT tunnel works the same)"
        )
    headers = None
    if parsed.username is not None:
        auth = f"{unquote(parsed.username)}:{unquote(parsed.password or '')}"
        headers = urllib3.make_headers(proxy_basic_auth=auth)
        proxy = proxy.replace(f"{parsed.netloc.rsplit('@', 1)[0]}@", "", 1)
    return _handshake_retried(
        urllib3.ProxyManager(proxy, proxy_headers=headers, **options)  # type: ignore[arg-type]
    )


def _handshake_retried(manager: urllib3.PoolManager) -> urllib3.PoolManager:
    manager.pool_classes_by_scheme = {
        **manager.pool_classes_by_scheme,
        "https": _HandshakeRetriedPool,
    }
    return manager


def unreachable(err: urllib3.exceptions.HTTPError) -> str:
    """Why a request never got an answer, in words (`connection refused`), not urllib3's
    retry wrapper with its pool and object addresses."""
    reason: BaseException = err
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        reason = err.reason
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        host = str(reason).split("'")[1] if str(reason).count("'") >= 2 else "(unknown)"
        return f"cannot resolve host {host}"  # "Failed to resolve 'HOST' (...)"
    if isinstance(reason, HandshakeFailed):
        return f"TLS: {_plain(reason.__cause__ or reason)}"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        cause = reason.__cause__
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
        text = str(reason).rsplit("] ", 1)[-1]  # "...: [Errno 111] Connection refused"
        return text.lower() if "]" in str(reason) else "cannot open a connection"
    if isinstance(reason, urllib3.exceptions.ConnectTimeoutError):
        return "timed out connecting"
    if isinstance(reason, urllib3.exceptions.ProxyError):
        return f"proxy: {_plain(reason.original_error)}"
    if isinstance(reason, urllib3.exceptions.SSLError):
        return f"TLS: {_plain(reason.args[0] if reason.args else reason)}"
    return _plain(reason)


def _plain(err: object) -> str:
    """An error's own words, without urllib3's `(Caused by ...)` tail."""
    verify = getattr(err, "verify_message", "")  # set by OpenSSL, absent when made by hand
    if isinstance(err, ssl.SSLCertVerificationError) and verify:
        return f"certificate verify failed: {verify}"
    if isinstance(err, OSError) and not err.strerror and err.args:
        return str(err.args[-1])  # an OSError made with one message prints as a tuple
    return str(err).split(" (Caused by ", 1)[0]
