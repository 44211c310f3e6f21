"""A hierarchical cohort and an admission check pending, on a real Kueue (the embedded
cluster as an existing one): `snapshot` writes the Cohort tree with its own quota, the
AdmissionCheck, the ClusterQueue's strategy and the workload that holds quota while its
check is Pending; `simulate` on that snapshot answers each Job as Kueue then does with it.

The state (`up`): cohort `org` (4 GPUs of its own) has child cohort `research` (2 GPUs);
team-a (2 GPUs) is in research, team-b (2 GPUs) directly in org: 10 GPUs in org's subtree.
a-run (team-a, 6 GPUs on rack r1) borrows 4 up the tree. ClusterQueue gated (16 GPUs of quota
on hosts g1, g2, no cohort) runs check `capacity`, which nobody sets Ready: held (4 pods,
one host) reserves host g1 and waits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.kube import Kube
from harness.scenario.loader import scenario_from_data
from tests.live.up_states import GPU, HOST, RACK, compare, job, snapshot_of, up

pytestmark = pytest.mark.cluster


def _quota(flavor: str, gpus: int) -> list[dict[str, Any]]:
    return [{"coveredResources": [GPU], "flavors": [
        {"name": flavor, "resources": [{"name": GPU, "nominalQuota": gpus}]}]}]  # fmt: skip


def _node(name: str, pool: str, rack: str) -> dict[str, Any]:
    return {"name": name, "labels": {"example.com/pool": pool, RACK: rack},
            "allocatable": {GPU: 4, "cpu": "32", "memory": "64Gi", "pods": 110}}  # fmt: skip


def _pods(count: int, level: str) -> list[dict[str, Any]]:
    return [{"name": "main", "count": count, "requests": {GPU: 1},
             "topology": {"mode": "required", "level": level}}]  # fmt: skip


SCENARIO = {
    "name": "live-cohort-checks",
    "topologies": [{"name": "racks", "levels": [RACK, HOST]}],
    "resourceFlavors": [
        {"name": "gpu", "nodeLabels": {"example.com/pool": "gpu"}, "topologyName": "racks"},
        {"name": "gated", "nodeLabels": {"example.com/pool": "gated"}, "topologyName": "racks"}],
    "admissionChecks": [{"name": "capacity", "controllerName": "example.com/capacity"}],
    "cohorts": [{"name": "org", "resourceGroups": _quota("gpu", 4)},
                {"name": "research", "parentName": "org", "resourceGroups": _quota("gpu", 2)}],
    "clusterQueues": [
        {"name": "team-a", "cohortName": "research", "resourceGroups": _quota("gpu", 2)},
        {"name": "team-b", "cohortName": "org", "resourceGroups": _quota("gpu", 2)},
        {"name": "gated", "admissionChecksStrategy": {"admissionChecks": [{"name": "capacity"}]},
         "resourceGroups": _quota("gated", 16)}],
    "nodes": [_node("n1", "gpu", "r1"), _node("n2", "gpu", "r1"), _node("n3", "gpu", "r2"),
              _node("n4", "gpu", "r2"), _node("g1", "gated", "g"), _node("g2", "gated", "g")],
    "workloads": [
        {"name": "a-run", "queue": "team-a", "podSets": [
            {"name": "main", "count": 6, "requests": {GPU: 1},
             "topology": {"mode": "required", "level": RACK}}]},
        {"name": "held", "queue": "gated", "podSets": _pods(4, HOST)}],
}  # fmt: skip
JOBS = [
    job("b-fits", "team-b", 4, 1, RACK),  # borrows 2 of the 4 org's subtree has left
    job("b-over", "team-b", 1, 1, HOST),  # org's subtree is used up: waits on quota
    job("gated-2", "gated", 4, 1, HOST),  # g1 is held's: reserves g2, waits for its check
    job("gated-3", "gated", 1, 1, HOST),  # quota left, but no host has a GPU not reserved
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """`up` on SCENARIO; `down` afterwards."""
    with up(tmp_path_factory.mktemp("up"), SCENARIO) as kube:
        yield kube


def test_the_snapshot_has_the_tree_the_check_and_the_reservation(
    cluster: Kube, tmp_path: Path
) -> None:
    data = snapshot_of(cluster, tmp_path)
    cohorts = {c["name"]: c for c in data["cohorts"]}
    assert cohorts["research"]["parentName"] == "org"
    assert cohorts["org"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "4"
    assert data["admissionChecks"] == [
        {"name": "capacity", "controllerName": "example.com/capacity"}
    ]
    gated = next(q for q in data["clusterQueues"] if q["name"] == "gated")
    assert gated["admissionChecksStrategy"] == {"admissionChecks": [{"name": "capacity"}]}
    admitted = {a["name"]: a for a in data["admitted"]}
    assert admitted["held"]["admissionChecks"] == [{"name": "capacity", "state": "Pending"}]
    assert "admissionChecks" not in admitted["a-run"]
    not_represented = data["x-snapshot"]["notRepresented"]
    assert not [line for line in not_represented if "dmission check" in line], not_represented
    scenario = scenario_from_data(data, "now.yaml")
    assert [a.check_states for a in scenario.admitted if a.name == "held"] == [
        {"capacity": "Pending"}
    ]


def test_each_job_is_predicted_as_kueue_then_decides(cluster: Kube, tmp_path: Path) -> None:
    differ = compare(cluster, tmp_path, JOBS)
    assert not differ, "\n".join(differ)
