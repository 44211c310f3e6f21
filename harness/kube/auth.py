"""The credentials each request carries, refreshed the way client-go refreshes them.

- a token, basic auth or a client certificate from the kubeconfig: fixed;
- a tokenFile: re-read once a minute and at once after a 401 (client-go's cached file token
  source, transport/token_source.go), so a rotated projected token keeps working;
- an exec plugin (client-go plugin/pkg/client/auth/exec/exec.go): run on first use, its
  answer kept until its expirationTimestamp, and run again after a 401; a token or a client
  certificate (or both). As in client-go, a token, basic auth or a certificate in the
  kubeconfig itself wins over the plugin.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.kube.errors import KubeError
from harness.kube.kubeconfig import Access, ExecPlugin

TOKEN_FILE_PERIOD_S = 60.0
"""client-go re-reads a tokenFile at most once a minute (NewCachedFileTokenSource)."""
PLUGIN_TIMEOUT_S = 120.0
"""A non-interactive plugin that has not answered by then is stuck (client-go waits forever)."""


class CredentialError(KubeError):
    """Credentials could not be obtained: a tokenFile unreadable, an exec plugin failing."""


@dataclass(frozen=True)
class Credentials:
    """Headers for one request (a name may repeat: Impersonate-Group) and the client
    certificate (PEM cert, PEM key) to present."""

    headers: tuple[tuple[str, str], ...] = ()
    cert: tuple[bytes, bytes] | None = None

    def with_authorization(self, value: str) -> Credentials:
        kept = tuple(h for h in self.headers if h[0] != "Authorization")
        return Credentials((*kept, ("Authorization", value)), self.cert)


class Authenticator(Protocol):
    def current(self) -> Credentials:
        """The credentials to send now (refreshed first when they have expired)."""
        ...

    def after_unauthorized(self, used: Credentials) -> bool:
        """The server answered 401 to `used`: True when there are new credentials to retry
        with (another thread may have refreshed them already)."""
        ...


class Fixed:
    """Credentials written in the kubeconfig."""

    def __init__(self, creds: Credentials) -> None:
        self.creds = creds

    def current(self) -> Credentials:
        return self.creds

    def after_unauthorized(self, used: Credentials) -> bool:
        return False


class TokenFile:
    """A bearer token read from a file (a projected ServiceAccount token rotates)."""

    def __init__(self, path: Path, base: Credentials, clock: Callable[[], float]) -> None:
        self.path, self.base, self.clock = path, base, clock
        self.lock = threading.Lock()
        self.creds: Credentials | None = None
        self.read_at = 0.0

    def current(self) -> Credentials:
        with self.lock:
            if self.creds is None or self.clock() - self.read_at >= TOKEN_FILE_PERIOD_S:
                self._read()
            assert self.creds is not None
            return self.creds

    def after_unauthorized(self, used: Credentials) -> bool:
        with self.lock:
            if self.creds is not used:
                return True
            before = self.creds
            self._read()
            return self.creds != before

    def _read(self) -> None:
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise CredentialError(f"tokenFile {self.path}: cannot read: {err}") from None
        if not token:
            raise CredentialError(f"tokenFile {self.path}: empty")
        self.creds = self.base.with_authorization(f"Bearer {token}")
        self.read_at = self.clock()


class ExecCredentials:
    """Credentials printed by an exec plugin, kept until they expire or are refused."""

    def __init__(self, plugin: ExecPlugin, base: Credentials) -> None:
        self.plugin, self.base = plugin, base
        self.lock = threading.Lock()
        self.creds: Credentials | None = None
        self.expiry: dt.datetime | None = None
        self.runs = 0

    def current(self) -> Credentials:
        with self.lock:
            expired = self.expiry is not None and dt.datetime.now(dt.UTC) >= self.expiry
            if self.creds is None or expired:
                self._run()
            assert self.creds is not None
            return self.creds

    def after_unauthorized(self, used: Credentials) -> bool:
        with self.lock:
            if self.creds is not used:
                return True  # already rotated by another request
            self._run()
            return True

    def _fail(self, problem: str) -> CredentialError:
        return CredentialError(f"{self.plugin.where}: exec plugin {self.plugin.command}: {problem}")

    def _run(self) -> None:
        plugin = self.plugin
        interactive = self._interactive()
        spec: dict[str, Any] = {"interactive": interactive}
        if plugin.cluster is not None:
            spec["cluster"] = dict(plugin.cluster)
        info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **plugin.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        try:
            done = subprocess.run(
                [plugin.command, *plugin.args],
                env=env,
                stdin=None if interactive else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None,  # the plugin's own messages reach the user, as with kubectl
                timeout=None if interactive else PLUGIN_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError:
            hint = f" ({plugin.install_hint.strip()})" if plugin.install_hint else ""
            raise self._fail(f"executable not found{hint}") from None
        except subprocess.TimeoutExpired:
            raise self._fail(f"no answer after {PLUGIN_TIMEOUT_S:.0f}s") from None
        except OSError as err:
            raise self._fail(f"cannot run: {err}") from None
        self.runs += 1
        if done.returncode != 0:
            raise self._fail(f"exited with code {done.returncode}")
        self.creds, self.expiry = self._parse(done.stdout)

    def _interactive(self) -> bool:
        mode = self.plugin.interactive_mode
        tty = sys.stdin is not None and sys.stdin.isatty()
        if mode == "Always" and not tty:
            raise self._fail("interactiveMode Always, but standard input is not a terminal")
        return mode != "Never" and tty

    def _parse(self, stdout: bytes) -> tuple[Credentials, dt.datetime | None]:
        try:
            cred = json.loads(stdout)
        except ValueError as err:
            raise self._fail(f"its output is not JSON: {err}") from None
        if not isinstance(cred, dict) or cred.get("kind") != "ExecCredential":
            raise self._fail("its output is not an ExecCredential")
        if cred.get("apiVersion") != self.plugin.api_version:
            raise self._fail(
                f"configured for {self.plugin.api_version}, it answered {cred.get('apiVersion')}"
            )
        status = cred.get("status")
        if not isinstance(status, dict):
            raise self._fail("its ExecCredential has no status")
        token = status.get("token") or ""
        cert, key = status.get("clientCertificateData") or "", status.get("clientKeyData") or ""
        if not token and not cert and not key:
            raise self._fail("it returned neither a token nor a certificate and key")
        if bool(cert) != bool(key):
            raise self._fail("it returned only a certificate or only a key, not both")
        creds = self.base.with_authorization(f"Bearer {token}") if token else self.base
        if cert:
            creds = Credentials(creds.headers, (cert.encode(), key.encode()))
        return creds, self._expiry(status.get("expirationTimestamp"))

    def _expiry(self, stamp: object) -> dt.datetime | None:
        if not stamp:
            return None
        try:
            when = dt.datetime.fromisoformat(str(stamp))
        except ValueError:
            raise self._fail(f"expirationTimestamp {stamp!r} is not RFC 3339") from None
        return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def authenticator(access: Access, clock: Callable[[], float] = time.monotonic) -> Authenticator:
    """What supplies this kubeconfig user's credentials (see the module docstring)."""
    headers = tuple((h, v) for h, values in access.impersonate.items() for v in values)
    cert = (access.cert_pem, access.key_pem) if access.cert_pem and access.key_pem else None
    base = Credentials(headers, cert)
    if access.basic is not None:
        pair = f"{access.basic[0]}:{access.basic[1]}".encode()
        base = base.with_authorization("Basic " + base64.b64encode(pair).decode())
    if access.token:
        base = base.with_authorization(f"Bearer {access.token}")
    if access.token_file is not None:
        return TokenFile(access.token_file, base, clock)
    if access.exec_plugin is not None and not (access.token or access.basic or cert):
        return ExecCredentials(access.exec_plugin, base)
    return Fixed(base)
