"""The embedded default cluster: real upstream binaries as local processes.

etcd -> kube-apiserver -> Kueue CRDs -> kube-controller-manager, kube-scheduler, kwok and
Kueue -> Kueue webhooks, each on free 127.0.0.1 ports and each waited on through its health
endpoint; ready when Kueue's webhook suspends a dry-run Job. Stopped in reverse order,
webhooks first, on success, failure, Ctrl-C and SIGTERM. Never touches ~/.kube: the run
writes and uses its own kubeconfig.

`keep=True` (the runner's --keep-cluster) leaves the cluster running after the process
exits; `python -m harness down RUN_DIR` stops it later. `keep_run_dir=True`
only keeps the run dir (logs, configs, certificates) after a normal stop.

Environment: KTH_RUN_ROOT (where run dirs go; default the temp dir), KTH_KEEP_RUN=1 (same
as keep_run_dir), KTH_START_TIMEOUT (seconds, default 120); binaries come from
harness.toolchain (KTH_CACHE, KTH_<COMPONENT> overrides).
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tenacity
import yaml

from harness import progress, toolchain
from harness.install import gates as kueue_gates
from harness.install import jobset as jobset_install
from harness.install import kueue as kueue_install
from harness.install import lws as lws_install
from harness.install import manifests, visibility
from harness.k8s import pki
from harness.kube import Kube, KubeError
from harness.kueue.gates import parse_gates
from harness.logtail import quoted_tail
from harness.providers import health
from harness.providers.base import ClusterError, ClusterHandle, ComponentCrashed, ProviderBase
from harness.providers.kwok import stages_yaml
from harness.providers.local import detached, lifecycle, owner
from harness.providers.local import spec as localspec
from harness.providers.local.janitor import Janitor
from harness.providers.process import Process
from harness.toolchain import cache

KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")
"""Fixed in Kueue v0.19.2's cmd/kueue/main.go: no flag or config field moves it, and with
internal cert management off (our webhooks are served on loopback URLs with our own CA) Kueue
reads tls.crt/tls.key there at start, even with metrics off, and exits without them."""
ONE_TIME_STEP = 'sudo install -d -o "$(id -un)" {certs}'
"""What a non-root user runs once (README): the folder becomes theirs; the harness fills it."""
PORT_ATTEMPTS = 3
GO_GC_PERCENT = "300"
"""GOGC for the cluster's Go processes unless the environment sets one: a profile of the API
server during scenarios spent about 15 % of its CPU in garbage collection at Go's default 100,
and the API server is over half of a scenario's CPU; a few hundred MB more heap per cluster is
the price."""
CLUSTERS_SHARING_ENV = "PYTEST_XDIST_WORKER_COUNT"
"""How many clusters share the machine's cores: pytest-xdist's worker count, one cluster per
worker (harness.plugin.distribute); unset, one."""


def go_max_procs(cores: int, clusters: int) -> int:
    """GOMAXPROCS for a cluster's Go processes: the cluster's share of the cores, at least
    one. With six clusters on two cores every Go process kept two Ps, and its idle Ps' threads
    spun looking for work (runtime.findRunnable) on cores the other clusters needed. One P
    each took 8 % less CPU for the same 237 scenarios, run beside the two-P clusters so
    that the machine's noise hit both alike (docs/dev/concurrent-e2e-plan.md §13)."""
    return max(1, cores // max(1, clusters))


def go_env(environ: Mapping[str, str], cores: int | None = None) -> dict[str, str]:
    """The Go runtime settings a cluster's processes get unless `environ` sets its own."""
    try:
        clusters = int(environ.get(CLUSTERS_SHARING_ENV) or 1)
    except ValueError:
        clusters = 1
    wanted = {
        "GOGC": GO_GC_PERCENT,
        "GOMAXPROCS": str(go_max_procs(cores or os.cpu_count() or 1, clusters)),
    }
    return {k: v for k, v in wanted.items() if k not in environ}


LWS_INTEGRATION = {"integrations": {"frameworks": [*manifests.FRAMEWORKS, lws_install.FRAMEWORK]}}
"""Kueue manages LeaderWorkerSets here (the LWS controller runs beside it); kind does not.
Always on: the cost is the API server taking LWS's CRD (1.5-4 s more start-up on 2 busy
cores, most of it in the CRD phase). Installing it on first need would cost more: Kueue sets
up an integration whose CRD appears after start-up only after polling with a backoff of up
to 2 minutes (pkg/controller/jobframework/setup.go WaitForAPI), while its webhook answers at
once."""


class PortClash(ComponentCrashed):
    """A component could not bind the port chosen for it; start-up is retried."""


logger = progress.logger("local")


def ensure_metrics_certs(ca: pki.Authority) -> None:
    """Kueue's metrics key pair (see KUEUE_METRICS_CERTS)."""
    ensure_fixed_certs(ca, KUEUE_METRICS_CERTS, "kueue-metrics")


def ensure_fixed_certs(ca: pki.Authority, directory: Path, name: str) -> None:
    """Write a key pair once into a directory Kueue reads at a fixed path; never overwrite
    one. Under a lock: clusters starting at once (pytest-xdist workers) on a fresh machine
    would otherwise interleave two pairs' files and leave a key that does not match its cert.
    Kueue's metrics pair and its visibility server's pair (/visibility) are both fixed so."""
    with cache.locked(name + "-certs"):
        if (directory / "tls.crt").is_file() and (directory / "tls.key").is_file():
            return
        try:
            pair = ca.issue(name, ips=["127.0.0.1"], dns=["localhost"], server=True)
            pair.write(directory, "tls")
        except OSError as err:
            step = ONE_TIME_STEP.format(certs=directory)
            raise ClusterError(
                f"Kueue reads a key pair from {directory} (fixed in Kueue) and the harness "
                f"cannot write it there ({err.strerror}); run once: {step}"
            ) from None


def _shm_dir(run_id: str) -> Path:
    """etcd data on tmpfs when available: fsync-free and off the disk."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / f"kth-etcd-{run_id}"
    return Path(tempfile.gettempdir()) / f"kth-etcd-{run_id}"


def write_admin_token(layout: localspec.Layout) -> None:
    """A fresh random admin token, as the kubeconfig's tokenFile and the API server's
    --token-auth-file row (user kubernetes-admin, group system:masters); owner-only."""
    token = secrets.token_hex(32)
    row = f'{token},kubernetes-admin,kubernetes-admin,"system:masters"\n'
    for path, text in ((layout.token_file, token), (layout.token_auth_file, row)):
        path.write_text(text)
        path.chmod(0o600)


class LocalCluster(ProviderBase):
    """Provider "local": see the module docstring."""

    name = "local"
    live_kueue_log = True  # Kueue runs here as a process writing logs()["kueue"]
    one_per_worker = True  # own ports, run dir and run id: one per pytest-xdist worker
    can_upgrade_kueue = True  # upgrade_kueue replaces its Kueue process
    can_set_kueue_config = True  # kueue_overrides are merged into the config file it writes
    kueue_versions = tuple(toolchain.KUEUE_JOBSET)
    """The Kueue versions it starts (`kueue_version`, else $KTH_KUEUE_VERSION, else v0.19.2)."""

    def __init__(
        self,
        *,
        run_root: Path | None = None,
        keep: bool = False,
        keep_run_dir: bool = False,
        feature_gates: str | Mapping[str, bool] | None = None,
        kueue_overrides: Mapping[str, Any] | None = None,
        start_timeout: float = 120.0,
        pins: toolchain.Pins | None = None,
        kueue_version: str | None = None,
        **_ignored: Any,
    ) -> None:
        self.run_root = run_root
        self.keep = keep
        self.keep_run_dir = keep or keep_run_dir or os.environ.get("KTH_KEEP_RUN") == "1"
        self.feature_gates = parse_gates(feature_gates)
        self.kueue_overrides = dict(kueue_overrides or {})
        self.start_timeout = float(os.environ.get("KTH_START_TIMEOUT") or start_timeout)
        self.pins = pins or (
            toolchain.pins_for(kueue_version) if kueue_version else toolchain.selected_pins()
        )
        self.kueue_version: str | None = self.pins.kueue
        self.procs: list[Process] = []
        self.timings: dict[str, float] = {}
        self.ports: localspec.Ports | None = None
        self.layout: localspec.Layout | None = None
        self.handle: ClusterHandle | None = None
        self._webhooks: list[dict[str, Any]] = []
        self._kube: Kube | None = None
        self._stopped = False
        self._jobset_dir: Path | None = None
        self._lws_dir: Path | None = None
        self._janitor: Janitor | None = None
        self._t0 = 0.0

    # -- public --------------------------------------------------------------------------

    def start(self) -> ClusterHandle:
        """Build or find the binaries, then bring the cluster up; stops it again on failure."""
        if self.handle is not None:
            return self.handle
        if self._stopped:
            raise ClusterError("this LocalCluster was stopped; create a new one to start again")
        lifecycle.register(id(self), self.stop)  # from here SIGTERM unwinds, even mid-build
        try:
            kueue_dir = toolchain.kueue_module_dir(self.pins)
            # Before any build: a gate this version lacks would stop Kueue at start-up.
            registered = kueue_gates.registered_gates(kueue_dir)
            kueue_gates.check_gates(self.feature_gates, self.pins.kueue, registered)
            names = toolchain.components(self.pins)
            binaries = {name: toolchain.binary(name, self.pins) for name in names}
            kwok_dir = toolchain.kwok_module_dir(self.pins)
            self._jobset_dir = toolchain.jobset_module_dir(self.pins)
            self._lws_dir = toolchain.lws_module_dir(self.pins)
            # A port picked as free can be taken by another process before our component
            # binds it (parallel clusters); start over on fresh ports, a bounded number of times.
            for attempt in tenacity.Retrying(
                retry=tenacity.retry_if_exception_type(PortClash),
                stop=tenacity.stop_after_attempt(PORT_ATTEMPTS),
                reraise=True,
            ):
                with attempt:
                    return self._start_once(binaries, kueue_dir, kwok_dir)
            raise AssertionError("unreachable: tenacity re-raises the last error")
        except BaseException:
            self.stop()
            raise

    def logs(self) -> dict[str, Path]:
        return {p.name: p.log for p in self.procs}

    def upgrade_kueue(self, version: str) -> None:
        """Replace the running Kueue by `version` as a platform team upgrades it: webhooks
        off, the old controller stopped, the new version's CRDs applied over the old ones,
        the new controller started on the same ports, configuration and log file (appended),
        webhooks back and answering. JobSet is replaced too when the version pins another.
        Nodes, pods and Kueue's objects stay as they are."""
        if self.handle is None or self._kube is None:
            raise ClusterError("upgrade_kueue: the cluster is not running")
        assert self.layout is not None and self.ports is not None
        pins = toolchain.pins_for(version)
        kueue_dir = toolchain.kueue_module_dir(pins)
        registered = kueue_gates.registered_gates(kueue_dir)
        kueue_gates.check_gates(self.feature_gates, pins.kueue, registered)
        replaced = ["jobset", "kueue"] if pins.jobset != self.pins.jobset else ["kueue"]
        binaries = {name: toolchain.binary(name, pins) for name in replaced}
        jobset_dir = toolchain.jobset_module_dir(pins)
        self._t0 = time.monotonic()
        kube = self._kube
        kueue_install.remove_webhooks(kube, self._webhooks)
        for proc in [p for p in self.procs if p.name in replaced]:
            self.procs.remove(proc)  # stopped on purpose: check() must not call it a crash
            proc.stop()
        logger.info(f"stopped {', '.join(replaced)} {self.pins.kueue}; upgrading to {version}")
        self.pins, self.kueue_version, self._jobset_dir = pins, pins.kueue, jobset_dir
        ca_b64 = base64.b64encode((self.layout.pki / "ca.crt").read_bytes()).decode()
        webhook_base = f"https://127.0.0.1:{self.ports.kueue_webhook}"
        crds = manifests.crds(kueue_dir, webhook_base, ca_b64) + jobset_install.crds(jobset_dir)
        kueue_install.install_crds(kube, crds, timeout=self._left())
        self._mark(f"kueue {version} CRDs")
        args = {"kueue": localspec.kueue_args, "jobset": localspec.jobset_args}
        health_ports = {"kueue": self.ports.kueue_health, "jobset": self.ports.jobset_health}
        for name in replaced:
            proc = self._spawn(name, binaries, args[name](self.layout))
            probe = health.http_probe(f"http://127.0.0.1:{health_ports[name]}/readyz")
            health.wait_healthy(proc, probe, what="/readyz", timeout=self._left())
            self._mark(f"{name} {version}")
        self._webhooks = manifests.webhook_configurations(kueue_dir, webhook_base, ca_b64)
        self._webhooks += jobset_install.webhook_configurations(
            jobset_dir, f"https://127.0.0.1:{self.ports.jobset_webhook}", ca_b64
        )
        assert self._lws_dir is not None
        self._webhooks += lws_install.webhook_configurations(
            self._lws_dir, f"https://127.0.0.1:{self.ports.lws_webhook}", ca_b64
        )
        kueue_install.install_webhooks(kube, self._webhooks)
        kueue_install.wait_webhook_mutates(kube, timeout=self._left())
        if "jobset" in replaced:
            probe_set = kueue_install.probe_jobset("default")
            jobset_install.wait_webhook_defaults(kube, probe_set, timeout=self._left())
        kueue_install.wait_jobset_webhook_mutates(kube, timeout=self._left())
        self._mark(f"kueue {version} webhook")
        # Same port: the APIServices need no change, only the new server to answer.
        served = self._visibility_objects(kueue_dir)
        visibility.wait_available(kube, served, timeout=self._left())
        self._write_state(self.layout, self.ports)

    def reconfigure_kueue(
        self, feature_gates: Mapping[str, bool], kueue_overrides: Mapping[str, Any]
    ) -> bool:
        """Restart Kueue alone with other feature gates or another configuration: both
        only reach Kueue's process (its Configuration file), so the API server, etcd, the
        controllers and the nodes stay. Webhooks off while it is down, back and answering
        after, as in upgrade_kueue. False, with nothing changed, when the visibility API
        would come or go (its APIServices are the cluster's: a full restart does that).
        A full restart cost ~20 s of wall time and ~6 CPU-s here; this one a few seconds."""
        if self.handle is None or self._kube is None:
            raise ClusterError("reconfigure_kueue: the cluster is not running")
        assert self.layout is not None and self.ports is not None
        gates = dict(feature_gates)
        if visibility.enabled(gates) != visibility.enabled(self.feature_gates):
            return False
        kueue_dir = toolchain.kueue_module_dir(self.pins)
        kueue_gates.check_gates(gates, self.pins.kueue, kueue_gates.registered_gates(kueue_dir))
        binaries = {"kueue": toolchain.binary("kueue", self.pins)}
        self._t0 = time.monotonic()
        kube = self._kube
        kueue_install.remove_webhooks(kube, self._webhooks)
        for proc in [p for p in self.procs if p.name == "kueue"]:
            self.procs.remove(proc)  # stopped on purpose: check() must not call it a crash
            proc.stop()
        self.feature_gates, self.kueue_overrides = gates, dict(kueue_overrides)
        self._write_kueue_config(self.layout, self.ports)
        proc = self._spawn("kueue", binaries, localspec.kueue_args(self.layout))
        probe = health.http_probe(f"http://127.0.0.1:{self.ports.kueue_health}/readyz")
        health.wait_healthy(proc, probe, what="/readyz", timeout=self._left())
        kueue_install.install_webhooks(kube, self._webhooks)
        try:
            kueue_install.wait_webhook_mutates(kube, timeout=self._left())
            kueue_install.wait_jobset_webhook_mutates(kube, timeout=self._left())
            visibility.wait_available(kube, self._visibility_objects(kueue_dir), self._left())
        except KubeError as err:
            proc.check()
            raise ClusterError(f"{err}\n{quoted_tail(proc.log)}") from err
        self._mark("kueue reconfigured")
        self._write_state(self.layout, self.ports)
        return True

    def check(self) -> None:
        for proc in self.procs:
            proc.check()

    def pids(self) -> dict[str, int]:
        return {p.name: p.pid for p in self.procs if p.pid is not None}

    def peak_rss_kib(self) -> dict[str, int]:
        """High-water RSS per component, sampled at stop (or now, while running)."""
        for proc in self.procs:
            proc.sample_rss()
        return {p.name: p.peak_rss_kib for p in self.procs if p.peak_rss_kib is not None}

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        with lifecycle.no_interrupts():
            self._teardown()
            lifecycle.unregister(id(self))

    def _teardown(self) -> None:
        """Webhooks, then processes in reverse order, then files (the run dir unless kept)."""
        self._remove_webhooks()
        for proc in reversed(self.procs):
            proc.stop()
        if self._kube is not None:
            self._kube.close()
        if self.layout is not None:
            shutil.rmtree(self.layout.etcd_data, ignore_errors=True)
            if not self.keep_run_dir:
                shutil.rmtree(self.layout.run_dir, ignore_errors=True)
        if self._janitor is not None:
            self._janitor.release()
            self._janitor = None

    # -- start-up ------------------------------------------------------------------------

    def _start_once(
        self, binaries: dict[str, Path], kueue_dir: Path, kwok_dir: Path
    ) -> ClusterHandle:
        try:
            return self._start(binaries, kueue_dir, kwok_dir)
        except ComponentCrashed as err:
            if "address already in use" not in str(err):
                raise
            logger.info(f"port taken by another process, starting over on new ports: {err}")
            with lifecycle.no_interrupts():
                self._teardown()
            self.procs, self._webhooks, self._kube, self.layout = [], [], None, None
            raise PortClash(str(err)) from err

    def _start(self, binaries: dict[str, Path], kueue_dir: Path, kwok_dir: Path) -> ClusterHandle:
        self._t0 = time.monotonic()
        layout, ports, ca = self._prepare(kwok_dir)
        server = f"https://127.0.0.1:{ports.apiserver}"
        self._start_control_plane(binaries, layout, ports, server)
        kube = self._kube = Kube(layout.kubeconfig)
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}})
        webhook_base = f"https://127.0.0.1:{ports.kueue_webhook}"
        assert self._jobset_dir is not None
        crds = manifests.crds(kueue_dir, webhook_base, ca.bundle_b64)
        crds += jobset_install.crds(self._jobset_dir)
        assert self._lws_dir is not None
        crds += lws_install.crds(self._lws_dir)
        kueue_install.install_crds(kube, crds, timeout=self._left())
        self._mark("kueue CRDs")
        kueue = self._start_controllers(binaries, layout, ports)
        self._webhooks = manifests.webhook_configurations(kueue_dir, webhook_base, ca.bundle_b64)
        self._webhooks += jobset_install.webhook_configurations(
            self._jobset_dir, f"https://127.0.0.1:{ports.jobset_webhook}", ca.bundle_b64
        )
        self._webhooks += lws_install.webhook_configurations(
            self._lws_dir, f"https://127.0.0.1:{ports.lws_webhook}", ca.bundle_b64
        )
        kueue_install.install_webhooks(kube, self._webhooks)
        served = self._visibility_objects(kueue_dir)
        visibility.install(kube, served)
        try:
            kueue_install.wait_webhook_mutates(kube, timeout=self._left())
            probe = kueue_install.probe_jobset("default")
            jobset_install.wait_webhook_defaults(kube, probe, timeout=self._left())
            kueue_install.wait_jobset_webhook_mutates(kube, timeout=self._left())
            self._mark("kueue webhook")
            lws_install.wait_webhooks(kube, timeout=self._left())
            self._mark("lws webhook")
            visibility.wait_available(kube, served, timeout=self._left())
        except KubeError as err:
            kueue.check()
            raise ClusterError(f"{err}\n{quoted_tail(kueue.log)}") from err
        if served:
            self._mark("kueue visibility API")
        self.timings["ready"] = round(time.monotonic() - self._t0, 2)
        self.handle = ClusterHandle("local", layout.kubeconfig, layout.run_dir, server)
        self._write_state(layout, ports)
        if self.keep:
            # Kept: outlive this process; `python -m harness down RUN_DIR` stops it.
            lifecycle.unregister(id(self))
        return self.handle

    def _visibility_objects(self, kueue_dir: Path) -> list[dict[str, Any]]:
        """Kueue's APIServices and their Service, or none when the gate is off."""
        if not visibility.enabled(self.feature_gates):
            return []
        assert self.ports is not None
        return visibility.objects(kueue_dir, self.ports.kueue_visibility)

    def _left(self) -> float:
        """Seconds left of the start-up budget (at least one, so a wait still polls once)."""
        return max(self._t0 + self.start_timeout - time.monotonic(), 1.0)

    def _prepare(self, kwok_dir: Path) -> tuple[localspec.Layout, localspec.Ports, pki.Authority]:
        """Run dir, ports, certificates, kubeconfig and config files."""
        root = self.run_root or Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="kth-local-", dir=root))
        layout = self.layout = localspec.Layout(run_dir, _shm_dir(run_dir.name))
        owner.write_owner(run_dir)  # `leftovers` tells a cluster in use from one left behind
        if not self.keep:  # a kept cluster outlives this process on purpose
            kept = () if self.keep_run_dir else (run_dir,)
            self._janitor = Janitor((layout.etcd_data, *kept))
        logger.info(f"run dir {run_dir}")
        ports = self.ports = localspec.Ports.allocate()
        ca = self._write_pki(layout)
        server = f"https://127.0.0.1:{ports.apiserver}"
        layout.kubeconfig.write_text(localspec.kubeconfig(server, layout))
        ensure_metrics_certs(ca)
        self._ensure_visibility_certs(ca)
        self._write_configs(layout, ports, kwok_dir)
        return layout, ports, ca

    def _ensure_visibility_certs(self, ca: pki.Authority) -> None:
        """The visibility server's pair in /visibility (visibility.CERT_DIR). When it cannot
        be written (not root, folder not made) and nobody asked for the gate, the cluster
        starts without the visibility API rather than not at all, and says how to get it."""
        if not visibility.enabled(self.feature_gates):
            return
        try:
            ensure_fixed_certs(ca, visibility.CERT_DIR, "kueue-visibility")
        except ClusterError as err:
            if "VisibilityOnDemand" in self.feature_gates:
                raise
            logger.warning(f"starting without Kueue's visibility API: {err}")
            self.feature_gates = {**self.feature_gates, "VisibilityOnDemand": False}

    def _start_control_plane(
        self,
        binaries: Mapping[str, Path],
        layout: localspec.Layout,
        ports: localspec.Ports,
        server: str,
    ) -> None:
        etcd = self._spawn("etcd", binaries, localspec.etcd_args(ports, layout))
        probe = health.http_probe(f"http://127.0.0.1:{ports.etcd}/health", expect='"health":"true"')
        health.wait_healthy(etcd, probe, what="/health", timeout=self._left())
        self._mark("etcd")
        api = self._spawn("kube-apiserver", binaries, localspec.apiserver_args(ports, layout))
        pki_dir = layout.pki
        tls = health.client_tls(pki_dir / "ca.crt", pki_dir / "admin.crt", pki_dir / "admin.key")
        probe = health.http_probe(f"{server}/readyz", tls)
        health.wait_healthy(api, probe, what="/readyz", timeout=self._left())
        self._mark("kube-apiserver")

    def _start_controllers(
        self, binaries: Mapping[str, Path], layout: localspec.Layout, ports: localspec.Ports
    ) -> Process:
        """kube-controller-manager, kube-scheduler, kwok and Kueue, started together once the
        CRDs exist (on two cores, starting them earlier slows the API server's CRD work)."""
        kwok_env = {"KWOK_WORKDIR": str(layout.run_dir / "kwok")}  # not ~/.kwok
        started = [
            (
                self._spawn(
                    "kube-controller-manager",
                    binaries,
                    localspec.controller_manager_args(ports, layout),
                ),
                f"https://127.0.0.1:{ports.controller_manager}/healthz",
            ),
            (
                self._spawn("kube-scheduler", binaries, localspec.scheduler_args(ports, layout)),
                f"https://127.0.0.1:{ports.scheduler}/healthz",
            ),
            (
                self._spawn("kwok", binaries, localspec.kwok_args(ports, layout), kwok_env),
                f"http://127.0.0.1:{ports.kwok}/healthz",
            ),
            (
                self._spawn("jobset", binaries, localspec.jobset_args(layout)),
                f"http://127.0.0.1:{ports.jobset_health}/readyz",
            ),
            (
                self._spawn("lws", binaries, localspec.lws_args(layout)),
                f"http://127.0.0.1:{ports.lws_health}/readyz",
            ),
            (
                self._spawn("kueue", binaries, localspec.kueue_args(layout)),
                f"http://127.0.0.1:{ports.kueue_health}/readyz",
            ),
        ]
        for proc, url in started:
            tls = health.insecure_tls() if url.startswith("https") else None
            what = url.rsplit("/", 1)[1]
            health.wait_healthy(
                proc, health.http_probe(url, tls), what=f"/{what}", timeout=self._left()
            )
            self._mark(proc.name)
        return started[-1][0]

    def _write_state(self, layout: localspec.Layout, ports: localspec.Ports) -> None:
        webhooks = [[w["apiVersion"], w["kind"], w["metadata"]["name"]] for w in self._webhooks]
        detached.write_state(
            layout.run_dir,
            {
                "kubeconfig": str(layout.kubeconfig),
                "etcd_data": str(layout.etcd_data),
                "pids": self.pids(),
                "ports": ports.as_dict(),
                "webhooks": webhooks,
            },
        )

    def _mark(self, phase: str) -> None:
        self.timings[phase] = round(time.monotonic() - self._t0, 2)
        logger.info(f"{phase} ready after {self.timings[phase]:.1f}s")

    def _write_pki(self, layout: localspec.Layout) -> pki.Authority:
        ca = pki.Authority.create()
        d = layout.pki
        ca.pair.write(d, "ca")
        ca.issue(
            "kube-apiserver",
            ips=localspec.APISERVER_SANS_IP,
            dns=localspec.APISERVER_SANS_DNS,
            server=True,
        ).write(d, "apiserver")
        ca.issue("kubernetes-admin", orgs=["system:masters"], client=True).write(d, "admin")
        write_admin_token(layout)
        sa = pki.signing_key()
        (d / "sa.pub").write_bytes(sa.cert_pem)
        (d / "sa.key").write_bytes(sa.key_pem)
        front_ca, front_client = pki.front_proxy()
        front_ca.pair.write(d, "front-proxy-ca")
        front_client.write(d, "front-proxy-client")
        for name in ("kueue", "jobset", "lws"):
            ca.issue(f"{name}-webhook", ips=["127.0.0.1"], dns=["localhost"], server=True).write(
                layout.webhook_certs(name), "tls"
            )
        return ca

    def _write_kueue_config(self, layout: localspec.Layout, ports: localspec.Ports) -> None:
        kueue = manifests.kueue_config(
            health_port=ports.kueue_health,
            webhook_port=ports.kueue_webhook,
            cert_dir=layout.webhook_certs("kueue"),
            visibility_port=ports.kueue_visibility,
            feature_gates=self.feature_gates,
            overrides={**LWS_INTEGRATION, **self.kueue_overrides},
        )
        path = layout.config_file("kueue")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(kueue, sort_keys=False))

    def _write_configs(self, layout: localspec.Layout, ports: localspec.Ports, kwok: Path) -> None:
        self._write_kueue_config(layout, ports)
        jobset = jobset_install.config(
            health_port=ports.jobset_health,
            webhook_port=ports.jobset_webhook,
            cert_dir=layout.webhook_certs("jobset"),
        )
        lws = lws_install.config(
            health_port=ports.lws_health,
            webhook_port=ports.lws_webhook,
            cert_dir=layout.webhook_certs("lws"),
        )
        for name, cfg in (("jobset", jobset), ("lws", lws)):
            path = layout.config_file(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        layout.kwok_config.parent.mkdir(parents=True, exist_ok=True)
        layout.kwok_config.write_text(stages_yaml(kwok))

    def _spawn(
        self,
        name: str,
        binaries: Mapping[str, Path],
        args: list[str],
        extra_env: Mapping[str, str] | None = None,
    ) -> Process:
        assert self.layout is not None
        env = dict(os.environ)
        env.update(go_env(os.environ))
        env.update(
            {
                "KUBECONFIG": str(self.layout.kubeconfig),
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
                **(extra_env or {}),
            }
        )
        proc = Process(
            name,
            [str(binaries[name]), *args],
            self.layout.logs / f"{name}.log",
            env,
            self.layout.run_dir,
            die_with_parent=not self.keep,  # a kept cluster may outlive us
        )
        self.procs.append(proc)
        proc.start()
        logger.info(f"started {name} (pid {proc.pid})")
        return proc

    def _remove_webhooks(self) -> None:
        """Webhooks go before Kueue stops; failurePolicy Fail would block Job/Pod writes."""
        if not self._webhooks or self._kube is None:
            return
        api = next((p for p in self.procs if p.name == "kube-apiserver"), None)
        if api is None or not api.running():
            return
        try:
            kueue_install.remove_webhooks(self._kube, self._webhooks)
        except Exception as err:  # best effort: the processes are stopped regardless
            logger.warning(f"could not delete webhook configurations: {err}")
