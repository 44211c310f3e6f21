"""Health endpoint probes for the local components (stdlib HTTP, loopback only)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from harness.kube import poll_until
from harness.kube.errors import WaitTimeout
from harness.logtail import quoted_tail
from harness.providers.base import ClusterError
from harness.providers.process import Process

Probe = Callable[[], tuple[bool, str]]


def insecure_tls() -> ssl.SSLContext:
    """For components serving a self-generated cert; we only ask whether they are up."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def client_tls(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


def http_probe(url: str, ctx: ssl.SSLContext | None = None, expect: str = "") -> Probe:
    """Probe: GET url answers 200 (and its body contains `expect`)."""

    # No proxies: loopback must never go through $HTTPS_PROXY.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx)
    )

    def probe() -> tuple[bool, str]:
        try:
            with opener.open(url, timeout=3) as resp:
                body = resp.read(300).decode(errors="replace")
                return resp.status == 200 and expect in body, f"{resp.status} {body.strip()!r}"
        except urllib.error.HTTPError as err:
            body = err.read(300).decode(errors="replace")
            return False, f"{err.code} {body.strip()[:200]!r}"
        except (OSError, ValueError) as err:
            return False, f"{type(err).__name__}: {err}"

    return probe


def wait_healthy(proc: Process, probe: Probe, *, what: str, timeout: float) -> None:
    """Poll `probe` until it passes; stop early with the log tail if the process dies."""

    def checked() -> tuple[bool, str]:
        proc.check()
        return probe()

    try:
        poll_until(checked, what=f"{proc.name} {what}", timeout=timeout, interval=0.2)
    except WaitTimeout as err:
        raise ClusterError(f"{err}\n{quoted_tail(proc.log)}") from err
