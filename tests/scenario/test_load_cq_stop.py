"""`set-stop-policy` with `clusterQueue`: a step patching a ClusterQueue's stopPolicy
(docs/scenario-format-v2.md, "A ClusterQueue's stopPolicy in a step")."""

from __future__ import annotations

import pytest

from harness.errors import ScenarioError
from harness.scenario.model import ClusterQueueStopChange
from harness.sim.contract import scenario_to_dict
from tests.scenario.test_load_local_queues import load


def test_a_step_names_a_cluster_queue_and_its_new_policy() -> None:
    steps = [{"set-stop-policy": {"clusterQueue": "a", "stopPolicy": "HoldAndDrain"}}]
    scenario = load(steps=steps, workloads=[])
    assert scenario.steps[0].target == ClusterQueueStopChange("a", "HoldAndDrain")
    # The sim reads the same step (harness/sim/go/cqstop.go).
    assert scenario_to_dict(scenario)["steps"] == steps


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        ({"clusterQueue": "nope", "stopPolicy": "Hold"}, r'clusterQueue: clusterqueues "nope"'),
        ({"clusterQueue": "a", "stopPolicy": "Pause"}, r"stopPolicy: Unsupported value"),
        ({"clusterQueue": "a"}, r"missing required key 'stopPolicy'"),
        ({"clusterQueue": "a", "localQueue": "a", "stopPolicy": "Hold"}, r"unknown key"),
    ],
)
def test_a_bad_cluster_queue_step_is_refused_by_key(step: dict[str, str], problem: str) -> None:
    with pytest.raises(ScenarioError, match=r"steps\[0\]\.set-stop-policy.*" + problem):
        load(steps=[{"set-stop-policy": step}], workloads=[])
