"""A cluster's job records become a Timeline (harness/replay/oncluster.py) with the same
figures the fit model's own timeline gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.replay.engine import replay
from harness.replay.oncluster import timeline_of
from harness.replay.result import timeline_result

STREAMS = Path(__file__).resolve().parents[2] / "suites" / "streams"


@pytest.mark.parametrize(
    "name",
    [
        "stream-preemption-storm",
        "stream-cohort-lending",
        "stream-guide-day",
        "stream-guide-required-rack-six-never-fits",
        "stream-quota-not-nodes",
        "stream-node-fails-evicted-returns",
        "stream-node-fails-replaced-in-rack",
        "stream-node-taint-repair-waits-for-strict-fifo-head-under-fair-sharing",
    ],
)
def test_the_fit_models_jobs_rebuilt_give_its_figures(name: str) -> None:
    from harness.replay.stream import load_stream

    stream = load_stream(STREAMS / f"{name}.yaml")
    fit = timeline_result(stream.scenario, replay(stream.scenario), stream.classes)
    rebuilt = timeline_result(
        stream.scenario, timeline_of(stream.scenario, fit["jobs"]), stream.classes
    )
    assert rebuilt == fit
