"""Provider "kind": a kind cluster from a cluster shape, fake GPUs, Kueue from its Helm chart.

Driven through the kind CLI rather than pytest-kind: pytest-kind pins its own kind download
(from GitHub, which this project cannot reach) and wraps a fixture around a single default
config, while we need a pinned kind built from its Go module, our own kubeconfig path
(`--kubeconfig`, never ~/.kube), a rendered multi-worker config and a cluster kept across
sessions on request. The CLI is also what users type, so every step can be replayed by hand.

Order: prerequisites -> `kind create cluster` (or reuse one of the same name) -> GPUs on the
workers (node-status patch, as Kueue's TAS e2e does, or fake-gpu-operator's chart) -> Kueue
v0.19.2 with its chart from the Kueue module (TAS on, gates settable, pinned to the control
plane) -> wait until a dry-run Job is suspended by Kueue's webhook -> a local KWOK controller
-> park: every real node cordoned, so a runner that creates each scenario's nodes as KWOK
nodes sees exactly what it sees on the embedded cluster.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from harness import progress, toolchain
from harness.errors import HarnessError
from harness.install.kueue import wait_webhook_mutates
from harness.kube import Kube, Obj, node_ready, poll_until, wait_for
from harness.kueue.gates import parse_gates
from harness.logtail import quoted_tail
from harness.providers.base import ClusterError, ClusterHandle, ProviderBase
from harness.providers.kind import config as kindconfig
from harness.providers.kind import helm_values, prereqs
from harness.providers.kind.shape import DEFAULT_SHAPE, POOL_LABEL, ClusterShape, load_shape
from harness.providers.kwokrun import KwokController

DEFAULT_NAME = "kth"
GPU_MODES = ("patch", "operator")


logger = progress.logger("kind")


class KindCluster(ProviderBase):
    """Provider "kind": see the module docstring."""

    name = "kind"
    kueue_version = toolchain.PINS.kueue  # its Helm chart's version

    def __init__(
        self,
        *,
        shape: str | Path | None = None,
        cluster_name: str | None = None,
        keep: bool = False,
        feature_gates: str | Mapping[str, bool] | None = None,
        gpus: str | None = None,
        run_root: Path | None = None,
        **_ignored: Any,
    ) -> None:
        self.shape: ClusterShape = load_shape(
            shape or os.environ.get("KTH_KIND_SHAPE") or DEFAULT_SHAPE
        )
        self.cluster = cluster_name or os.environ.get("KTH_KIND_NAME") or DEFAULT_NAME
        self.keep = keep  # the cluster; KTH_KEEP_RUN=1 keeps only the run directory (logs)
        self.gates = parse_gates(feature_gates)
        self.gpus = gpus or os.environ.get("KTH_KIND_GPUS") or "patch"
        if self.gpus not in GPU_MODES:
            raise ClusterError(f"KTH_KIND_GPUS={self.gpus!r}: choose one of {', '.join(GPU_MODES)}")
        if self.gpus == "operator" and self.shape.gpu_resource != "nvidia.com/gpu":
            raise ClusterError(
                f"{self.shape.path}: fake-gpu-operator only advertises nvidia.com/gpu"
            )
        self.run_root = run_root
        self.run_dir: Path | None = None
        self.kubeconfig: Path | None = None
        self.tools: prereqs.Prereqs | None = None
        self.created = False
        self.kube: Kube | None = None
        self.kwok: KwokController | None = None
        self.handle: ClusterHandle | None = None
        self.timings: dict[str, float] = {}
        self._stopped = False

    # -- public ----------------------------------------------------------------------------

    def start(self) -> ClusterHandle:
        self.tools = prereqs.check(env=os.environ)
        self.tools.raise_if_missing()
        root = self.run_root or Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(prefix="kth-kind-", dir=root))
        self.kubeconfig = self.run_dir / "kubeconfig"
        try:
            return self._start(time.monotonic())
        except BaseException:
            self.stop()
            raise

    def workers(self) -> list[str]:
        """Node names of the shape's workers, in shape order."""
        return [w.node_name(self.cluster) for w in self.shape.workers]

    def reset(self) -> None:
        """Back to the shape: its labels and GPU counts on every worker."""
        kube = self._connected()
        for worker in self.shape.workers:
            name = worker.node_name(self.cluster)
            labels = kube.get("v1", "Node", name)["metadata"].get("labels") or {}
            patch = kindconfig.label_patch(
                kindconfig.worker_labels(worker), labels, self.shape.label_keys()
            )
            patch["spec"] = {"taints": [], "unschedulable": False}
            status = kindconfig.gpu_status_patch(self.shape.gpu_resource, worker.pool.gpus)
            self._patch_node(kube, name, patch, status)
        control_plane = f"{self.cluster}-control-plane"
        if kube.get_or_none("v1", "Node", control_plane) is not None:
            self._patch_node(kube, control_plane, {"spec": {"unschedulable": False}})

    def park(self) -> None:
        """Cordon every real node (workers and control plane) so scenarios see only the KWOK
        nodes a runner creates, exactly as on the embedded cluster: Kueue's TAS node cache
        drops unschedulable nodes. reset() undoes it."""
        kube = self._connected()
        for name in [*self.workers(), f"{self.cluster}-control-plane"]:
            if kube.get_or_none("v1", "Node", name) is not None:
                self._patch_node(kube, name, {"spec": {"unschedulable": True}})

    def logs(self) -> dict[str, Path]:
        """kwok's log and Kueue's pod logs (fetched now from the cluster)."""
        out = {"kwok": self.kwok.log} if self.kwok is not None else {}
        if self.kube is not None and self.run_dir is not None:
            out.update(self._kueue_logs(self.run_dir / "logs"))
        return out

    def check(self) -> None:
        if self.kwok is not None:
            self.kwok.check()

    def export_logs(self) -> Path | None:
        """`kind export logs` (node journals, containers) into the run dir, for artifacts."""
        if self.run_dir is None:
            return None
        dest = self.run_dir / "kind-logs"
        self._kind(["export", "logs", str(dest), "--name", self.cluster], "kind export logs", 300)
        return dest

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.kwok is not None:
            self.kwok.stop()
        if self.keep and self.kube is not None:
            try:  # leave the shape as the user wrote it, not the last scenario's
                self.reset()
            except HarnessError as err:
                logger.warning(f"could not restore the shape on the kept cluster: {err}")
        if self.kube is not None:
            self.kube.close()
        if os.environ.get("KTH_KIND_EXPORT_LOGS") == "1" and (self.created or self.keep):
            try:  # CI: node journals and container logs end up in the uploaded run dir
                self.export_logs()
            except ClusterError as err:
                logger.warning(str(err))
        if self.keep and self.kubeconfig is not None and self.kubeconfig.exists():
            logger.info(
                f"kept kind cluster {self.cluster!r}: export KUBECONFIG={self.kubeconfig} "
                f"(or `kind get kubeconfig --name {self.cluster}`); "
                f"remove it with `kind delete cluster --name {self.cluster}`"
            )
        elif self.created:
            argv = ["delete", "cluster", "--name", self.cluster]
            try:
                self._kind([*argv, "--kubeconfig", str(self.kubeconfig)], "kind delete", 300)
            except ClusterError as err:
                logger.warning(str(err))
        if not self.keep and self.run_dir is not None and os.environ.get("KTH_KEEP_RUN") != "1":
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- start-up --------------------------------------------------------------------------

    def _start(self, t0: float) -> ClusterHandle:
        assert self.run_dir is not None and self.kubeconfig is not None
        config = self.run_dir / "kind-config.yaml"
        config.write_text(yaml.safe_dump(kindconfig.named_config(self.shape, self.cluster)))
        if self.cluster in self._kind(["get", "clusters"], "kind get clusters", 60).split():
            logger.info(f"reusing kind cluster {self.cluster!r} (delete it to start from scratch)")
            self._kind(
                [
                    "export",
                    "kubeconfig",
                    "--name",
                    self.cluster,
                    "--kubeconfig",
                    str(self.kubeconfig),
                ],
                "kind export kubeconfig",
                60,
            )
        else:
            logger.info(f"creating kind cluster {self.cluster!r} from {self.shape.path}")
            self.created = True
            self._kind(
                [
                    "create",
                    "cluster",
                    "--name",
                    self.cluster,
                    "--config",
                    str(config),
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "--wait",
                    "180s",
                ],
                "kind create cluster",
                900,
            )
        self._mark("cluster", t0)
        kube = self.kube = Kube(self.kubeconfig)
        self._check_shape(kube)
        for name in self.workers():
            wait_for(kube, "v1", "Node", name, node_ready, what="Ready", timeout=180)
        self._fake_gpus(kube)
        self._mark("fake GPUs", t0)
        self.install_kueue()
        wait_webhook_mutates(kube, timeout=180)
        self._mark("kueue webhook", t0)
        self.kwok = KwokController(self.kubeconfig, self.run_dir)
        self.kwok.start()
        self.park()
        self._mark("kwok", t0)
        self.handle = ClusterHandle("kind", self.kubeconfig, self.run_dir, kube.host)
        return self.handle

    def _check_shape(self, kube: Kube) -> None:
        """A reused cluster must have been created from the same shape."""
        found = sorted(n["metadata"]["name"] for n in
                       kube.list("v1", "Node", labels=kindconfig.WORKER_LABEL))  # fmt: skip
        if found != sorted(self.workers()):
            raise ClusterError(
                f"kind cluster {self.cluster!r} has workers {found or 'none'}, but shape "
                f"{self.shape.name} needs {self.workers()}: delete it (`kind delete cluster "
                f"--name {self.cluster}`) or pick another name with KTH_KIND_NAME"
            )

    def _fake_gpus(self, kube: Kube) -> None:
        if self.gpus == "patch":
            self.reset()
            return
        values = self._write(
            "fake-gpu-operator-values.yaml", helm_values.fake_gpu_operator_values(self.shape)
        )
        self._helm(
            [
                "upgrade",
                "--install",
                "fake-gpu-operator",
                helm_values.FAKE_GPU_CHART,
                "--version",
                helm_values.FAKE_GPU_VERSION,
                "--namespace",
                helm_values.FAKE_GPU_NAMESPACE,
                "--create-namespace",
                "-f",
                str(values),
                "--wait",
                "--timeout",
                "10m",
            ],
            "helm install fake-gpu-operator",
        )
        for worker in self.shape.workers:
            name, want = worker.node_name(self.cluster), str(worker.pool.gpus)

            def probe(name: str = name, want: str = want) -> tuple[bool, str]:
                node = kube.get("v1", "Node", name)
                got = ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu")
                pool = (node["metadata"].get("labels") or {}).get(POOL_LABEL)
                return got == want, f"allocatable nvidia.com/gpu={got} (pool {pool})"

            poll_until(probe, what=f"node {name} to advertise {want} GPUs", timeout=300)

    def install_kueue(self, *, wait: bool = True) -> None:
        """`helm upgrade --install` Kueue's chart from its Go module with our values (JobSet's
        first); with `wait`, until its Deployment is available."""
        self.install_jobset(wait=wait)
        chart = toolchain.kueue_module_dir() / "charts" / "kueue"
        values = helm_values.kueue_values(
            chart, version=toolchain.PINS.kueue, feature_gates=self.gates
        )
        self._helm_install(
            helm_values.KUEUE_RELEASE, chart, helm_values.KUEUE_NAMESPACE, values, wait
        )

    def install_jobset(self, *, wait: bool = True) -> None:
        """JobSet v0.12.0 (the version Kueue v0.19.2 is built against) from its chart, as on
        the embedded cluster: workloads with several pod sets are JobSets with real pods."""
        chart = toolchain.jobset_module_dir() / "charts" / "jobset"
        values = helm_values.jobset_values(version=toolchain.PINS.jobset)
        release, namespace = helm_values.JOBSET_RELEASE, helm_values.JOBSET_NAMESPACE
        self._helm_install(release, chart, namespace, values, wait)

    def _helm_install(
        self, release: str, chart: Path, namespace: str, values: Any, wait: bool
    ) -> None:
        path = self._write(f"{release}-values.yaml", values)
        argv = ["upgrade", "--install", release, str(chart), "--namespace", namespace,
                "--create-namespace", "-f", str(path)]  # fmt: skip
        if wait:
            argv += ["--wait", "--timeout", "10m"]
        self._helm(argv, f"helm install {release}")

    # -- helpers ---------------------------------------------------------------------------

    def _connected(self) -> Kube:
        if self.kube is None:
            raise ClusterError("kind cluster not started")
        return self.kube

    def _patch_node(self, kube: Kube, name: str, patch: Obj, status: Sequence[Obj] = ()) -> None:
        """A merge patch of a real node's metadata/spec, and a JSON patch of its status."""
        kube.patch("v1", "Node", name, patch)
        if status:
            kube.patch("v1", "Node", name, list(status), subresource="status", patch_type="json")

    def _write(self, name: str, data: Any) -> Path:
        assert self.run_dir is not None
        path = self.run_dir / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.tools is not None and self.tools.engine == "podman":
            env["KIND_EXPERIMENTAL_PROVIDER"] = "podman"
        dirs = [str(p.parent) for p in (self.tools.paths.values() if self.tools else [])]
        env["PATH"] = os.pathsep.join([*dict.fromkeys(dirs), env.get("PATH", "")])
        return env

    def _tool(self, name: str) -> str:
        path = self.tools.paths.get(name) if self.tools else None
        return str(path) if path else name

    def _kind(self, args: list[str], what: str, timeout: float) -> str:
        return self._run([self._tool("kind"), *args], what, timeout)

    def _helm(self, args: list[str], what: str) -> str:
        assert self.kubeconfig is not None
        return self._run(
            [self._tool("helm"), *args, "--kubeconfig", str(self.kubeconfig)], what, 900
        )

    def _run(self, argv: list[str], what: str, timeout: float) -> str:
        """Run a CLI step with its output in run_dir/logs/<what>.log; ClusterError on failure."""
        assert self.run_dir is not None
        log = self.run_dir / "logs" / (what.replace(" ", "-") + ".log")
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, env=self._env(), timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise ClusterError(
                f"{what}: no result after {timeout:.0f}s ({' '.join(argv)})"
            ) from None
        log.write_text(f"$ {' '.join(argv)}\n{proc.stdout}\n{proc.stderr}")
        if proc.returncode != 0:
            raise ClusterError(f"{what} failed (exit {proc.returncode}); {quoted_tail(log, 20)}")
        return proc.stdout

    def _kueue_logs(self, dest: Path) -> dict[str, Path]:
        """Kueue's controller log via kubectl (the API adapter speaks JSON only)."""
        assert self.kubeconfig is not None
        deploy = f"deploy/{helm_values.KUEUE_RELEASE}-controller-manager"
        try:
            text = self._run(
                [
                    self._tool("kubectl"),
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "-n",
                    helm_values.KUEUE_NAMESPACE,
                    "logs",
                    deploy,
                    "--tail=-1",
                ],
                "kubectl logs kueue",
                60,
            )
        except ClusterError as err:
            logger.warning(f"could not fetch Kueue's log: {err}")
            return {}
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "kueue.log").write_text(text)
        return {"kueue": dest / "kueue.log"}

    def _mark(self, phase: str, t0: float) -> None:
        self.timings[phase] = round(time.monotonic() - t0, 1)
        logger.info(f"{phase} ready after {self.timings[phase]:.0f}s")
