"""The comparison of a cluster's replay with the fit model's (harness/replay/agreement.py):
order and placement of admissions, not times; and which `expect` figures a cluster checks."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from harness.replay.agreement import disagreements, time_robust
from harness.replay.result import replay_result
from harness.replay.stream import load_stream

REPO = Path(__file__).resolve().parents[2]
STREAMS = REPO / "suites" / "streams"


def _job(*admissions: tuple[float, dict[str, int]], preempted: tuple[float, ...] = (),
         finished: float | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "submittedAt": 0.0,
        "admissions": [
            {"at": at, "flavors": {"main": "gpu"}, "placement": {"main": nodes}}
            for at, nodes in admissions
        ],
        "preemptedAt": list(preempted),
        "finishedAt": finished,
    }


FIT = {
    "a": _job((0.0, {"host-1": 8}), finished=100.0),
    "b": _job((100.0, {"host-1": 8}), finished=150.0),
    "c": _job((150.0, {"host-2": 2}), finished=160.0),
}


def test_the_same_order_and_placement_at_other_times_agree() -> None:
    later = copy.deepcopy(FIT)
    later["b"]["admissions"][0]["at"] = 120.0  # Kueue's 1 s batches, at 10x
    later["c"]["admissions"][0]["at"] = 180.0
    later["c"]["finishedAt"] = 200.0
    assert disagreements(FIT, later) == []


def test_an_admission_on_another_node_is_named_with_both_placements() -> None:
    moved = copy.deepcopy(FIT)
    moved["c"]["admissions"][0]["placement"] = {"main": {"host-1": 2}}
    (line,) = disagreements(FIT, moved)
    assert line == (
        "c: admission 1 placement: fit model {'main': {'host-2': 2}}, "
        "cluster {'main': {'host-1': 2}}"
    )


def test_admissions_in_the_other_order_are_a_disagreement_with_both_orders() -> None:
    swapped = copy.deepcopy(FIT)
    swapped["b"]["admissions"][0]["at"] = 170.0
    lines = disagreements(FIT, swapped)
    assert lines[0] == (
        "admission order: the fit model admits b at 100 s before c at 150 s; "
        "the cluster admitted c at 150 s, b at 170 s"
    )
    assert lines[1:] == ["  fit model: a 0, b 100, c 150", "  cluster: a 0, c 150, b 170"]


def test_the_same_stamped_second_is_no_order() -> None:
    """A cluster stamps whole seconds: two admissions in one second may be in either order."""
    same = copy.deepcopy(FIT)
    same["b"]["admissions"][0]["at"] = 150.0
    assert disagreements(FIT, same) == []


def test_admissions_the_fit_model_makes_together_may_come_in_any_order() -> None:
    together = copy.deepcopy(FIT)
    together["c"]["admissions"][0]["at"] = 100.0
    cluster = copy.deepcopy(together)
    cluster["b"]["admissions"][0]["at"] = 120.0
    cluster["c"]["admissions"][0]["at"] = 110.0
    assert disagreements(together, cluster) == []


def test_a_missing_admission_a_preemption_and_a_finish_are_each_named() -> None:
    other = copy.deepcopy(FIT)
    other["b"] = _job(preempted=(), finished=None)
    other["a"]["preemptedAt"] = [50.0]
    lines = disagreements(FIT, other)
    assert "a: preempted 0 time(s) by the fit model, 1 by the cluster" in lines
    assert (
        "b: admitted 1 time(s) by the fit model (at 100 s on host-1=8), 0 by the cluster (never)"
        in lines
    )
    assert "b: finished on the fit model, never finished on the cluster" in lines


def test_a_job_one_side_lacks_is_named() -> None:
    fewer = {k: v for k, v in FIT.items() if k != "c"}
    assert disagreements(FIT, fewer) == ["c: the cluster has no record of it"]
    assert disagreements(fewer, FIT) == ["c: only the cluster has it"]


def test_a_stream_agrees_with_itself() -> None:
    stream = load_stream(STREAMS / "stream-preemption-storm.yaml")
    jobs = replay_result(stream.scenario, stream.classes)["jobs"]
    assert disagreements(jobs, copy.deepcopy(jobs)) == []


def test_only_figures_that_do_not_depend_on_time_are_checked_on_a_cluster() -> None:
    stream = load_stream(STREAMS / "stream-preemption-requeued-victims.yaml")
    robust = {b.key for b in stream.expect if time_robust(b)}
    assert robust == {
        "preemptions",
        "jobs.high.admissions.0.placement.main",
        "jobs.low-2.admissions.1.placement.main",
    }
    guide = load_stream(STREAMS / "stream-guide-required-rack-six-never-fits.yaml")
    assert {b.key for b in guide.expect if time_robust(b)} == {
        "neverAdmitted",
        "timeToAdmission.admitted",
    }
