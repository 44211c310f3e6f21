"""LeaderWorkerSets on a real Kueue with the LWS controller (the embedded cluster): `up`
shapes two racks, `simulate --kubeconfig` predicts a LeaderWorkerSet group by group with both
engines, the set is then really applied and Kueue's decisions must be the prediction, and a
`snapshot` taken while it runs carries its groups as admitted workloads.

Kueue creates a set's group Workloads in one second and orders them by UID, so which group
is decided first is Kueue's choice: groups are compared as a set of decisions (upstream's TAS
e2e accepts either order too: test/e2e/tas/extended/leaderworkerset_test.go)."""

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
from harness.runner.reading import admission_placement, state
from harness.runner.waits import Timeouts, find_group_workload, settle
from tests.live.up_states import up

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
GPU = "nvidia.com/gpu"
SCENARIO = {
    "name": "live-lws",
    "topologies": [{"name": "racks", "levels": [RACK, HOST]}],
    "resourceFlavors": [{"name": "gpu", "nodeLabels": {"example.com/pool": "gpu"},
                         "topologyName": "racks"}],
    "clusterQueues": [{"name": "team", "resourceGroups": [
        {"coveredResources": [GPU, "cpu"], "flavors": [{"name": "gpu", "resources": [
            {"name": GPU, "nominalQuota": 24}, {"name": "cpu", "nominalQuota": 64}]}]}]}],
    "nodes": [{"name": n, "labels": {"example.com/pool": "gpu", RACK: r},
               "allocatable": {GPU: 4, "cpu": "32", "memory": "64Gi", "pods": 110}}
              for n, r in (("n1", "r1"), ("n2", "r1"), ("n3", "r2"), ("n4", "r2"))],
    "usage": [{"name": "plain", "node": "n1", "requests": {GPU: 2}}],
}  # fmt: skip
"""Two racks of two 4-GPU hosts; a plain pod holds 2 GPUs of n1 (r1: 6 free, r2: 8)."""


def lws(name: str, replicas: int, size: int, gpus: int) -> dict[str, Any]:
    """Leader (CPU only) and workers (`gpus` each) grouped in one rack."""
    ann = {"kueue.x-k8s.io/podset-required-topology": RACK, "kueue.x-k8s.io/podset-group-name": "g"}

    def template(limits: dict[str, str]) -> dict[str, Any]:
        return {
            "metadata": {"annotations": ann},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"limits": limits},
                    }
                ]
            },
        }

    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
        "spec": {"replicas": replicas, "leaderWorkerTemplate": {
            "size": size, "leaderTemplate": template({"cpu": "1"}),
            "workerTemplate": template({GPU: str(gpus)})}},
    }  # fmt: skip


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, check=False, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """`up` on SCENARIO; `down` afterwards."""
    with up(tmp_path_factory.mktemp("up"), SCENARIO) as kube:
        yield kube


def predict(kube: Kube, tmp_path: Path, doc: dict[str, Any], engine: str) -> list[str]:
    """Each group's decision (admitted, placement), sorted: the groups as a set."""
    path = tmp_path / f"{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    done = harness("simulate", str(path), "--kubeconfig", str(kube.kubeconfig),
                   "--engine", engine, "--format", "json")  # fmt: skip
    answers = json.loads(done.stdout)
    name = doc["metadata"]["name"]
    replicas = doc["spec"]["replicas"]
    keys = [f"{name}/{i}" for i in range(replicas)] if replicas > 1 else [name]
    assert sorted(answers) == keys, answers
    return sorted(str((a["admitted"], a["placement"] or {})) for a in answers.values())


def kueue_decides(kube: Kube, doc: dict[str, Any]) -> list[str]:
    """Apply for real (namespace default); each group's settled decision, sorted."""
    t = Timeouts()
    kube.create({**doc, "metadata": {**doc["metadata"], "namespace": "default"}})
    out = []
    for i in range(doc["spec"]["replicas"]):
        wl_name = find_group_workload(kube, "default", doc["metadata"]["name"], i, t)
        seen = settle(
            lambda n=wl_name: state(kube.get_or_none(KUEUE_API, "Workload", n, "default")),
            what=f"Workload default/{wl_name}",
            t=t,
        )
        wl = kube.get(KUEUE_API, "Workload", wl_name, "default")
        admitted = seen.kind == "admitted"
        out.append(str((admitted, admission_placement(wl, {}) if admitted else {})))
    return sorted(out)


def test_simulate_predicts_each_group_as_kueue_then_places_it(
    cluster: Kube, tmp_path: Path
) -> None:
    """serve: 2 groups of a leader and 3 two-GPU workers (6 GPUs): one takes r1 (6 free, the
    tighter), the other r2. batch: 1 group of a leader and 2 workers of 3 GPUs, which no host
    has left: it waits."""
    differ, seen = [], []
    for doc in (lws("serve", 2, 4, 2), lws("batch", 1, 3, 3)):
        name = doc["metadata"]["name"]
        by_fit = predict(cluster, tmp_path, doc, "fit")
        by_sim = predict(cluster, tmp_path, doc, "sim")
        real = kueue_decides(cluster, doc)
        seen.append(f"{name}: {real}")
        differ += [f"{name}: {engine} predicted {said}, Kueue did {real}"
                   for engine, said in (("fit", by_fit), ("sim", by_sim)) if said != real]  # fmt: skip
    print("\n".join(seen))
    assert differ == []
    assert [s.startswith('serve: ["(True') for s in seen] == [True, False]
    assert "(False, {})" in seen[1]


def test_a_snapshot_carries_the_running_groups(cluster: Kube, tmp_path: Path) -> None:
    out = tmp_path / "snap.yaml"
    harness("snapshot", "--kubeconfig", str(cluster.kubeconfig), "-o", str(out))
    data = yaml.safe_load(out.read_text())
    admitted = {a["name"]: a for a in data.get("admitted") or []}
    groups = [n for n in admitted if n.startswith("leaderworkerset-serve-")]
    assert len(groups) == 2, sorted(admitted)
    for name in groups:
        assert [p["name"] for p in admitted[name]["podSets"]] == ["leader", "worker"]
