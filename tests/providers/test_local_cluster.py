"""The embedded cluster for real: start, KWOK GPU nodes, Kueue's webhook, clean stop.

Marked `cluster`: these run the built upstream binaries (the toolchain builds them on first
use, which takes a while on a fresh machine).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.kube import (
    Kube,
    events,
    has_condition,
    node_ready,
    poll_until,
    wait_for,
    workloads,
)
from harness.providers import ComponentCrashed
from harness.providers.kwok import fake_node, wait_nodes_ready
from harness.providers.local import spec as localspec
from harness.providers.local.cluster import LocalCluster
from harness.runner.shaping import await_webhook_namespace
from harness.toolchain.cache import cache_root
from tests.ctrl_c import restore_ctrl_c

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
RACK = "cloud.provider.com/topology-rack"


@pytest.fixture(scope="module")
def kube(cluster: LocalCluster) -> Iterator[Kube]:
    """API connection to the module's cluster."""
    assert cluster.handle is not None
    client = Kube(cluster.handle.kubeconfig)
    yield client
    client.close()


def gpu_container(gpus: int) -> dict[str, object]:
    """A pause container requesting (and limited to) `gpus` GPUs."""
    gpu = {"nvidia.com/gpu": str(gpus)}
    return {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": gpu, "limits": dict(gpu)},
    }


def _namespace(kube: Kube, name: str) -> str:
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def _processes_mentioning(run_dir: str) -> list[int]:
    """PIDs whose command line mentions the run dir's name: every component's argv does,
    etcd's through its data dir (which may live on /dev/shm, outside the run dir)."""
    text = Path(run_dir).name
    assert text.startswith("kth-local-")
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_cluster_serves_pinned_kubernetes(cluster: LocalCluster, kube: Kube) -> None:
    assert cluster.handle is not None
    assert kube.server_version() == "v1.36.1"
    assert cluster.handle.kubeconfig.parent == cluster.handle.run_dir
    assert set(cluster.logs()) == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "jobset",
        "lws",
        "kueue",
    }
    cluster.check()


def test_every_component_runs_with_its_share_of_the_cores(cluster: LocalCluster) -> None:
    """Each Go process gets GOGC and GOMAXPROCS from the harness unless the environment set
    them: one P per process when this test's pytest-xdist workers outnumber the cores."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    share = max(1, (os.cpu_count() or 1) // workers)
    expected = {
        "GOGC": os.environ.get("GOGC", "300"),
        "GOMAXPROCS": os.environ.get("GOMAXPROCS", str(share)),
    }
    for name, pid in cluster.pids().items():
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        env = dict(e.decode().split("=", 1) for e in raw if b"=" in e)
        got = {k: env.get(k) for k in expected}
        assert got == expected, f"{name}: {got}"


def test_kwok_gpu_node_becomes_ready_and_keeps_pods_running(kube: Kube) -> None:
    node = fake_node(
        "gpu-node-1",
        allocatable={"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"},
        labels={"cloud.provider.com/topology-rack": "r1"},
    )
    kube.create(node)
    (ready,) = wait_nodes_ready(kube, ["gpu-node-1"], timeout=60)
    assert ready["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert ready["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node_ready(ready)[0]

    patch = {"status": {"allocatable": {"nvidia.com/gpu": "6"}}}
    kube.patch("v1", "Node", "gpu-node-1", patch, subresource="status")
    time.sleep(2)  # KWOK's heartbeat must not undo it
    assert kube.get("v1", "Node", "gpu-node-1")["status"]["allocatable"]["nvidia.com/gpu"] == "6"

    ns = _namespace(kube, "kwok-pods")
    gpu_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "spec": {"containers": [gpu_container(2)]},
    }
    await_webhook_namespace(kube, gpu_pod, timeout=30, interval=0.2)
    kube.create(gpu_pod)
    pod = wait_for(
        kube, "v1", "Pod", "p", has_condition("Ready"), namespace=ns, what="Ready", timeout=60
    )
    assert pod["spec"]["nodeName"] == "gpu-node-1"  # placed by the real kube-scheduler
    time.sleep(3)  # no pod-complete stage: the pod must still be Running afterwards
    assert kube.get("v1", "Pod", "p", ns)["status"]["phase"] == "Running"


def test_kueue_webhook_suspends_job_and_controller_creates_workload(kube: Kube) -> None:
    ns = _namespace(kube, "webhook-check")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "missing-queue"},
        },
        "spec": {
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        },
    }
    created = kube.create(job)
    assert created["spec"]["suspend"] is True

    def workload_seen() -> tuple[bool, str]:
        items = workloads(kube, ns)
        return bool(items), f"{len(items)} workloads"

    poll_until(workload_seen, what=f"a Workload for Job {ns}/j", timeout=60)
    (wl,) = workloads(kube, ns)
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert wl["spec"]["queueName"] == "missing-queue"

    def event_seen() -> tuple[bool, str]:
        reasons = [e.get("reason") for e in events(kube, ns, kind="Job", name="j")]
        return "CreatedWorkload" in reasons, f"Job events {reasons}"

    poll_until(event_seen, what=f"Kueue's CreatedWorkload event on Job {ns}/j", timeout=30)


def test_kueue_manages_jobsets_pod_set_per_replicated_job(kube: Kube) -> None:
    """Only JobSet's CRD is installed: Kueue's JobSet webhook suspends a queued JobSet and
    its reconciler builds a Workload with one pod set per replicated Job, in order."""
    from harness.install.kueue import jobset_managed

    assert jobset_managed(kube)
    ns = _namespace(kube, "jobset-check")
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        }
    }
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "js",
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "missing-queue"},
        },
        "spec": {
            "replicatedJobs": [
                {
                    "name": name,
                    "replicas": 1,
                    "template": {
                        "spec": {"parallelism": n, "completions": n, "template": template}
                    },
                }
                for name, n in (("leader", 1), ("workers", 3))
            ]
        },
    }
    assert kube.create(jobset)["spec"]["suspend"] is True

    def workload_seen() -> tuple[bool, str]:
        items = workloads(kube, ns)
        return bool(items), f"{len(items)} workloads"

    poll_until(workload_seen, what=f"a Workload for JobSet {ns}/js", timeout=60)
    (wl,) = workloads(kube, ns)
    pod_sets = [(p["name"], p["count"]) for p in wl["spec"]["podSets"]]
    assert pod_sets == [("leader", 1), ("workers", 3)]


def test_job_outside_queue_is_left_alone(kube: Kube) -> None:
    ns = _namespace(kube, "unmanaged")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": ns},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                }
            }
        },
    }
    assert kube.create(job, dry_run=True)["spec"].get("suspend") is False


def test_tas_places_job_in_the_only_rack_that_fits(kube: Kube) -> None:
    """Rack r1 has 2 GPUs and rack r2 has 4: a Job needing 2x2 GPUs within one rack can only
    land on r2's node, through Kueue's TAS admission, ungating and the real scheduler."""
    group = {"cloud.provider.com/node-group": "tas-smoke"}
    for name, rack, gpus in (("smoke-a", "r1", "2"), ("smoke-b", "r2", "4")):
        kube.create(
            fake_node(
                name,
                allocatable={"nvidia.com/gpu": gpus, "cpu": "8", "memory": "64Gi"},
                labels={**group, "cloud.provider.com/topology-rack": rack},
            )
        )
    wait_nodes_ready(kube, ["smoke-a", "smoke-b"], timeout=60)
    api = "kueue.x-k8s.io/v1beta2"
    ns = _namespace(kube, "tas-smoke")
    for obj in (
        {
            "kind": "Topology",
            "metadata": {"name": "smoke-topology"},
            "spec": {
                "levels": [
                    {"nodeLabel": "cloud.provider.com/topology-rack"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        },
        {
            "kind": "ResourceFlavor",
            "metadata": {"name": "smoke-flavor"},
            "spec": {"nodeLabels": group, "topologyName": "smoke-topology"},
        },
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "smoke-cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "smoke-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "100"},
                                    {"name": "memory", "nominalQuota": "1000Gi"},
                                    {"name": "nvidia.com/gpu", "nominalQuota": "100"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "kind": "LocalQueue",
            "metadata": {"name": "smoke-lq", "namespace": ns},
            "spec": {"clusterQueue": "smoke-cq"},
        },
    ):
        kube.create({"apiVersion": api, **obj})
    wait_for(
        kube, api, "ClusterQueue", "smoke-cq", has_condition("Active"), what="Active", timeout=60
    )
    kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "train",
                "namespace": ns,
                "labels": {"kueue.x-k8s.io/queue-name": "smoke-lq"},
            },
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "completionMode": "Indexed",
                "template": {
                    "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [gpu_container(2)],
                    },
                },
            },
        }
    )

    def admitted() -> tuple[bool, str]:
        items = workloads(kube, ns)
        if not items:
            return False, "no Workload yet"
        return has_condition("Admitted")(items[0])

    poll_until(admitted, what=f"the Workload of Job {ns}/train to be Admitted", timeout=60)
    (wl,) = workloads(kube, ns)
    (psa,) = wl["status"]["admission"]["podSetAssignments"]
    assert psa["topologyAssignment"]

    def pods_placed() -> tuple[bool, str]:
        pods = kube.list("v1", "Pod", ns)
        seen = {
            p["metadata"]["name"]: (p["spec"].get("nodeName"), p["status"].get("phase"))
            for p in pods
        }
        ok = len(pods) == 2 and all(ph == "Running" and n for n, ph in seen.values())
        return ok, str(seen)

    poll_until(pods_placed, what="both pods Running on a node", timeout=60)
    assert {p["spec"]["nodeName"] for p in kube.list("v1", "Pod", ns)} == {"smoke-b"}


def test_stop_leaves_no_process_port_or_run_dir() -> None:
    cluster = LocalCluster()
    handle = cluster.start()
    pids = cluster.pids()
    ports = cluster.ports
    assert (
        ports is not None and len(pids) == 8
    )  # etcd, API server, controller manager, scheduler, KWOK, JobSet, LWS, Kueue
    assert _processes_mentioning(str(handle.run_dir))
    # Kueue's webhooks (failurePolicy Fail) must be gone before Kueue stops.
    kube = Kube(handle.kubeconfig)
    hooks = [(w["apiVersion"], w["kind"], w["metadata"]["name"]) for w in cluster._webhooks]
    assert hooks and all(kube.get_or_none(*h) is not None for h in hooks)
    (kueue,) = [p for p in cluster.procs if p.name == "kueue"]
    left_at_kueue_stop: list[str] = []
    stop_kueue = kueue.stop

    def look_then_stop() -> None:
        left_at_kueue_stop.extend(h[2] for h in hooks if kube.get_or_none(*h) is not None)
        left_at_kueue_stop.append("(looked)")
        stop_kueue()

    kueue.stop = look_then_stop  # type: ignore[method-assign,assignment]
    cluster.stop()
    kube.close()
    assert left_at_kueue_stop == ["(looked)"]
    assert not [p for p in pids.values() if Path(f"/proc/{p}").exists()]
    assert not _processes_mentioning(str(handle.run_dir))
    assert not [n for n, p in ports.as_dict().items() if _port_open(p)]
    assert not handle.run_dir.exists()
    peak = cluster.peak_rss_kib()
    assert set(peak) == set(pids) and all(v > 0 for v in peak.values())


_START_THEN_WAIT = """
import sys, time
from harness.providers.local.cluster import LocalCluster
from harness.runner.shaping import await_webhook_namespace
cluster = LocalCluster()
handle = cluster.start()
assert cluster.layout is not None
print(handle.run_dir, cluster.layout.etcd_data, flush=True)
time.sleep(600)
"""


def test_killed_starter_leaves_no_process_or_files() -> None:
    """SIGKILL gives the harness no chance to stop its cluster (pytest-xdist kills a worker
    10 s after Ctrl-C reached the controller): the components die with it, and the janitor
    removes the etcd data (on /dev/shm: memory) and the run dir."""
    starter = subprocess.Popen(
        [sys.executable, "-c", _START_THEN_WAIT],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    with starter:
        try:
            assert starter.stdout is not None
            run_dir, etcd_data = starter.stdout.readline().split()
            assert Path(run_dir).is_dir() and Path(etcd_data).is_dir()
            assert _processes_mentioning(run_dir)
        finally:
            starter.kill()

    def all_gone() -> tuple[bool, str]:
        left = [p for p in (run_dir, etcd_data) if Path(p).exists()]
        pids = _processes_mentioning(run_dir)
        return not left and not pids, f"paths {left}, processes {pids}"

    poll_until(all_gone, what="the killed starter's cluster to be gone", timeout=30)


@pytest.mark.parametrize("keep_run_dir", [False, True])
def test_component_crash_at_start_is_reported_and_everything_stops(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, keep_run_dir: bool
) -> None:
    fake = tmp_path / "kueue"
    fake.write_text("#!/bin/sh\necho 'Unable to load the configuration: boom' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KTH_KUEUE", str(fake))
    if keep_run_dir:
        monkeypatch.setenv("KTH_KEEP_RUN", "1")
    cluster = LocalCluster()
    with pytest.raises(ComponentCrashed, match=r"(?s)kueue exited with code 1.*boom"):
        cluster.start()
    assert cluster.layout is not None
    run_dir = cluster.layout.run_dir
    assert not _processes_mentioning(str(run_dir))
    assert not cluster.layout.etcd_data.exists()
    if keep_run_dir:  # kept for inspection: the logs are there
        assert "boom" in (run_dir / "logs" / "kueue.log").read_text()
        shutil.rmtree(run_dir)
    else:
        assert not run_dir.exists()


def test_port_taken_after_allocation_is_retried_on_new_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another process grabs etcd's port between allocation and bind: start-up starts over."""
    squatter = socket.create_server(("127.0.0.1", 0))
    real = localspec.Ports.allocate
    calls: list[localspec.Ports] = []

    def allocate() -> localspec.Ports:
        ports = real()
        if not calls:
            ports = dataclasses.replace(ports, etcd=squatter.getsockname()[1])
        calls.append(ports)
        return ports

    monkeypatch.setattr(localspec.Ports, "allocate", staticmethod(allocate))
    cluster = LocalCluster()
    try:
        handle = cluster.start()
        assert len(calls) == 2 and cluster.ports == calls[1]
        assert Kube(handle.kubeconfig).server_version() == "v1.36.1"
    finally:
        cluster.stop()
        squatter.close()


def _isolated_env(home: Path) -> dict[str, str]:
    """Environment with a fresh HOME, so the test can see whether anything writes ~/.kube or
    ~/.kwok; the Go and harness caches stay where they are."""
    go_env = subprocess.run(
        ["go", "env", "GOMODCACHE", "GOCACHE", "GOPATH"], check=True, capture_output=True, text=True
    ).stdout.split()
    home.mkdir()
    return {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "HOME": str(home),
        "GOMODCACHE": go_env[0],
        "GOCACHE": go_env[1],
        "GOPATH": go_env[2],
        "KTH_CACHE": str(cache_root()),
    }


def _spawn_cli(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.providers.local", "up", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=restore_ctrl_c,
    )


def _read_until(proc: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    proc.kill()
    raise AssertionError(f"no {marker!r} within {timeout}s; output:\n" + "\n".join(lines))


def _run_dir(lines: list[str]) -> str:
    return next(line.split("run dir ", 1)[1] for line in lines if "run dir " in line)


@pytest.mark.parametrize(
    ("sig", "when", "code"),
    [
        (signal.SIGINT, "Ctrl-C stops it", 0),  # Ctrl-C on a ready cluster
        (signal.SIGTERM, "started kube-apiserver", 143),  # SIGTERM halfway through start-up
    ],
)
def test_signal_to_cli_leaves_nothing_behind(
    sig: signal.Signals, when: str, code: int, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    proc = _spawn_cli(_isolated_env(home))
    try:
        lines = _read_until(proc, when, timeout=300)
        run_dir = _run_dir(lines)
        pids = [int(m.group(1)) for m in map(re.compile(r"\(pid (\d+)\)").search, lines) if m]
        ports = [int(line.split()[2]) for line in lines if line.startswith("port ")]
        assert pids and _processes_mentioning(run_dir)
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, rest
    assert not _processes_mentioning(run_dir)
    assert not [p for p in pids if Path(f"/proc/{p}").exists()]
    assert not [p for p in ports if _port_open(p)]
    assert not Path(run_dir).exists()
    assert not (home / ".kube").exists() and not (home / ".kwok").exists()


def test_detached_cluster_outlives_cli_until_down() -> None:
    up = subprocess.run(
        [sys.executable, "-m", "harness.providers.local", "up", "--detach"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = (up.stdout + up.stderr).splitlines()
    run_dir = _run_dir(lines)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        pids = [int(line.split()[2]) for line in lines if line.startswith("pid ")]
        assert len(pids) == 8
        assert all(Path(f"/proc/{p}").exists() for p in pids)  # the CLI exited, they did not
        kube = Kube(Path(run_dir) / "kubeconfig")
        assert kube.server_version() == "v1.36.1"
        kube.close()
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "harness.providers.local", "down", run_dir],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stdout + down.stderr
    assert "kueue" in down.stdout
    assert not _processes_mentioning(run_dir)
    assert not Path(run_dir).exists()
