"""The replay's JSON form, the contract the checks read (docs/replay.md):
{"jobs": {name: record}, "summary": {...}}."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.replay.engine import Timeline, replay
from harness.replay.summary import summary
from harness.scenario.model import Scenario


def replay_result(scenario: Scenario, classes: Mapping[str, str] | None = None) -> dict[str, Any]:
    return timeline_result(scenario, replay(scenario), classes)


def timeline_result(
    scenario: Scenario, timeline: Timeline, classes: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "jobs": {name: job.to_json() for name, job in timeline.jobs.items()},
        "summary": summary(scenario, timeline, classes),
    }
