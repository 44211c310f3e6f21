"""Fair sharing on a real Kueue (the embedded cluster as an existing one): `snapshot` writes
Kueue's fairSharing configuration and the ClusterQueues' weights, and `simulate` on that
snapshot answers each Job as Kueue then does with it, preemptions included.

The embedded cluster reads its Configuration from a file; a real installation mounts it from
ConfigMap kueue-system/kueue-manager-config, where `snapshot` reads it. The test publishes
the very file Kueue runs with (RUN_DIR/kueue/config.yaml) as that ConfigMap.

The state (`up`): team-a, team-b, team-c share cohort pool, 4 GPUs of quota each, reclaiming
within the cohort; team-b weighs 2. team-a runs a-1 (4 GPUs, priority 10), a-2 (4, priority
5) and a-3 (2, priority 1): it borrows 6. b-1 (6 GPUs) would borrow 2 itself: without fair
sharing it could not preempt, with it team-b's share after (2 borrowed / 12 / weight 2) is
below team-a's, so Kueue preempts a-3 and a-2. Then c-1 (4 GPUs, within team-c's quota)
preempts team-b's borrowing b-1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.kube import Kube
from harness.scenario.loader import scenario_from_data
from tests.live.up_states import GPU, HOST, RACK, compare, job, snapshot_of, up

pytestmark = pytest.mark.cluster
CONFIG_MAP = "kueue-manager-config"


def _queue(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "cohortName": "pool", **more,
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": "gpu", "resources": [{"name": GPU, "nominalQuota": 4}]}]}]}  # fmt: skip


def _workload(name: str, count: int, priority: str) -> dict[str, Any]:
    return {"name": name, "queue": "team-a", "priorityClass": priority, "podSets": [
        {"name": "main", "count": count, "requests": {GPU: 1},
         "topology": {"mode": "required", "level": HOST}}]}  # fmt: skip


SCENARIO = {
    "name": "live-fair-sharing",
    "kueueConfig": {"fairSharing": {"preemptionStrategies": [
        "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}},
    "topologies": [{"name": "racks", "levels": [RACK, HOST]}],
    "resourceFlavors": [{"name": "gpu", "nodeLabels": {"example.com/pool": "gpu"},
                         "topologyName": "racks"}],
    "workloadPriorityClasses": [{"name": "p10", "value": 10}, {"name": "p5", "value": 5},
                                {"name": "p1", "value": 1}],
    "clusterQueues": [_queue("team-a"), _queue("team-b", fairSharing={"weight": "2"}),
                      _queue("team-c")],
    "nodes": [{"name": f"n{i}", "labels": {"example.com/pool": "gpu", RACK: f"r{(i + 1) // 2}"},
               "allocatable": {GPU: 4, "cpu": "32", "memory": "64Gi", "pods": 110}}
              for i in range(1, 9)],
    "workloads": [_workload("a-1", 4, "p10"), _workload("a-2", 4, "p5"),
                  _workload("a-3", 2, "p1")],
}  # fmt: skip
JOBS = [
    job("b-1", "team-b", 6, 1, RACK),  # borrows 2: fair sharing lets it preempt a-3 and a-2
    job("c-1", "team-c", 4, 1, RACK),  # within its quota: reclaims from b-1, the borrower
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """`up` on SCENARIO, its Kueue Configuration published as an installation does; `down`
    afterwards."""
    with up(tmp_path_factory.mktemp("up"), SCENARIO) as kube:
        config = (Path(kube.kubeconfig).parent / "kueue" / "config.yaml").read_text()
        kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": CONFIG_MAP, "namespace": "kueue-system"},
                     "data": {"controller_manager_config.yaml": config}})  # fmt: skip
        yield kube


def test_the_snapshot_has_fair_sharing_and_the_weights(cluster: Kube, tmp_path: Path) -> None:
    data = snapshot_of(cluster, tmp_path)
    assert "fairSharing" in data["kueueConfig"], data.get("kueueConfig")
    weights = {q["name"]: q.get("fairSharing") for q in data["clusterQueues"]}
    assert weights == {"team-a": None, "team-b": {"weight": "2"}, "team-c": None}
    scenario = scenario_from_data(data, "now.yaml")
    assert scenario.kueue_config.fair_sharing is not None
    assert {a.name for a in scenario.admitted} == {"a-1", "a-2", "a-3"}


def test_each_job_is_predicted_as_kueue_then_decides(cluster: Kube, tmp_path: Path) -> None:
    differ = compare(cluster, tmp_path, JOBS)
    assert not differ, "\n".join(differ)
