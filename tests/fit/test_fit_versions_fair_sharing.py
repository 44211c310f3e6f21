"""Fair sharing per Kueue version (KueueRules.cohortless_fair_ordering_ends): the three
versions share its rules except that v0.17.1's fair-sharing target ordering, in a
ClusterQueue without a Cohort, goes on past the queue's own candidates to the missing
Cohort and panics (fairsharing/ordering.go Iter; fixed in v0.18 by kueue#10891). The fit
model refuses that case on v0.17.1 and predicts it on v0.18.2. Checked against kueue-sim:
v0.18.2 leaves `high` pending, v0.17.1 admits it with 1 GPU and with 2 reports "Kueue
panicked: runtime error: invalid memory address or nil pointer dereference at
(*CohortSnapshot).Root (cohort_snapshot.go:41)"."""

from __future__ import annotations

import pytest
import yaml

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

SOLO = """\
name: fs-cohortless
kueueConfig:
  fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]}
workloadPriorityClasses:
  - {name: low, value: 0}
  - {name: mid, value: 10}
  - {name: high, value: 5}
topologies:
  - {name: hosts, levels: [kubernetes.io/hostname]}
resourceFlavors:
  - {name: gpu, nodeLabels: {example.com/gpu: h100}, topologyName: hosts}
clusterQueues:
  - name: solo
    preemption: {withinClusterQueue: LowerPriority}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
nodes:
  - {name: n1, labels: {example.com/gpu: h100}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
admitted:
  - {name: low, queue: solo, priorityClass: low, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}, flavor: gpu, placement: {n1: 1}}]}
  - {name: mid, queue: solo, priorityClass: mid, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 3}, flavor: gpu, placement: {n1: 1}}]}
workloads:
  - {name: high, queue: solo, priorityClass: high, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: GPUS}}]}
"""
"""`low` is the only candidate (`mid` has a higher priority than `high`)."""


def scenario(version: str, gpus: int) -> Scenario:
    data = yaml.safe_load(SOLO.replace("GPUS", str(gpus)))
    return scenario_from_data({**data, "kueue": version}, "fs-cohortless.yaml")


def test_v0_17_1_refuses_a_cohortless_queue_whose_candidates_do_not_make_room() -> None:
    # Taking `low` frees 1 GPU of the 2 `high` needs: the ordering runs out of candidates.
    with pytest.raises(UnsupportedVersionError, match=r"panics .*kueue#10891"):
        fit(scenario("v0.17.1", 2))


def test_v0_18_2_leaves_the_preemptor_pending_there() -> None:
    outcome = fit(scenario("v0.18.2", 2)).outcomes
    assert not outcome["high"].admitted
    assert "insufficient unused quota for nvidia.com/gpu in flavor gpu" in outcome["high"].message
    assert outcome["low"].admitted and outcome["mid"].admitted


def test_v0_17_1_preempts_when_the_queues_candidates_make_room() -> None:
    # `high` asks 1 GPU: taking `low` is enough, the ordering never looks past it.
    outcome = fit(scenario("v0.17.1", 1)).outcomes
    assert outcome["high"].admitted
    assert outcome["low"].preempted and not outcome["low"].admitted
