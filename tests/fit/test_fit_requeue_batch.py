"""The requeuer's batch (rules §3.7): Kueue moves parked workloads back a second after a
release, while it retries the heads in its heaps every ~10 ms, so those take the freed room
first; a head whose flavor scan goes round several states meets the release in whichever
one timing gives it. Found by the v2 fuzzer against Kueue's scheduler (seed 4106, case
1408), checked on the embedded cluster."""

from __future__ import annotations

import pytest

from harness.errors import Nondeterministic
from harness.fit import fit
from harness.fit.engine import FitResult
from harness.fit.queueing import Pending, Queues
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

QUEUES = """
name: q
resourceFlavors:
  - {name: f1, nodeLabels: {pool: f1}}
  - {name: f2, nodeLabels: {pool: f2}}
clusterQueues:
  - name: a
    cohortName: org
    resourceGroups:
      - coveredResources: [cpu, nvidia.com/gpu]
        flavors:
          - {name: f1, resources: [{name: cpu, nominalQuota: 10}, {name: nvidia.com/gpu, nominalQuota: %s}]}
          - {name: f2, resources: [{name: cpu, nominalQuota: 0}, {name: nvidia.com/gpu, nominalQuota: 0}]}
  - name: b
    cohortName: org
    queueingStrategy: StrictFIFO
    resourceGroups:
      - coveredResources: [cpu, nvidia.com/gpu]
        flavors:
          - {name: f1, resources: [{name: cpu, nominalQuota: 0}, {name: nvidia.com/gpu, nominalQuota: 0}]}
          - {name: f2, resources: [{name: cpu, nominalQuota: 10}, {name: nvidia.com/gpu, nominalQuota: 2}]}
nodes:
  - {name: n1, labels: {pool: f1}, allocatable: {cpu: "10", nvidia.com/gpu: 2, pods: 110}}
  - {name: n2, labels: {pool: f2}, allocatable: {cpu: "10", nvidia.com/gpu: 2, pods: 110}}
"""

SCAN_PHASE = (
    QUEUES % 0
    + """
admitted:
  - name: old
    queue: b
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}, flavor: f2}
workloads:
  - name: wl
    queue: b
    podSets:
      - {name: launcher, count: 1, requests: {cpu: "1"}}
      - {name: workers, count: 2, requests: {nvidia.com/gpu: 1}}
steps:
  - delete-workload: old
"""
)

HEAD_FIRST = (
    QUEUES % 2
    + """
admitted:
  - name: old-a
    queue: a
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}, flavor: f1}
  - name: old-b
    queue: b
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}, flavor: f2}
workloads:
  - name: urgent
    queue: a
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}}
  - name: head
    queue: b
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}}
steps:
  - delete-workload: old-a
"""
)


def run(text: str) -> FitResult:
    return fit(scenario_from_data(parse_yaml(text, "q.yaml"), "q.yaml"))


def test_the_retried_head_takes_the_room_before_the_parked_workload_is_back() -> None:
    # Judged together, urgent (within team a's nominal quota, older) would go first; head
    # borrows a's 2 GPUs on f1 (its own f2 is full) while urgent waits for the batch.
    after = run(HEAD_FIRST).steps[0]
    assert after["head"].admitted and after["head"].flavors == {"main": "f1"}
    assert not after["urgent"].admitted
    assert "insufficient unused quota for nvidia.com/gpu in flavor f1" in after["urgent"].message


def test_a_head_whose_scan_goes_round_meets_the_release_in_either_state() -> None:
    # The launcher borrows cpu on f1 (MayStopSearch stops there), so the next cycle starts
    # at f2, then at f1 again: the release meets either, and the launcher lands on it.
    with pytest.raises(Nondeterministic, match="go round 2 flavor scan states"):
        run(SCAN_PHASE)


def test_a_flush_waits_for_the_batch() -> None:
    scenario = scenario_from_data(parse_yaml(HEAD_FIRST, "q.yaml"), "q.yaml")
    queues = Queues(scenario)
    urgent = scenario.workloads[0]
    queues.info[urgent.name] = Pending(urgent, 0, 1, ())
    queues.parked["a"] = {urgent.name}
    queues.flush(["a", "b"])
    assert queues.parked["a"] == {urgent.name}
    assert queues.requeue_requested()
    assert queues.heap["a"] == {urgent.name} and not queues.requested
    assert not queues.requeue_requested()
