"""A ClusterQueue stopped over workloads waiting without quota (rules: harness/fit/cq_stop.py
_blocker_race): Kueue reconciles each once on the spec change and whether that reconcile sees
its cache inactive is a race, evaluated or not; a second change while the queue is inactive
writes the message whatever the order. Measured on the embedded cluster (1 of 3 runs kept the
old messages, every workload of the queue alike)."""

from __future__ import annotations

from harness.fit import fit
from harness.fit.engine import FitResult
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

WORLD = """
name: s
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors: [{name: h100, nodeLabels: {gpu: h100}, topologyName: hosts}]
clusterQueues:
  - name: gpus
    queueingStrategy: StrictFIFO
    resourceGroups: [{coveredResources: [nvidia.com/gpu], flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]}]
nodes: [{name: n1, labels: {gpu: h100}, allocatable: {nvidia.com/gpu: 8, pods: 110}}]
workloads:
  - {name: one, queue: gpus, podSets: [{name: main, count: 6, requests: {nvidia.com/gpu: 1}}]}
  - {name: two, queue: gpus, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}}]}
  - {name: three, queue: gpus, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}}]}
steps:
"""
INACTIVE = "ClusterQueue gpus is inactive"


def stop(policy: str) -> str:
    return f"  - set-stop-policy: {{clusterQueue: gpus, stopPolicy: {policy}}}\n"


def run(*steps: str) -> FitResult:
    return fit(scenario_from_data(parse_yaml(WORLD + "".join(steps), "s.yaml"), "s.yaml"))


def test_the_first_stop_leaves_each_waiting_workload_its_old_message_as_the_race() -> None:
    result = run(stop("Hold"))
    before, after = result.outcomes, result.steps[0]
    assert before["two"].message.endswith("2 more needed")
    assert before["three"].message == ""  # behind the StrictFIFO head: never evaluated
    for name in ("two", "three"):
        assert after[name].message == INACTIVE
        assert after[name].message_race == before[name].message
    assert after["one"].admitted and after["one"].message_race is None


def test_a_second_change_while_inactive_writes_the_message() -> None:
    held, drained = run(stop("Hold"), stop("HoldAndDrain")).steps
    assert held["two"].message_race is not None
    for name in ("one", "two", "three"):
        assert drained[name].message == INACTIVE and drained[name].message_race is None


def test_the_race_stays_while_nothing_writes_the_workload() -> None:
    # Deleting one frees quota, but the held queue admits nothing and writes nothing.
    deleted = run(stop("Hold"), "  - delete-workload: one\n").steps[1]
    assert deleted["two"].message == INACTIVE and deleted["two"].message_race is not None


def test_resuming_evaluates_them_again() -> None:
    resumed = run(stop("Hold"), stop("None")).steps[1]
    assert resumed["two"].message.endswith("2 more needed")
    assert resumed["two"].message_race is None
