"""Steps and pod set groups in the fit model: what requeues a parked workload
(pkg/controller/tas/resource_flavor.go, non_tas_usage_controller.go)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

ROOT = Path(__file__).resolve().parents[2]

WORLD = """
name: w
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors: [{name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}]
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
usage:
  - {name: busy, node: n1, requests: {nvidia.com/gpu: 4}}
workloads:
  - name: big
    podSets:
      - {name: main, count: 6, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
steps:
"""


def after_step(step: str) -> Outcome:
    scenario = scenario_from_data(parse_yaml(WORLD + step, "w.yaml"), "w.yaml")
    result = fit(scenario)
    assert "allows to fit only 4 out of 6 pod(s)" in result.outcomes["big"].message
    return result.steps[0]["big"]


def test_new_usage_requeues_nobody() -> None:
    # big is parked (BestEffortFIFO, no flavor left to try). A new non-TAS pod frees
    # nothing, so Kueue does not requeue it: its message still counts 4 free GPUs.
    got = after_step("  - add-usage: {name: more, node: n1, requests: {nvidia.com/gpu: 2}}\n")
    assert "allows to fit only 4 out of 6 pod(s)" in got.message


def test_a_node_change_requeues_parked_workloads() -> None:
    # Cordoning n1 changes the flavor's nodes: every parked workload is requeued, and big,
    # evaluated again, finds no node at all.
    got = after_step("  - cordon: n1\n")
    assert got.message.endswith("no topology domains at level: kubernetes.io/hostname")


def test_freed_usage_requeues_the_queues_of_the_node() -> None:
    got = after_step("  - delete-usage: busy\n")
    assert got.admitted and got.placement == {"main": {"n1": 6}}


def test_a_gate_the_driver_builds_in_is_refused_with_another_value() -> None:
    text = WORLD.replace("steps:\n", "featureGates: {PrioritySortingWithinCohort: false}\n")
    with pytest.raises(UnsupportedVersionError, match=r"featureGates\.PrioritySortingWithinCohort"):
        fit(scenario_from_data(parse_yaml(text, "w.yaml"), "w.yaml"))
