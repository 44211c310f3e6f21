"""Stream time on a cluster (harness/replay/clock.py): the scale, and submissions in distinct
seconds where Kueue would otherwise order them by random UID."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.replay.clock import DEFAULT_SCALE, TimeScale, span, submissions
from harness.replay.result import replay_result
from harness.replay.stream import load_stream
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

REPO = Path(__file__).resolve().parents[2]


def _scenario(*rows: tuple[str, float, str | None]) -> Scenario:
    return scenario_from_data(
        {
            "name": "clock",
            "resourceFlavors": [{"name": "gpu"}],
            "nodes": [{"name": "n1", "allocatable": {"nvidia.com/gpu": 8}}],
            "clusterQueues": [{"name": "q", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}],
            "workloadPriorityClasses": [{"name": "high", "value": 100}],
            "workloads": [
                {"name": name, "queue": "q", "submitAt": at, "runFor": 10, **({"priorityClass": p} if p else {}),
                 "podSets": [{"name": "main", "count": 1, "requests": {"nvidia.com/gpu": 1}}]}
                for name, at, p in rows
            ],
        },
        "test.yaml",
    )  # fmt: skip


def _plan(scale: float, *rows: tuple[str, float, str | None]) -> list[tuple[str, float, float]]:
    scenario = _scenario(*rows)
    return [
        (s.workload.name, s.at, s.real)
        for s in submissions(scenario.workloads, scenario.priority, TimeScale(scale))
    ]


def test_stream_seconds_are_real_seconds_times_the_scale() -> None:
    scale = TimeScale(10)
    assert scale.real(150) == 15.0
    assert scale.stream(1.5) == 15.0
    start = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
    assert scale.stamp(datetime(2026, 1, 1, 0, 0, 12, tzinfo=UTC), start) == 120.0
    assert DEFAULT_SCALE == 10.0


def test_a_scale_is_above_zero() -> None:
    with pytest.raises(ValueError, match="above 0"):
        TimeScale(0)


def test_submissions_of_one_priority_go_in_distinct_seconds_in_stream_order() -> None:
    """5 s apart is half a second at 10x: the second one waits for the next whole second,
    and the third (due in that second) for the one after."""
    assert _plan(10, ("a", 0, None), ("b", 5, None), ("c", 10, None), ("d", 40, None)) == [
        ("a", 0, 0.0),
        ("b", 5, 1.0),
        ("c", 10, 2.0),
        ("d", 40, 4.0),
    ]


def test_a_submission_never_goes_before_one_that_waited_for_its_second() -> None:
    """Kueue's preemption storm at 10x: four lows 1 s apart wait for seconds 0-3; the high
    one due at 1 s goes after the last of them (creation order is the stream's), in its
    second: another priority."""
    plan = _plan(10, ("l1", 0, None), ("l2", 1, None), ("l3", 2, None), ("h", 10, "high"))
    assert plan == [("l1", 0, 0.0), ("l2", 1, 1.0), ("l3", 2, 2.0), ("h", 10, 2.0)]


def test_submissions_of_other_priorities_share_a_second() -> None:
    assert _plan(10, ("a", 0, None), ("h", 5, "high")) == [("a", 0, 0.0), ("h", 5, 0.5)]


def test_submissions_at_one_moment_keep_the_stream_order() -> None:
    assert [n for n, _, _ in _plan(10, ("b", 20, None), ("a", 0, None), ("c", 20, None))] == [
        "a",
        "b",
        "c",
    ]


def test_the_span_is_the_fit_models_last_moment() -> None:
    stream = load_stream(REPO / "suites" / "streams" / "stream-strict-fifo-head-blocks.yaml")
    assert span(replay_result(stream.scenario)["jobs"]) == 150.0
