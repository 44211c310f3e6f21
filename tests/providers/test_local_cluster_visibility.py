"""Kueue's visibility API on the embedded cluster, read as users read it: `kubectl get --raw`
and kueuectl's POSITION IN QUEUE column.

One ClusterQueue with room for one 1-CPU Job: a blocker is admitted, then three Jobs of
rising priority are submitted low first, over two LocalQueues. Kueue's queue order is by
priority (pkg/workload/ordering.go), so the pending list must read high, mid, low, with
positions per ClusterQueue and per LocalQueue (pkg/visibility/storage/pending_workloads_cq.go).
Marked `cluster`: the built upstream binaries run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.kube import Kube, has_condition, poll_until, wait_for, workloads
from harness.providers.local.cluster import LocalCluster
from harness.toolchain import tools

pytestmark = pytest.mark.cluster
API = "kueue.x-k8s.io/v1beta2"
NS = "vis"
CQ = "vis-cq"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
# Job -> (LocalQueue, WorkloadPriorityClass value), in submission order.
PENDING = {"low": ("lq-a", 10), "mid": ("lq-b", 20), "high": ("lq-a", 30)}
QUEUE_ORDER = ["high", "mid", "low"]


@pytest.fixture(scope="module")
def kube(cluster: LocalCluster) -> Iterator[Kube]:
    """API connection to the module's cluster, with the queue of PENDING set up."""
    assert cluster.handle is not None
    client = Kube(cluster.handle.kubeconfig)
    _queues(client)
    _submit(client, "blocker", "lq-a", None)
    poll_until(_admitted(client, "blocker"), what="Job vis/blocker admitted", timeout=60)
    for name, (queue, priority) in PENDING.items():
        _submit(client, name, queue, f"prio-{priority}")
    poll_until(_pending_listed(client), what=f"3 pending Workloads in {CQ}", timeout=60)
    yield client
    client.close()


def _queues(kube: Kube) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    cpu = [{"name": "cpu", "nominalQuota": "1"}]
    group = {"coveredResources": ["cpu"], "flavors": [{"name": "vis-flavor", "resources": cpu}]}
    objs: list[dict[str, Any]] = [
        {"kind": "ResourceFlavor", "metadata": {"name": "vis-flavor"}, "spec": {}},
        {
            "kind": "ClusterQueue",
            "metadata": {"name": CQ},
            "spec": {"namespaceSelector": {}, "resourceGroups": [group]},
        },
    ]
    objs += [
        {
            "kind": "LocalQueue",
            "metadata": {"name": q, "namespace": NS},
            "spec": {"clusterQueue": CQ},
        }
        for q in ("lq-a", "lq-b")
    ]
    objs += [
        {"kind": "WorkloadPriorityClass", "metadata": {"name": f"prio-{p}"}, "value": p}
        for _, p in PENDING.values()
    ]
    for obj in objs:
        kube.create({"apiVersion": API, **obj})
    wait_for(kube, API, "ClusterQueue", CQ, has_condition("Active"), what="Active", timeout=60)


def _submit(kube: Kube, name: str, queue: str, priority_class: str | None) -> None:
    labels = {"kueue.x-k8s.io/queue-name": queue}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "1"}},
    }
    pod = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    spec = {"parallelism": 1, "completions": 1, "template": pod}
    meta = {"name": name, "namespace": NS, "labels": labels}
    kube.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})


def _admitted(kube: Kube, job: str) -> Any:
    def probe() -> tuple[bool, str]:
        owned = [w for w in workloads(kube, NS) if w["metadata"]["name"].startswith(f"job-{job}-")]
        return (has_condition("Admitted")(owned[0])) if owned else (False, "no Workload yet")

    return probe


def _pending_listed(kube: Kube) -> Any:
    def probe() -> tuple[bool, str]:
        items = _pending(kube, f"{VISIBILITY}/clusterqueues/{CQ}/pendingworkloads")
        return len(items) == 3, f"{len(items)} listed: {[i['metadata']['name'] for i in items]}"

    return probe


def _pending(kube: Kube, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kube.request("GET", path).get("items") or []
    return items


def _job_of(item: dict[str, Any]) -> str:
    """The Job a Workload belongs to: Kueue names it job-<job>-<hash>."""
    return str(item["metadata"]["name"]).split("-")[1]


def _tool_env(cluster: LocalCluster) -> dict[str, str]:
    assert cluster.handle is not None
    return {**os.environ, "KUBECONFIG": str(cluster.handle.kubeconfig)}


def _run(tool: Path, args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(tool), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, f"{tool.name} {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_kubectl_raw_lists_cluster_queue_pending_in_queue_order(
    cluster: LocalCluster, kube: Kube
) -> None:
    kubectl = tools.ensure_built("kubectl")
    path = f"{VISIBILITY}/clusterqueues/{CQ}/pendingworkloads"
    out = json.loads(_run(kubectl, ["get", "--raw", path], _tool_env(cluster)))
    assert out["kind"] == "PendingWorkloadsSummary"
    items = out["items"]
    assert [_job_of(i) for i in items] == QUEUE_ORDER
    assert [i["positionInClusterQueue"] for i in items] == [0, 1, 2]
    assert [i["positionInLocalQueue"] for i in items] == [0, 0, 1]
    assert [i["localQueueName"] for i in items] == ["lq-a", "lq-b", "lq-a"]
    assert [i["priority"] for i in items] == [30, 20, 10]


def test_kubectl_raw_lists_local_queue_pending_with_positions(
    cluster: LocalCluster, kube: Kube
) -> None:
    kubectl = tools.ensure_built("kubectl")
    path = f"{VISIBILITY}/namespaces/{NS}/localqueues/lq-a/pendingworkloads"
    items = json.loads(_run(kubectl, ["get", "--raw", path], _tool_env(cluster)))["items"]
    assert [_job_of(i) for i in items] == ["high", "low"]
    assert [i["positionInLocalQueue"] for i in items] == [0, 1]
    assert [i["positionInClusterQueue"] for i in items] == [0, 2]


def test_v1beta1_is_served_too(kube: Kube) -> None:
    path = f"/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/{CQ}/pendingworkloads"
    assert [_job_of(i) for i in _pending(kube, path)] == QUEUE_ORDER


def test_kueuectl_fills_position_in_queue(cluster: LocalCluster, kube: Kube) -> None:
    """kueuectl v0.19.2 prints the LocalQueue position (cmd/kueuectl/app/list/
    list_workload_printer.go) from the pendingworkloads summary of each ClusterQueue."""
    kueuectl = tools.ensure_built("kueuectl")
    out = _run(kueuectl, ["list", "workload", "-n", NS], _tool_env(cluster))
    header, *rows = out.rstrip().splitlines()
    title = "POSITION IN QUEUE"
    start = header.index(title)
    job_name = header.index("JOB NAME")
    positions = {row[job_name:].split()[0]: row[start : start + len(title)].strip() for row in rows}
    assert positions == {"blocker": "", "high": "0", "mid": "0", "low": "1"}, out


def test_snapshot_reads_queue_positions(cluster: LocalCluster, kube: Kube, tmp_path: Path) -> None:
    out = tmp_path / "snap.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "snapshot", "-o", str(out)],
        capture_output=True,
        text=True,
        env=_tool_env(cluster),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "snapshot: queue positions: 3 pending workloads" in done.stderr
    positions = yaml.safe_load(out.read_text())["x-snapshot"]["queuePositions"]
    assert list(positions) == QUEUE_ORDER
    assert positions["low"] == {"positionInClusterQueue": 2, "positionInLocalQueue": 1}
