"""The sim under waitForPodsReady.blockAdmission (harness/sim/go/blockadmission.go): Kueue's
scheduler waits inside its cycle on the cache's condition variable, and the driver lets it go
on when Kueue's own check passes.

Each case says what Kueue v0.19.2 must do and why (docs/dev/kueue-v0.19.2-rules-v2.md §11.6);
none is copied from a run. Needs Go to build harness/sim/go/ the first time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml
from harness.sim.contract import scenario_to_dict
from harness.sim.process import run_sim

WAITING = "waiting for all admitted workloads to be in PodsReady condition"

WORLD = """
name: {name}
kueueConfig: {{waitForPodsReady: {{blockAdmission: true}}}}
topologies: [{{name: hosts, levels: [kubernetes.io/hostname]}}]
resourceFlavors: [{{name: h100, nodeLabels: {{gpu: h100}}, topologyName: hosts}}]
clusterQueues:
  - name: team-a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{{name: h100, resources: [{{name: nvidia.com/gpu, nominalQuota: 16}}]}}]
nodes:
  - {{name: n1, labels: {{gpu: h100}}, allocatable: {{nvidia.com/gpu: 8, pods: 110}}}}
  - {{name: n2, labels: {{gpu: h100}}, allocatable: {{nvidia.com/gpu: 8, pods: 110}}}}
"""


def contract(text: str) -> dict[str, Any]:
    return scenario_to_dict(scenario_from_data(parse_yaml(text, "<test>"), "<test>"))


ENDS_WAITING = (
    WORLD.format(name="ends-waiting")
    + """
workloads:
  - {name: train, podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}}]}
steps:
  - pods-not-ready: train
  - submit: {name: serve, podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}}]}
"""
)

ADMITTED_RUN = (
    WORLD.format(name="admitted-run")
    + """
admitted:
  - {name: old, podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}, flavor: h100, placement: {n1: 8}}]}
workloads:
  - {name: serve, podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}}]}
"""
)


@pytest.mark.sim
def test_a_scenario_ending_while_kueue_waits_leaves_the_process_ready_for_the_next(
    sim_binary: Path,
) -> None:
    """serve fits on n2 but train's pods are not Ready: Kueue writes the waiting message and
    blocks. The scenario ends there; the next one on the same process still runs (the
    waiter is released by the scenario's context, as CleanUpOnContext does in Kueue)."""
    first, second = run_sim([contract(ENDS_WAITING), contract(ADMITTED_RUN)], sim_binary)
    assert first["error"] is None, first["error"]
    after = first["steps"][-1]
    assert after["serve"] == {"admitted": False, "message": WAITING}
    assert after["train"]["admitted"] is True
    assert second["error"] is None, second["error"]


@pytest.mark.sim
def test_an_admitted_workloads_running_pods_are_ready_so_nothing_waits(sim_binary: Path) -> None:
    """An `admitted` entry's pods run (KWOK makes them Ready), so the job reconciler writes
    PodsReady=True and Kueue's check passes: serve is admitted on n2 without waiting."""
    [answer] = run_sim([contract(ADMITTED_RUN)], sim_binary)
    assert answer["error"] is None, answer["error"]
    serve = answer["outcome"]["serve"]
    assert serve["admitted"] is True
    assert serve["placement"] == {"main": {"n2": 8}}
