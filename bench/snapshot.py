"""Benchmark of `snapshot` and `simulate` on a large cluster: the embedded cluster (real
API server, Kueue, KWOK) grown to 1,000 then 5,000 KWOK nodes with 4 bound pods each
(4,000 then 20,000 pods, owned by ConfigMaps so the garbage collector keeps them) and a few
Kueue TAS jobs admitted.

Prints numbers; asserts nothing. `python bench/snapshot.py [--sizes 1000,5000] [--repeat 3]`:
per size, the seconds to read the cluster (per kind), to build and write the scenario, to
load it back, for `simulate` to predict one 64-pod job with the fit model, and for what
`simulate --from SNAPSHOT.yaml` does end to end: parse the file, load it, predict.
`--offline` skips the cluster: the same objects (nodes, bound pods, admitted TAS jobs) are
made in memory, so the file-side phases are timed in seconds instead of minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from big import LEVELS  # noqa: E402  (bench/ is on sys.path)

from harness import progress  # noqa: E402
from harness.kube import KUEUE_API, Kube, Obj, poll_until  # noqa: E402
from harness.live import manifests, simulate  # noqa: E402
from harness.live.cluster_read import ClusterState, read_cluster  # noqa: E402
from harness.live.snapshot import render, render_json, snapshot  # noqa: E402
from harness.live.submissions import Cluster, submissions  # noqa: E402
from harness.providers.kwok import fake_node  # noqa: E402
from harness.providers.local.cluster import LocalCluster  # noqa: E402
from harness.scenario.loader import scenario_from_data  # noqa: E402
from harness.scenario.strict_yaml import parse_yaml  # noqa: E402

PODS_PER_NODE = 4
OWNERS = 50
JOBS = 10
NS = "bench"
GPU = "nvidia.com/gpu"


def kueue_objects() -> list[Obj]:
    quota = [{"name": r, "nominalQuota": q} for r, q in ((GPU, "100000"), ("cpu", "1000000"))]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": KUEUE_API,
            "kind": "Topology",
            "metadata": {"name": "bench"},
            "spec": {"levels": [{"nodeLabel": lv} for lv in LEVELS]},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": {"name": "bench"},
            "spec": {"nodeLabels": {"bench.io/pool": "gpu"}, "topologyName": "bench"},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": {"name": "bench"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": [GPU, "cpu"],
                        "flavors": [{"name": "bench", "resources": quota}],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": "bench", "namespace": NS},
            "spec": {"clusterQueue": "bench"},
        },
    ]


def nodes(start: int, stop: int) -> list[Obj]:
    out = []
    for i in range(start, stop):
        labels = {
            LEVELS[0]: f"z{i // 1000}",
            LEVELS[1]: f"b{i // 100}",
            LEVELS[2]: f"r{i // 10}",
            "bench.io/pool": "gpu",
        }
        alloc = {GPU: "8", "cpu": "64", "memory": "512Gi", "pods": "110"}
        out.append(fake_node(f"node-{i:05d}", allocatable=alloc, labels=labels))
    return out


def pods(start: int, stop: int, owners: list[Obj]) -> list[Obj]:
    out = []
    for i in range(start, stop):
        for k in range(PODS_PER_NODE):
            owner = owners[(i * PODS_PER_NODE + k) % len(owners)]["metadata"]
            ref = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["name"],
                "uid": owner["uid"],
                "controller": True,
            }
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"p-{i:05d}-{k}",
                        "namespace": NS,
                        "ownerReferences": [ref],
                    },
                    "spec": {
                        "nodeName": f"node-{i:05d}",
                        "terminationGracePeriodSeconds": 0,
                        "containers": [
                            {
                                "name": "c",
                                "image": "x",
                                "resources": {
                                    "requests": {"cpu": "2", GPU: "1"},
                                    "limits": {GPU: "1"},
                                },
                            }
                        ],
                    },
                }
            )
    return out


def tas_job(name: str, count: int, level: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"kueue.x-k8s.io/queue-name": "bench"},
        },
        "spec": {
            "parallelism": count,
            "completions": count,
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": level}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"limits": {GPU: "1"}}}
                    ],
                },
            },
        },
    }


def all_admitted(kube: Kube, count: int) -> tuple[bool, str]:
    listed = kube.list(KUEUE_API, "Workload", NS)
    done = [
        w
        for w in listed
        if any(
            c["type"] == "Admitted" and c["status"] == "True"
            for c in (w.get("status") or {}).get("conditions") or []
        )
    ]
    return len(done) == count, f"{len(done)} of {len(listed)} Workloads admitted"


def grow(kube: Kube, start: int, stop: int, owners: list[Obj]) -> None:
    began = time.perf_counter()
    kube.create_all(nodes(start, stop))
    kube.create_all(pods(start, stop, owners))
    print(
        f"  created nodes {start}..{stop - 1} and their pods in {time.perf_counter() - began:.0f}s"
    )


class Phases:
    """Wall and CPU seconds per phase (the machine is shared: CPU seconds are what this
    process itself spent; reading the cluster is mostly the API server's time)."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.wall.setdefault(name, []).append(time.perf_counter() - wall)
        self.cpu.setdefault(name, []).append(time.process_time() - cpu)

    def show(self, name: str, label: str, extra: str = "") -> None:
        wall, cpu = statistics.median(self.wall[name]), statistics.median(self.cpu[name])
        print(f"  {label:<24} {wall:6.2f} s wall, {cpu:6.2f} s cpu{extra}")


def offline_state(size: int) -> ClusterState:
    """What read_cluster would return for the cluster main() grows to `size` nodes, made in
    memory: Ready nodes, their bound pods, and JOBS admitted 8-pod jobs, one rack each."""
    by_kind: dict[str, list[Obj]] = {}
    for obj in kueue_objects():
        by_kind.setdefault(obj["kind"], []).append(obj)
    node_list = nodes(0, size)
    for node in node_list:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    owners = [{"metadata": {"name": f"owner-{i}", "uid": f"uid-{i}"}} for i in range(OWNERS)]
    pod_list = pods(0, size, owners)
    for pod in pod_list:
        pod["status"] = {"phase": "Running"}
    return ClusterState(
        server="https://offline",
        context="offline",
        topologies=by_kind["Topology"],
        resource_flavors=by_kind["ResourceFlavor"],
        cluster_queues=by_kind["ClusterQueue"],
        local_queues=by_kind["LocalQueue"],
        nodes=node_list,
        pods=pod_list,
        workloads=[admitted_workload(j) for j in range(JOBS)],
    )


def admitted_workload(j: int) -> Obj:
    """Kueue's Workload for tas_job(f"job-{j}", 8, rack) admitted on rack r{j}."""
    hosts = [f"node-{k:05d}" for k in range(j * 10, j * 10 + 8)]
    job = tas_job(f"job-{j}", 8, LEVELS[2])
    assignment = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": len(hosts),
                "valuesPerLevel": [{"individual": {"roots": hosts}}],
                "podCounts": {"individual": [1] * len(hosts)},
            }
        ],
    }
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": {
            "name": f"job-job-{j}-x{j:04d}",
            "namespace": NS,
            "creationTimestamp": f"2026-01-01T00:00:{j:02d}Z",
            "ownerReferences": [{"kind": "Job", "name": f"job-{j}", "controller": True}],
        },
        "spec": {
            "queueName": "bench",
            "podSets": [
                {
                    "name": "main",
                    "count": 8,
                    "template": job["spec"]["template"],
                    "topologyRequest": {"required": LEVELS[2]},
                }
            ],
        },
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
            "admission": {
                "clusterQueue": "bench",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": 8,
                        "flavors": {GPU: "bench"},
                        "resourceUsage": {GPU: "8"},
                        "topologyAssignment": assignment,
                    }
                ],
            },
        },
    }


def measure(kube: Kube | None, size: int, repeat: int, sim: bool) -> None:
    """Time every phase `repeat` times; without `kube`, on offline_state(size)."""
    phase = Phases()
    for _ in range(repeat):
        with phase("read"):
            state = read_cluster(kube) if kube is not None else offline_state(size)
        with phase("build"):
            snap = snapshot(state)
            text = render(snap)
        as_json = render_json(snap)
        with phase("load"):
            scenario_from_data(snap.data, "snapshot")
        with phase("yaml"):
            parse_yaml(text, "snapshot.yaml")
        with phase("json"):
            json.loads(as_json)
        job = tas_job("probe", 64, LEVELS[1])
        with phase("simulate"):
            subs = submissions(manifests.read(job), Cluster.of(snap.data), NS)
            outcome = simulate.predict(snap.data, subs, "fit", "snapshot")["probe"].outcome
        with phase("file"):
            data = parse_yaml(text, "snapshot.yaml")
            subs = submissions(manifests.read(job), Cluster.of(data), NS)
            simulate.predict(data, subs, "fit", "snapshot.yaml")
        if sim:
            with phase("sim"):
                simulate.predict(snap.data, subs, "sim", "snapshot")
    print(
        f"{size} nodes, {len(state.pods)} pods, {len(snap.data['admitted'])} admitted, "
        f"{len(snap.data['usage'])} usage entries, {len(text) / 1e6:.1f} MB of YAML "
        f"(median of {repeat}):"
    )
    if kube is not None:
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in state.seconds.items() if v >= 0.05)
        phase.show("read", "read the cluster", f" (last, per kind: {kinds})")
    phase.show("build", "build + write YAML")
    phase.show("load", "load it (from data)")
    phase.show("yaml", "parse the file as YAML")
    phase.show("json", "parse the file as JSON")
    verdict = "admitted" if outcome.admitted else "pending"
    phase.show("simulate", "simulate (fit engine)", f" (64 pods, required block: {verdict})")
    phase.show(
        "file", "load + simulate (fit)", " (simulate --from the YAML file: parse, load, fit)"
    )
    if sim:
        phase.show("sim", "simulate (sim engine)", " (a kueue-sim process per call)")


def main() -> None:
    progress.show_on_stderr()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,5000", help="node counts, ascending")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per size (median)")
    parser.add_argument("--sim", action="store_true", help="also time simulate --engine sim")
    parser.add_argument(
        "--offline", action="store_true", help="no cluster: the same objects made in memory"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.offline:
        for size in sizes:
            measure(None, size, args.repeat, args.sim)
        return
    cluster = LocalCluster()
    try:
        kube = Kube(cluster.start().kubeconfig)
        kube.create_all(kueue_objects())
        owners = [
            kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"owner-{i}", "namespace": NS},
                }
            )
            for i in range(OWNERS)
        ]
        done = 0
        for size in sizes:
            grow(kube, done, size, owners)
            if done == 0:
                kube.create_all(tas_job(f"job-{i}", 8, LEVELS[2]) for i in range(JOBS))
                poll_until(
                    lambda: all_admitted(kube, JOBS), what="the TAS jobs admitted", timeout=180
                )
            done = size
            measure(kube, size, args.repeat, args.sim)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
