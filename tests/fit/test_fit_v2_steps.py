"""Steps and pod set groups in the fit model: what requeues a parked workload
(pkg/controller/tas/resource_flavor.go, non_tas_usage_controller.go), and every version-1
suite against its version-2 form (nodes, usage, steps, faults, groups, slices, webhooks:
the shorthand must change nothing)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.fit.versions import rules_for
from harness.results.comparison import against_prediction
from harness.results.outcome import Outcome
from harness.scenario.discover import why_not_a_scenario
from harness.scenario.loader import load_scenario, scenario_from_data
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


def version1_suites() -> list[Path]:
    return [
        p
        for p in sorted((ROOT / "suites").rglob("*.yaml"))
        if "v2" not in p.relative_to(ROOT).parts
        and not p.name.startswith("v2-")
        and why_not_a_scenario(p) is None  # not a stream scenario (suites/streams)
    ]


@pytest.mark.parametrize("path", version1_suites(), ids=lambda p: p.stem)
def test_a_version1_file_and_its_version2_form_agree(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.shorthand is not None
    rules_for(scenario)  # its kueue: version is modelled
    try:
        expected = fit(scenario)
    except UnsupportedVersionError as why:
        pytest.skip(f"the fit model does not run it: {why}")
    got = fit(dataclasses.replace(scenario, shorthand=None))
    lines = against_prediction(expected.outcomes, got.outcomes)
    for index, (want, seen) in enumerate(zip(expected.steps, got.steps, strict=True)):
        lines += [f"after step {index + 1}: {line}" for line in against_prediction(want, seen)]
    assert lines == []
    assert got == expected


def test_a_gate_the_driver_builds_in_is_refused_with_another_value() -> None:
    text = WORLD.replace("steps:\n", "featureGates: {PrioritySortingWithinCohort: false}\n")
    with pytest.raises(UnsupportedVersionError, match=r"featureGates\.PrioritySortingWithinCohort"):
        fit(scenario_from_data(parse_yaml(text, "w.yaml"), "w.yaml"))
