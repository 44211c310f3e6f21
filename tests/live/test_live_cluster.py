"""The three commands on a real Kueue: `up` leaves the embedded cluster running shaped as a
scenario, `simulate --kubeconfig` predicts a Job with both engines, the Job is then really
submitted and Kueue's decision must be the prediction (tests/live/up_states.py: `compare`,
`kueue_decides`); `down` stops it all.

The Jobs go one after another and stay, so each prediction is made on a state the earlier
ones shaped: a plain pod fragmenting a host, Kueue workloads running, higher priorities
preempting lower ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.kube import KUEUE_API, Kube
from tests.live.up_states import GPU, HOST, RACK, compare, up

pytestmark = pytest.mark.cluster
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """`up` on SCENARIO; `down` afterwards."""
    with up(tmp_path_factory.mktemp("up"), SCENARIO) as kube:
        yield kube


def test_the_prediction_is_what_kueue_then_does(cluster: Kube, tmp_path: Path) -> None:
    queues = cluster.list(KUEUE_API, "LocalQueue", "default")
    assert [(q["metadata"]["name"], q["spec"]["clusterQueue"]) for q in queues] == [
        ("team", "team")]  # fmt: skip
    assert compare(cluster, tmp_path, STATES) == []
