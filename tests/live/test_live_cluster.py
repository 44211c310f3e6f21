"""The three commands on a real Kueue: `up` leaves the embedded cluster running shaped as a
scenario, `simulate --kubeconfig` predicts a Job with both engines, the Job is then really
submitted and Kueue's decision must be the prediction; `down` stops it all.

The Jobs go one after another and stay, so each prediction is made on a state the earlier
ones shaped: a plain pod fragmenting a host, Kueue workloads running, higher priorities
preempting lower ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.kube import KUEUE_API, Kube
from harness.runner.reading import State, admission_placement, preempted, state
from harness.runner.waits import Timeouts, find_workload, settle

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
GPU = "nvidia.com/gpu"
SCENARIO = {
    "name": "live-states",
    "topologies": [{"name": "racks", "levels": [RACK, HOST]}],
    "resourceFlavors": [{"name": "gpu", "nodeLabels": {"example.com/pool": "gpu"},
                         "topologyName": "racks"}],
    "workloadPriorityClasses": [{"name": "high", "value": 100}, {"name": "low", "value": 1}],
    "clusterQueues": [{"name": "team", "preemption": {"withinClusterQueue": "LowerPriority"},
                       "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                           {"name": "gpu", "resources": [{"name": GPU, "nominalQuota": 12}]}]}]}],
    "nodes": [{"name": n, "labels": {"example.com/pool": "gpu", RACK: r},
               "allocatable": {GPU: 4, "cpu": "32", "memory": "64Gi", "pods": 110}}
              for n, r in (("n1", "r1"), ("n2", "r1"), ("n3", "r2"))],
    "usage": [{"name": "plain", "node": "n1", "requests": {GPU: 1}}],
    "workloads": [{"name": "low-a", "priorityClass": "low", "podSets": [
        {"name": "main", "count": 2, "requests": {GPU: 1},
         "topology": {"mode": "required", "level": HOST}}]}],
}  # fmt: skip
"""Three 4-GPU hosts in two racks, quota 12 GPUs, lower priorities preemptible: a plain pod
fragments n1, a low-priority Kueue workload runs."""


def job(
    name: str, count: int, gpus: int, level: str | None = None, **labels: str
) -> dict[str, Any]:
    annotations = (
        {"kueue.x-k8s.io/podset-required-topology": level}
        if level
        else {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    )
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "team", **labels}},
        "spec": {"parallelism": count, "completions": count, "template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": {GPU: str(gpus)}}}]}}},
    }  # fmt: skip


HIGH = {"kueue.x-k8s.io/priority-class": "high"}
LOW = {"kueue.x-k8s.io/priority-class": "low"}
STATES = [
    job("rack-of-4", 4, 1, RACK),  # free per host: n1 1, n2 4, n3 4
    job("host-of-3", 3, 1, HOST),
    job("two-on-a-host", 2, 1, HOST),  # fragmented: no host has 2 left
    job("rack-of-2", 2, 1, RACK),
    job("whole-host", 1, 4, HOST),  # beyond the quota left
    job("one-more", 1, 1),  # unconstrained, but no GPU left anywhere
    job("urgent", 1, 3, HOST, **HIGH),  # high: preempts lower priorities
    job("high-rack", 4, 1, RACK, **HIGH),
    job("over-quota", 8, 1, None, **HIGH),
    job("low-late", 1, 1, None, **LOW),
]


def harness(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, check=False, cwd=REPO)  # fmt: skip
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """`up` on SCENARIO; `down` afterwards."""
    path = tmp_path_factory.mktemp("up") / "live-states.yaml"
    path.write_text(yaml.safe_dump(SCENARIO, sort_keys=False))
    done = harness("up", str(path), check=False)
    try:
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("KUBECONFIG=")]
        assert len(lines) == 1, done.stdout
        kube = Kube(lines[0].removeprefix("KUBECONFIG="))
        yield kube
        kube.close()
    finally:
        stopped = harness("down")
    assert "stopped" in stopped.stdout and "kube-apiserver" in stopped.stdout


def predict(kube: Kube, tmp_path: Path, doc: dict[str, Any], engine: str) -> dict[str, Any]:
    path = tmp_path / f"{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    done = harness("simulate", str(path), "--kubeconfig", str(kube.kubeconfig),
                   "--engine", engine, "--format", "json")  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)[doc["metadata"]["name"]]
    return {k: answer[k] for k in ("admitted", "placement", "message", "preempts")}


def _ref(wl: dict[str, Any]) -> str:
    return f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"


def kueue_decides(kube: Kube, doc: dict[str, Any]) -> dict[str, Any]:
    """Submit for real (namespace default); once settled, Kueue's decision and the
    workloads it preempted for it."""
    t = Timeouts()
    before = {_ref(w) for w in kube.list(KUEUE_API, "Workload") if preempted(w)}
    kube.create({**doc, "metadata": {**doc["metadata"], "namespace": "default"}})
    name = find_workload(kube, "default", "Job", doc["metadata"]["name"], t)

    def read() -> State:
        seen = state(kube.get_or_none(KUEUE_API, "Workload", name, "default"))
        if seen.kind == "pending" and "Pending the preemption" in seen.message:
            return State("unsettled", seen.message)  # victims still on their way out
        return seen

    seen = settle(read, what=f"Workload default/{name}", t=t)
    victims = sorted(_ref(w) for w in kube.list(KUEUE_API, "Workload") if preempted(w))
    wl = kube.get(KUEUE_API, "Workload", name, "default")
    admitted = seen.kind == "admitted"
    return {
        "admitted": admitted,
        "placement": admission_placement(wl, {}) if admitted else {},
        "message": seen.message,
        "preempts": [v for v in victims if v not in before],
    }


def test_the_prediction_is_what_kueue_then_does(cluster: Kube, tmp_path: Path) -> None:
    queues = cluster.list(KUEUE_API, "LocalQueue", "default")
    assert [(q["metadata"]["name"], q["spec"]["clusterQueue"]) for q in queues] == [
        ("team", "team")]  # fmt: skip
    differ, seen = [], []
    for doc in STATES:
        name = doc["metadata"]["name"]
        by_fit = predict(cluster, tmp_path, doc, "fit")
        by_sim = predict(cluster, tmp_path, doc, "sim")
        real = kueue_decides(cluster, doc)
        seen.append(f"{name}: {real}")
        differ += [f"{name}: {engine} predicted {said}, Kueue did {real}"
                   for engine, said in (("fit", by_fit), ("sim", by_sim)) if said != real]  # fmt: skip
    print("\n".join(seen))
    assert differ == []
