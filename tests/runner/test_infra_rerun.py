"""Infrastructure retried, assertions never (issue 17 item 7).

On the embedded cluster KWOK (the kubelets of every node) is killed while a scenario runs:
the attempt is discarded, the scenario runs again on a fresh cluster and passes, and the
observation says why it was rerun. A scenario that disagrees on a healthy cluster runs once
and fails. The cluster tests are marked `cluster` (`make test` runs them); the rest run on
objects made in memory.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
from pathlib import Path

import pytest

from harness.kube import KUEUE_API, Kube, pause, poll_until, watchdog
from harness.results.observation import Observation
from harness.results.report import Comparison, expectation_lines
from harness.runner.backend import ClusterBackend, namespace_for
from harness.runner.incidents import Incident, not_ready_by_themselves
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.scenario.model import Expectation

REPO = Path(__file__).resolve().parents[2]
WAITS_FOR_FREED_NODE = REPO / "suites" / "guide" / "guide-required-host-waits-for-freed-node.yaml"
GUIDE_REQUIRED = REPO / "suites" / "guide" / "guide-required-host.yaml"


def node(name: str, status: str | None) -> dict[str, object]:
    conditions = [] if status is None else [
        {"type": "Ready", "status": status, "reason": "NodeStatusUnknown",
         "message": "Kubelet stopped posting node status."}
    ]  # fmt: skip
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


SCENARIO = {
    "name": "incidents",
    "topology": {"name": "t", "levels": ["kubernetes.io/hostname"]},
    "flavor": {"name": "gpu"},
    "nodes": [
        {"name": f"n{i}", "labels": {}, "allocatable": {"nvidia.com/gpu": 8}} for i in range(1, 5)
    ]
    + [{"name": "down", "labels": {}, "allocatable": {"nvidia.com/gpu": 8}, "ready": False}],
    "workloads": [{"name": "w", "podSets": [{"name": "main", "count": 1,
                                             "requests": {"nvidia.com/gpu": 1}}]}],
    "steps": [{"node-not-ready": "n2"}, {"node-ready": "n2"}],
}  # fmt: skip


def test_nodes_not_ready_by_themselves_are_the_ones_the_scenario_keeps_ready() -> None:
    scenario = scenario_from_data(SCENARIO, "incidents.yaml")
    nodes = [node("n1", "True"), node("n2", "Unknown"), node("n3", "Unknown"),
             node("n4", None), node("down", "False")]  # fmt: skip
    found = not_ready_by_themselves(nodes, scenario)
    assert found == [
        "node n3 is Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.), "
        "which the scenario did not do",
        "node n4 is Ready=absent, which the scenario did not do",
    ]


def test_a_ready_node_with_an_unreachable_taint_the_scenario_did_not_add_is_an_incident() -> None:
    """Kubernetes' node lifecycle controller taints a node it saw before KWOK's first status
    and keeps the taint on the Ready node until its next pass (make test, 2026-12-07)."""
    data = {**SCENARIO, "nodes": [*SCENARIO["nodes"], {"name": "t1", "labels": {},
            "allocatable": {"nvidia.com/gpu": 8},
            "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}]}  # type: ignore[list-item]  # fmt: skip
    scenario = scenario_from_data(data, "incidents.yaml")
    tainted = node("n1", "True")
    tainted["spec"] = {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]}
    declared = node("t1", "True")
    declared["spec"] = {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}
    found = not_ready_by_themselves([tainted, declared, node("n3", "True")], scenario)
    assert found == [
        "node n1 is Ready but has the node.kubernetes.io/unreachable taint, which the scenario "
        "did not add"
    ]


def test_a_watchdog_ends_a_wait_at_once_and_only_within_its_block() -> None:
    calls = []

    def failing() -> None:
        calls.append(1)
        raise Incident("kwok exited with code -9")

    with watchdog(failing), pytest.raises(Incident, match="kwok exited"):
        poll_until(lambda: (False, "never"), what="nothing", timeout=30, interval=0.01)
    assert calls == [1]
    pause(0)  # outside the block: no watchdog asked
    assert calls == [1]


def test_reports_say_a_scenario_was_rerun() -> None:
    scenario = load_scenario(GUIDE_REQUIRED)
    lines = ("kwok exited with code -9",)
    agreeing = Comparison(scenario, [], on_kueue=True, incidents=lines)
    assert agreeing.summary().splitlines()[1] == (
        "rerun on a fresh cluster: the infrastructure failed under 1 earlier attempt(s), "
        "discarded: kwok exited with code -9"
    )
    failing = Comparison(scenario, ["train: admitted, expected pending"], on_kueue=True,
                         incidents=lines)  # fmt: skip
    assert failing.render().endswith("discarded: kwok exited with code -9")


def kill_kwok_once_submitted(kube: Kube, namespace: str, pid: int) -> threading.Thread:
    """A thread that kills KWOK once a Workload exists in `namespace` (mid-scenario: the
    scenario then waits on Kueue's verdict and a step), as a crashed component would go."""

    def first_workload() -> tuple[bool, str]:
        found = [w["metadata"]["name"] for w in kube.list(KUEUE_API, "Workload", namespace)]
        return bool(found), f"workloads {found}"

    def kill() -> None:
        poll_until(first_workload, what="the scenario's Workload", timeout=120, interval=0.1)
        os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.cluster
def test_kwok_killed_mid_scenario_is_rerun_on_a_fresh_cluster(runner: ClusterBackend) -> None:
    scenario = load_scenario(WAITS_FOR_FREED_NODE)
    runner.cluster(scenario.feature_gates)
    assert runner.provider is not None and runner.kube is not None
    first = runner.provider
    pids = dict(first.pids())  # type: ignore[attr-defined]
    handle = getattr(first, "handle", None)
    run_dir = handle.run_dir if handle is not None else None
    namespace = namespace_for(runner.seq + 1, scenario.name)
    thread = kill_kwok_once_submitted(runner.kube, namespace, pids["kwok"])
    observed: Observation = runner.run(scenario)
    thread.join(timeout=5)
    assert len(observed.incidents) == 1, observed.incidents
    assert observed.incidents[0].startswith("kwok exited with code -9"), observed.incidents
    lines = expectation_lines(scenario, observed.outcomes, observed.steps)
    assert not lines, "\n".join([*lines, observed.details])
    assert runner.provider is not first, "the rerun did not get a fresh cluster"
    left = {name: pid for name, pid in pids.items() if alive(pid)}
    assert not left, f"processes of the discarded cluster still run: {left}"
    if run_dir is not None:
        assert not Path(run_dir).exists(), f"the discarded cluster's run dir is left: {run_dir}"


@pytest.mark.cluster
def test_a_disagreement_on_a_healthy_cluster_is_not_retried(runner: ClusterBackend) -> None:
    scenario = load_scenario(GUIDE_REQUIRED)
    ((name, right),) = (scenario.expect or {}).items()
    wrong: Expectation = dataclasses.replace(right, admitted=not right.admitted, placement=None)
    planted = dataclasses.replace(scenario, expect={name: wrong})
    before = runner.seq
    observed = runner.run(planted)
    assert runner.seq == before + 1, "the scenario ran more than once"
    assert observed.incidents == ()
    assert expectation_lines(planted, observed.outcomes, observed.steps), "a wrong expect passed"


@pytest.mark.cluster
def test_a_clear_that_does_not_finish_reruns_the_next_scenario_on_a_fresh_cluster(
    runner: ClusterBackend,
) -> None:
    """What a scenario leaves behind says nothing about the next: a clear that times out
    (here a node held by a finalizer nobody removes, as Kueue can hold a deleted Topology)
    discards the attempt, and the scenario runs on a fresh cluster."""
    scenario = load_scenario(GUIDE_REQUIRED)
    runner.run(scenario)
    assert runner.kube is not None and runner.provider is not None
    first = runner.provider
    held = scenario.nodes[0].name
    runner.kube.patch("v1", "Node", held, {"metadata": {"finalizers": ["kth.test/hold"]}})
    saved = runner.timeouts
    runner.timeouts = dataclasses.replace(saved, cleanup=3.0)
    try:
        observed = runner.run(scenario)
    finally:
        runner.timeouts = saved
    assert len(observed.incidents) == 1, observed.incidents
    assert observed.incidents[0].startswith("clearing the previous scenario: waited 3"), (
        observed.incidents
    )
    assert f"Node {held}" in observed.incidents[0], observed.incidents
    assert runner.provider is not first, "the rerun did not get a fresh cluster"
    lines = expectation_lines(scenario, observed.outcomes, observed.steps)
    assert not lines, "\n".join([*lines, observed.details])
