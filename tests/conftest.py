"""Test-suite wiring (pytester and what tests share with examples/: the root conftest.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import toolchain
from harness.backends.sim import SimBackend
from harness.k8s import pki
from harness.plugin.collect import BACKEND_KEY
from harness.providers import health
from harness.providers.local import spec as localspec
from harness.providers.local.cluster import write_admin_token
from harness.providers.process import Process
from harness.runner.backend import ClusterBackend

# Scenarios that are wrong on purpose (test_loader_errors.py reads them): not tests themselves.
collect_ignore = ["data"]


_REAL_HOME = Path.home()
_BUILD_CACHES = {
    "KTH_CACHE": _REAL_HOME / ".cache" / "kueue-tas-harness",
    "GOCACHE": _REAL_HOME / ".cache" / "go-build",
    "GOPATH": _REAL_HOME / "go",
}
"""Where the binaries and Go's caches are for this user (Go's defaults under $HOME)."""


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's pytester with this user's build caches: it sets HOME to its own directory,
    so the harness's binary cache and Go's build cache would start empty there and a test
    that runs the sim for another Kueue version rebuilt it from nothing (255 s in a gate)."""
    for name, default in _BUILD_CACHES.items():
        monkeypatch.setenv(name, os.environ.get(name) or str(default))
    return pytester


@pytest.fixture
def sim_backend(sim_binary: Path) -> Iterator[SimBackend]:
    """The sim (harness.backends.sim) for one test, its process closed after it."""
    backend = SimBackend()
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def runner(request: pytest.FixtureRequest) -> Iterator[ClusterBackend]:
    """The session's cluster backend (shared with the scenario items); its own if none,
    then one for every test module (two clusters would share the 2 cores)."""
    shared = request.config.stash.get(BACKEND_KEY, None)
    if isinstance(shared, ClusterBackend):
        yield shared
        return
    if shared is not None:
        pytest.skip(f"these tests need a real cluster, not --cluster={shared.name}")
    own = ClusterBackend(name="local")
    yield own
    own.close()


@dataclass(frozen=True)
class ApiServerOnly:
    """etcd and kube-apiserver with the local provider's own flags: no Kueue, no controllers."""

    layout: localspec.Layout
    ca: pki.Authority
    server: str

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (client certificate in group system:masters)."""
        return self.layout.kubeconfig


@contextmanager
def _apiserver_only(extra_args: Sequence[str] = ()) -> Iterator[ApiServerOnly]:
    run = Path(tempfile.mkdtemp(prefix="kth-bare-"))
    layout = localspec.Layout(run, run / "etcd")
    ports = localspec.Ports.allocate()
    ca = pki.Authority.create()
    ca.pair.write(layout.pki, "ca")
    ca.issue("kube-apiserver", ips=localspec.APISERVER_SANS_IP, dns=localspec.APISERVER_SANS_DNS,
             server=True).write(layout.pki, "apiserver")  # fmt: skip
    ca.issue("kubernetes-admin", orgs=["system:masters"], client=True).write(layout.pki, "admin")
    write_admin_token(layout)
    front_ca, front_client = pki.front_proxy()  # the aggregation flags name these files
    front_ca.pair.write(layout.pki, "front-proxy-ca")
    front_client.write(layout.pki, "front-proxy-client")
    sa = pki.signing_key()
    (layout.pki / "sa.pub").write_bytes(sa.cert_pem)
    (layout.pki / "sa.key").write_bytes(sa.key_pem)
    server = f"https://127.0.0.1:{ports.apiserver}"
    layout.kubeconfig.write_text(localspec.kubeconfig(server, layout))
    procs = []
    try:
        apiserver = [*localspec.apiserver_args(ports, layout), *extra_args]
        for name, args in (("etcd", localspec.etcd_args(ports, layout)),
                           ("kube-apiserver", apiserver)):  # fmt: skip
            proc = Process(name, [str(toolchain.binary(name)), *args],
                           layout.logs / f"{name}.log", {}, run)  # fmt: skip
            procs.append(proc)
            proc.start()
        tls = health.client_tls(layout.pki / "ca.crt", layout.pki / "admin.crt",
                                layout.pki / "admin.key")  # fmt: skip
        health.wait_healthy(procs[-1], health.http_probe(f"{server}/readyz", tls),
                            what="/readyz", timeout=90)  # fmt: skip
        yield ApiServerOnly(layout, ca, server)
    finally:
        for proc in reversed(procs):
            proc.stop()
        shutil.rmtree(run, ignore_errors=True)


@pytest.fixture(scope="session")
def apiserver_only() -> Callable[..., AbstractContextManager[ApiServerOnly]]:
    """Factory: `with apiserver_only(extra_apiserver_flags) as api:` a real API server on
    which Kueue was never installed, stopped when the block ends."""
    return _apiserver_only
