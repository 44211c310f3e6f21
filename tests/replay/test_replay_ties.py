"""Where Kueue's answer for a stream is random, or only looks so: a node lost by two jobs at
once (Kueue's node controller writes them in Go map order), a message that alternates from
cycle to cycle while the workload stays pending, and repeating cycles whose position at the
next event may matter. Expectations come from Kueue's rules, stated in each docstring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.backends.sim import SimBackend, pending_throughout
from harness.errors import Nondeterministic
from harness.fit.ties import TieBreak
from harness.replay.engine import replay
from harness.replay.onsim import replay_on
from harness.replay.stream import load_stream
from harness.replay.timed_steps import split_times, with_times
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

REPO = Path(__file__).resolve().parents[2]
TWO_JOBS = REPO / "tests" / "data" / "streams" / "one-node-fails-two-jobs.yaml"
RUNS = 8
"""Replays of one stream on one sim. Before the sim ordered a Reconcile's writes, which of
the two jobs moved changed in about 4 runs of 10: 8 agreeing runs would then have come up
about once in 25 tries."""


def test_two_jobs_losing_one_node_at_once_is_a_tie_the_fit_model_names() -> None:
    """a and b both run on n1; n1's NoExecute taint fails it for both in one Reconcile of
    Kueue's node controller, which writes their statuses in Go map order; the first written
    gets its second pass first and moves to n2 (2 free GPUs), the other is evicted
    (TASFailedNodeReplacementFailFast). Either can be first: the timeline is Kueue's random
    choice."""
    with pytest.raises(Nondeterministic, match="a and b lost node n1 at once"):
        replay(load_stream(TWO_JOBS).scenario)


@pytest.mark.sim
def test_the_sim_gives_the_same_timeline_every_run(sim_backend: SimBackend) -> None:
    """The sim delivers one node-controller Reconcile's writes in workload name order (the
    case 336 of `bench/replay_vs_sim.py --seed 1 --node-events` flipped run to run): a's
    second pass comes first, a moves to n2 at 10 and finishes at 100 as admitted; b is
    evicted at 10, admitted again on n1 when the taint goes at 20 and runs its full 100 s."""
    scenario = load_stream(TWO_JOBS).scenario
    runs = [
        json.dumps(
            {n: j.to_json() for n, j in replay_on(scenario, sim_backend.session).jobs.items()}
        )
        for _ in range(RUNS)
    ]
    assert len(set(runs)) == 1, "\n".join(sorted(set(runs)))
    jobs = json.loads(runs[0])
    assert jobs["a"]["replacements"][0]["placement"] == {"main": {"n2": 1}}
    assert jobs["a"]["finishedAt"] == 100.0
    assert jobs["b"]["evictedAt"] == [10.0]
    assert [a["at"] for a in jobs["b"]["admissions"]] == [1.0, 20.0]
    assert jobs["b"]["finishedAt"] == 120.0


def _note(*messages: str) -> str:
    quoted = " | ".join(json.dumps(m) for m in messages)
    return f"wl-2 (after steps[3]): its message changes from one scheduling cycle to the next: {quoted}"


def test_a_pending_workload_whose_message_alternates_leaves_the_timeline_decided() -> None:
    """A pod set group's TAS failure names either pod set (Kueue's Failure() ranges over a
    map): pending all along, only the message changes; one admitted in some of the repeated
    cycles (an empty message there) is a timeline Kueue does not settle on."""
    assert pending_throughout(
        _note(
            "couldn't assign flavors to pod set leader: x",
            "couldn't assign flavors to pod set workers: x",
        )
    )
    assert not pending_throughout(_note("", "couldn't assign flavors to pod set main: x"))
    assert not pending_throughout("wl-2: something else")


def test_a_loop_position_runs_that_many_more_cycles_and_is_remembered() -> None:
    """The replay's TieBreak answers, per loop met, the offset it was planned with (0 past
    the plan), keyed by where the replay was and the state; the one-moment model has no
    plan and raises."""
    ties = TieBreak(offsets=(0, 2))
    ties.moment = (10.0, "submit")
    offsets = [ties.loop_offset(3, "x", "s1"), ties.loop_offset(3, "y", "s2")]
    offsets.append(ties.loop_offset(2, "z", "s3"))
    assert offsets == [0, 2, 0]
    assert [(loop.period, loop.what) for loop in ties.loops] == [(3, "x"), (3, "y"), (2, "z")]
    assert ties.loops[1].key == ((10.0, "submit"), "s2")
    assert TieBreak().loop_offset(2, "x", "s") is None


SCAN_LOOP = REPO / "suites" / "streams" / "stream-strict-fifo-scan-loop-then-fits.yaml"


def test_a_scan_loop_whose_position_does_not_matter_is_decided() -> None:
    """z loops over gpu-a and gpu-b (StrictFIFO, LastTriedFlavorIdx) from 2 on; at 50 only
    gpu-a has room, and from either position z lands there at 50."""
    timeline = replay(load_stream(SCAN_LOOP).scenario)
    (z,) = timeline.jobs["z"].admissions
    assert (z.at, z.flavors, z.placement) == (50.0, {"main": "gpu-a"}, {"main": {"host-a": 4}})


def test_a_scan_loop_whose_position_picks_the_flavor_is_nondeterministic() -> None:
    """The same, but x and y both finish at 50: the flavor the scan stands on when they do
    is the one z takes, and how far the scan went depends on time."""
    data = yaml.safe_load(SCAN_LOOP.read_text())
    data["workloads"][1]["runFor"] = 49
    with pytest.raises(Nondeterministic, match="where Kueue's repeating cycles stand"):
        replay(_stream(data))


def _stream(data: dict[str, object]) -> Scenario:
    data = {k: v for k, v in data.items() if k != "replay"}
    plain, times = split_times(data, "stream.yaml")
    return with_times(scenario_from_data(plain, "stream.yaml"), times)


PING_PONG = REPO / "tests" / "data" / "streams" / "reclaim-ping-pong-flushes-parked.yaml"
"""wl-1 and old-0 preempt each other forever, and every eviction flushes team-a's parked
workloads, so the requeuer's batch always moves some back (issue 30: both engines ran out
of cycles)."""


def test_a_preemption_ping_pong_that_flushes_parked_workloads_is_nondeterministic() -> None:
    """The fit model stops taking requeue batches once they lead to no new state and names
    the loop's position a tie (it used to raise 'no fixpoint after 1000 cycles')."""
    with pytest.raises(Nondeterministic, match="cycle"):
        replay(_stream(yaml.safe_load(PING_PONG.read_text())))


@pytest.mark.sim
def test_the_sim_rests_in_a_preemption_ping_pong_that_flushes_parked_workloads(
    sim_backend: SimBackend,
) -> None:
    """The sim counts the batches towards rest (run.go settle) and lists wl-1, whose
    admission alternates, as unstable, instead of 'did not come to rest within 1000
    scheduling cycles'."""
    scenario = _stream(yaml.safe_load(PING_PONG.read_text()))
    with pytest.raises(Nondeterministic, match=r"wl-1 .*message changes"):
        replay_on(scenario, sim_backend.session)
