"""Faults under running workloads in the sim: Kueue's own node failure controller and second
pass, driven by the sim's steps (docs/scenario-extensions.md, "Faults under running
workloads"; rules in docs/dev/kueue-v0.19.2-node-replacement.md).

Each case states what Kueue v0.19.2 must do and why, from its source; none is copied from a
run. Each fails with the sim step it exercises removed (see the commit that added them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.scenario.loader import scenario_from_data
from harness.sim.contract import scenario_to_dict
from harness.sim.process import run_sim

HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
NO_SPARE = "Workload was evicted as there was no replacement for unhealthy node(s): "
MULTIPLE = "Workload eviction triggered due to multiple TAS assigned node failures, including: "


def gpu_node(name: str, rack: str, **extra: Any) -> dict[str, Any]:
    alloc = {"nvidia.com/gpu": 8, "cpu": "64", "memory": "512Gi", "pods": 110}
    return {"name": name, "labels": {RACK: rack}, "allocatable": alloc, **extra}


def train(count: int = 2, **pod_set: Any) -> dict[str, Any]:
    """Whole-node pods that must share a rack."""
    main = {
        "name": "main",
        "count": count,
        "requests": {"nvidia.com/gpu": 8},
        "topology": {"mode": "required", "level": RACK},
        **pod_set,
    }
    return {"name": "train", "podSets": [main]}


def world(
    steps: list[dict[str, Any]],
    nodes: list[dict[str, Any]] | None = None,
    workload: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Rack r1 with three hosts, r2 with one: `train` fits only in r1, with one spare host."""
    data = {
        "name": "fault",
        "topology": {"name": "gpu-topology", "levels": [RACK, HOST]},
        "nodes": nodes
        or [gpu_node("n1", "r1"), gpu_node("n2", "r1"), gpu_node("n3", "r1"), gpu_node("n4", "r2")],
        "workloads": [workload or train()],
        "steps": steps,
        **extra,
    }
    return scenario_to_dict(scenario_from_data(data))  # validated like a file


def run_steps(binary: Path, scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The train workload's outcome before the steps, then after each."""
    [answer] = run_sim([scenario], binary)
    assert answer["error"] is None, answer["error"]
    return [answer["outcome"]["train"], *(step["train"] for step in answer["steps"])]


def placed(outcome: dict[str, Any]) -> dict[str, int]:
    assert outcome["admitted"], outcome
    main: dict[str, int] = outcome["placement"]["main"]
    return main


# Kueue fills the tightest fitting domain, in name order among equal hosts: n1 and n2; n3 is
# r1's spare.


@pytest.mark.sim
def test_a_deleted_node_is_replaced_by_the_spare_host_of_its_rack(sim_binary: Path) -> None:
    """delete-node fails n1 at once for the job (node_controller.go: Reconcile, node gone);
    the second pass keeps the required rack and finds n3."""
    before, after = run_steps(sim_binary, world([{"delete-node": "n1"}]))
    assert placed(before) == {"n1": 1, "n2": 1}
    assert placed(after) == {"n2": 1, "n3": 1}
    assert after["replaced"] == {"main": {"n1": ["n3"]}}
    assert "evicted" not in after


@pytest.mark.sim
def test_a_notready_node_fails_only_once_its_pods_terminate(sim_binary: Path) -> None:
    """TASReplaceNodeOnPodTermination (on): a NotReady node under a running pod is healthy
    for the job (hasProgressingPods); the pod stuck Terminating makes it failed."""
    steps: list[dict[str, Any]] = [
        {"node-not-ready": "n1"},
        {"terminate-pods": {"workload": "train", "node": "n1"}},
    ]
    _, not_ready, terminating = run_steps(sim_binary, world(steps))
    assert placed(not_ready) == {"n1": 1, "n2": 1}
    assert "replaced" not in not_ready
    assert placed(terminating) == {"n2": 1, "n3": 1}
    assert terminating["replaced"] == {"main": {"n1": ["n3"]}}


@pytest.mark.sim
def test_without_pod_termination_gate_a_notready_node_fails_at_once(sim_binary: Path) -> None:
    """TASReplaceNodeOnPodTermination off: NotReady for NodeFailureDelay (the step dates the
    condition 30 s back) fails the node whatever its pods do."""
    gates = {"TASReplaceNodeOnPodTermination": False}
    _, not_ready = run_steps(sim_binary, world([{"node-not-ready": "n1"}], featureGates=gates))
    assert placed(not_ready) == {"n2": 1, "n3": 1}


@pytest.mark.sim
def test_two_nodes_failing_together_evict_with_the_multiple_failure_message(
    sim_binary: Path,
) -> None:
    """Both pods terminate in one step: the node controller records the first node and evicts
    on the second before the second pass (at least 1 s later) could replace the first; the
    requeued job no longer fits (r1 has one Ready host left)."""
    steps: list[dict[str, Any]] = [
        {"node-not-ready": "n1"},
        {"node-not-ready": "n2"},
        {"terminate-pods": {"workload": "train"}},
    ]
    *_, evicted = run_steps(sim_binary, world(steps))
    assert not evicted["admitted"]
    assert evicted["evicted"]["reason"] == "NodeFailures"
    assert evicted["evicted"]["message"].startswith(MULTIPLE)


@pytest.mark.sim
def test_no_spare_in_the_rack_evicts_and_the_job_stays_pending(sim_binary: Path) -> None:
    """Fail fast (on): the second pass finds no host in r1 and evicts; requeued, the job fits
    nowhere (r2 has one host)."""
    nodes = [gpu_node("n1", "r1"), gpu_node("n2", "r1"), gpu_node("n4", "r2")]
    _, after = run_steps(sim_binary, world([{"delete-node": "n1"}], nodes=nodes))
    assert not after["admitted"]
    assert after["evicted"] == {"reason": "NodeFailures", "message": NO_SPARE + "n1"}


@pytest.mark.sim
def test_without_fail_fast_the_job_waits_for_a_new_node(sim_binary: Path) -> None:
    """TASFailedNodeReplacementFailFast off: no eviction; the second pass retries with
    backoff on the fake clock and takes the node added later."""
    nodes = [gpu_node("n1", "r1"), gpu_node("n2", "r1"), gpu_node("n4", "r2")]
    steps: list[dict[str, Any]] = [{"delete-node": "n1"}, {"add-node": gpu_node("n3", "r1")}]
    gates = {"TASFailedNodeReplacementFailFast": False}
    _, deleted, added = run_steps(sim_binary, world(steps, nodes=nodes, featureGates=gates))
    assert placed(deleted) == {"n1": 1, "n2": 1}
    assert "evicted" not in deleted
    assert placed(added) == {"n2": 1, "n3": 1}
    assert added["replaced"] == {"main": {"n1": ["n3"]}}


@pytest.mark.sim
def test_a_failed_pod_fails_its_node_only_where_it_cannot_come_back(sim_binary: Path) -> None:
    """fail-pods on a healthy node: the Job's new pod goes back to it, nothing changes. Under
    a NoSchedule taint the new pod cannot bind, no pod progresses there, and the untolerated
    taint fails the node (checkPodsOnNode)."""
    taint = {"node": "n2", "key": "example.com/broken", "effect": "NoSchedule"}
    steps: list[dict[str, Any]] = [
        {"fail-pods": {"workload": "train", "node": "n1"}},
        {"taint-node": taint},
        {"fail-pods": {"workload": "train", "node": "n2"}},
    ]
    _, healthy, tainted, failed = run_steps(sim_binary, world(steps))
    assert placed(healthy) == placed(tainted) == {"n1": 1, "n2": 1}
    assert "replaced" not in healthy and "replaced" not in tainted
    assert placed(failed) == {"n1": 1, "n3": 1}
    assert failed["replaced"] == {"main": {"n2": ["n3"]}}


@pytest.mark.sim
def test_a_noexecute_taint_fails_the_node_unless_tolerated_for_now(sim_binary: Path) -> None:
    """The taint manager evicts pods that do not tolerate a NoExecute taint, which fails the
    node; a toleration with tolerationSeconds keeps them past the step."""
    taint = {"node": "n1", "key": "example.com/maintenance", "effect": "NoExecute"}
    _, untolerated = run_steps(sim_binary, world([{"taint-node": taint}]))
    assert untolerated["replaced"] == {"main": {"n1": ["n3"]}}
    toleration = {
        "key": "example.com/maintenance",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 3600,
    }
    job = train(tolerations=[toleration])
    _, tolerated = run_steps(sim_binary, world([{"taint-node": taint}], workload=job))
    assert placed(tolerated) == {"n1": 1, "n2": 1}
    assert "replaced" not in tolerated


@pytest.mark.sim
def test_with_a_rack_lowest_topology_kueue_sees_no_node_fail(sim_binary: Path) -> None:
    """Only hostname-lowest assignments name nodes (TASAssignedNodeNames): the job keeps
    its rack assignment."""
    data = world([{"delete-node": "n1"}])
    data["topologies"][0]["levels"] = [RACK]
    before, after = run_steps(sim_binary, data)
    assert after["placement"] == before["placement"] == {"main": {"r1": 2}}
    assert "replaced" not in after and "evicted" not in after


def test_fault_steps_reach_the_sim_in_the_shape_it_reads() -> None:
    """harness/sim/go/steps.go reads a taint step as {node, key, value, effect} and a pod step as
    {workload | usage, node, count}, only the keys given."""
    taint = {"node": "n1", "key": "k", "value": "v", "effect": "NoExecute"}
    steps = world(
        [
            {"taint-node": taint},
            {"untaint-node": {"node": "n1", "key": "k", "effect": "NoExecute"}},
            {"terminate-pods": {"workload": "train", "node": "n1", "count": 1}},
            {"fail-pods": {"workload": "train"}},
            {"node-not-ready": "n2"},
        ]
    )["steps"]
    assert steps == [
        {"taint-node": taint},
        {"untaint-node": {"node": "n1", "key": "k", "value": "", "effect": "NoExecute"}},
        {"terminate-pods": {"workload": "train", "node": "n1", "count": 1}},
        {"fail-pods": {"workload": "train"}},
        {"node-not-ready": "n2"},
    ]


@pytest.mark.sim
def test_a_noexecute_taint_leaves_usage_pods_where_they_are(sim_binary: Path) -> None:
    """Usage pods tolerate every taint, as the cluster runner makes them
    (harness/runner/objects.py usage_pods): the taint manager keeps them on n3, so after the
    taint goes n3 is still full and the job submitted then cannot take r1's spare host (the
    fit model agrees: its taint manager deletes only workload pods). Without this the sim
    freed n3 and admitted late on r1 (found by bench/replay_vs_sim.py --node-events)."""
    busy = {"name": "n3-busy", "node": "n3", "requests": {"nvidia.com/gpu": 8}}
    taint = {"node": "n3", "key": "example.com/gpu-failure", "effect": "NoExecute"}
    late = {"name": "late", "podSets": [{"name": "main", "count": 3,
            "requests": {"nvidia.com/gpu": 8}, "topology": {"mode": "required", "level": RACK}}]}  # fmt: skip
    steps: list[dict[str, Any]] = [
        {"taint-node": {**taint, "value": "true"}},
        {"untaint-node": taint},
        {"delete-workload": "train"},
        {"submit": late},
    ]
    [answer] = run_sim([world(steps, usage=[busy])], sim_binary)
    assert answer["error"] is None, answer["error"]
    last = answer["steps"][-1]["late"]
    assert last["admitted"] is False, last
