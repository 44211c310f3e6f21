"""A workload's `podsReady: false` (harness extension: pods that never pass their readiness
probe, docs/scenario-format-v2.md "waitForPodsReady")."""

from __future__ import annotations

import pytest

from harness.errors import ScenarioError
from harness.scenario.loader import scenario_from_data
from harness.sim.contract import scenario_to_dict
from tests.scenario.test_load_local_queues import FILE, data, load


def test_pods_ready_false_is_taken_on_workloads_only() -> None:
    """`podsReady: false` (pods that never pass readiness) on a workload; refused on an
    admitted entry in one line."""
    extra = data()
    extra["workloads"][0]["podsReady"] = False
    assert not scenario_from_data(extra, FILE).workloads[0].pods_ready
    assert scenario_to_dict(scenario_from_data(extra, FILE))["workloads"][0]["podsReady"] is False
    admitted = {
        "name": "old",
        "queue": "a",
        "podsReady": False,
        "podSets": [{"name": "main", "count": 1, "requests": {"cpu": 1}, "flavor": "f"}],
    }
    with pytest.raises(
        ScenarioError, match=r"admitted\[0\]\.podsReady: not supported in admitted entries"
    ):
        load(admitted=[admitted])
