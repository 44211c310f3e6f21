"""waitForPodsReady per Kueue version (KueueRules.pods_ready_timeout_defaulted,
pods_ready_with_faults): v0.17.1 and v0.18.2 refuse to start with a section that has no
timeout, and hold a repair of a workload on a failed node behind blockAdmission; the fit
model refuses both there and runs them on v0.19.2."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.scenario.model import Scenario

BASE = """\
name: pr-versions
topologies:
  - {name: hosts, levels: [kubernetes.io/hostname]}
resourceFlavors:
  - {name: gpu, nodeLabels: {example.com/gpu: h100}, topologyName: hosts}
clusterQueues:
  - name: training
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
nodes:
  - {name: n1, labels: {example.com/gpu: h100}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
  - {name: n2, labels: {example.com/gpu: h100}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
workloads:
  - {name: train, queue: training, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 4}}]}
"""


def scenario(version: str, section: dict[str, Any], **extra: Any) -> Scenario:
    data = {**yaml.safe_load(BASE), "kueue": version, **extra}
    data["kueueConfig"] = {"waitForPodsReady": section}
    return scenario_from_data(data, "pr-versions.yaml")


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2"])
@pytest.mark.parametrize("section", [{"blockAdmission": True}, {"timeout": "0s"}])
def test_a_section_without_a_timeout_is_refused_before_v0_19(
    version: str, section: dict[str, Any]
) -> None:
    with pytest.raises(UnsupportedVersionError, match="refuses to start without a timeout"):
        fit(scenario(version, section))


def test_v0_19_2_defaults_the_timeout() -> None:
    assert fit(scenario("v0.19.2", {"blockAdmission": True})).outcomes["train"].admitted


FAILURE = {"steps": [{"node-not-ready": "n1"}]}


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2"])
def test_node_faults_beside_the_section_are_refused_before_v0_19(version: str) -> None:
    section = {"timeout": "5s", "blockAdmission": True}
    with pytest.raises(UnsupportedVersionError, match="kueue#13736"):
        fit(scenario(version, section, **FAILURE))
    assert fit(scenario(version, section)).outcomes["train"].admitted


PODS_READY = sorted((Path(__file__).resolve().parents[2] / "suites" / "pods-ready").glob("*.yaml"))


REFUSED_BEFORE_V0_19 = (
    "refuses to start without a timeout|only with a kueueConfig.waitForPodsReady section"
)
"""The version differences the model names (KueueRules.pods_ready_*) for files without node
faults (none in suites/pods-ready: their `evicted` expectations are PodsReady timeouts)."""


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2"])
@pytest.mark.parametrize("path", PODS_READY, ids=lambda p: p.stem)
def test_pods_ready_suites_read_the_same_before_v0_19(version: str, path: Path) -> None:
    """Kueue's PodsReady timeouts, evictions, backoff, deactivation and blockAdmission are the
    same code in the three versions (a diff of workload_controller.go, scheduler.go, the
    requeue state and the queue backoff); a suite's PodsReadyTimeout evictions are no node
    faults. Each file predicts the same outcomes on the older version, or is refused for one
    of the differences the model names."""
    scenario = load_scenario(path)
    newest = fit(dataclasses.replace(scenario, kueue="v0.19.2"))
    try:
        older = fit(dataclasses.replace(scenario, kueue=version))
    except UnsupportedVersionError as refused:
        assert re.search(REFUSED_BEFORE_V0_19, str(refused)), refused
        return
    assert (older.outcomes, older.steps) == (newest.outcomes, newest.steps)
