"""waitForPodsReady.blockAdmission in a stream: a workload whose pods cannot run holds Kueue's
scheduler until it is gone. Expectations from Kueue's rules (docstrings), on both engines."""

from __future__ import annotations

from typing import Any

import pytest

from harness.backends.sim import SimBackend
from harness.errors import UnsupportedVersionError
from harness.replay.engine import Timeline, replay
from harness.replay.onsim import replay_on
from harness.replay.timed_steps import split_times, with_times
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

RACK = "example.com/rack"


def _stream() -> Scenario:
    """One rack of one 8-GPU node with a NoSchedule taint; the topology's lowest level is the
    rack, so Kueue's TAS places by the rack's capacity and never looks at the taint
    (tas_flavor_snapshot.go checks taints at the hostname level only)."""
    gpus = {"nvidia.com/gpu": 1}
    data: dict[str, Any] = {
        "name": "blocked-until-gone",
        "kueueConfig": {"waitForPodsReady": {"blockAdmission": True}},
        "topologies": [{"name": "racks", "levels": [RACK]}],
        "resourceFlavors": [{"name": "gpu", "nodeLabels": {"pool": "gpu"}, "topologyName": "racks"}],
        "nodes": [{"name": "r1-n1", "labels": {"pool": "gpu", RACK: "r1"},
                   "taints": [{"key": "example.com/maintenance", "effect": "NoSchedule"}],
                   "allocatable": {"nvidia.com/gpu": 8, "cpu": "64", "pods": 110}}],
        "clusterQueues": [{"name": "team", "resourceGroups": [{
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}],
        "workloads": [
            {"name": "stuck", "queue": "team", "submitAt": 0, "runFor": 30,
             "podSets": [{"name": "main", "count": 2, "requests": gpus,
                          "topology": {"mode": "required", "level": RACK}}]},
            {"name": "next", "queue": "team", "submitAt": 10, "runFor": 20,
             "podSets": [{"name": "main", "count": 2, "requests": gpus,
                          "topology": {"mode": "required", "level": RACK}}]},
        ],
    }  # fmt: skip
    plain, times = split_times(data, "stream.yaml")
    return with_times(scenario_from_data(plain, "stream.yaml"), times)


def _check(timeline: Timeline) -> None:
    """stuck is admitted at 0 on r1 but its pods cannot pass the taint: no PodsReady, and
    with blockAdmission the scheduler waits (waitForPodsReadyIfNeeded) with next, which fits,
    in hand. stuck's end at 30 deletes it; the workload controller's Delete wakes the
    scheduler, which admits next at 30 with the assignment it had (r1), running to 50."""
    stuck, nxt = timeline.jobs["stuck"], timeline.jobs["next"]
    assert [(a.at, a.placement) for a in stuck.admissions] == [(0.0, {"main": {"r1": 2}})]
    assert [(a.at, a.placement) for a in nxt.admissions] == [(30.0, {"main": {"r1": 2}})]
    assert nxt.finished_at == 50.0


def test_the_fit_model_admits_the_waiting_entry_when_the_unready_job_ends() -> None:
    _check(replay(_stream()))


@pytest.mark.sim
def test_the_sim_holds_the_entry_for_a_job_submitted_in_the_stream(
    sim_backend: SimBackend,
) -> None:
    """The session is given the stream's workloads' kube-scheduler filter at its start (a
    workload it does not know counts as bindable, and nothing would wait)."""
    _check(replay_on(_stream(), sim_backend.session))


def _two_queues(stuck_runs_for: float | None) -> Scenario:
    """stuck (podsReady: false: its pods never turn Ready) runs in queue a from 0; x (queue a)
    and y (queue b) arrive together at 10, two heads of one scheduling cycle."""
    gpus = {"nvidia.com/gpu": 1}
    quota = [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]}]
    stuck: dict[str, Any] = {"name": "stuck", "queue": "a", "submitAt": 0, "podsReady": False,
                             "podSets": [{"name": "main", "count": 1, "requests": gpus}]}  # fmt: skip
    if stuck_runs_for is not None:
        stuck["runFor"] = stuck_runs_for
    data: dict[str, Any] = {
        "name": "blocked-cycle",
        "kueueConfig": {"waitForPodsReady": {"blockAdmission": True}},
        "topologies": [{"name": "hosts", "levels": ["kubernetes.io/hostname"]}],
        "resourceFlavors": [{"name": "gpu", "nodeLabels": {"pool": "gpu"}, "topologyName": "hosts"}],
        "nodes": [{"name": "n1", "labels": {"pool": "gpu"},
                   "allocatable": {"nvidia.com/gpu": 8, "cpu": "64", "pods": 110}}],
        "clusterQueues": [
            {"name": q, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": quota}]}
            for q in ("a", "b")
        ],
        "workloads": [
            stuck,
            {"name": "x", "queue": "a", "submitAt": 10, "runFor": 5,
             "podSets": [{"name": "main", "count": 1, "requests": gpus}]},
            {"name": "y", "queue": "b", "submitAt": 10, "runFor": 5,
             "podSets": [{"name": "main", "count": 1, "requests": gpus}]},
        ],
    }  # fmt: skip
    plain, times = split_times(data, "stream.yaml")
    return with_times(scenario_from_data(plain, "stream.yaml"), times)


def test_the_rest_of_a_waiting_cycle_waits_with_it() -> None:
    """x comes first in the cycle (created first) and fits, but stuck is not PodsReady: the
    scheduler waits inside x's evaluation (waitForPodsReadyIfNeeded), and y, the next entry
    of that cycle, is neither evaluated nor requeued while it waits; stuck never ends, so
    neither is ever admitted."""
    timeline = replay(_two_queues(None))
    assert [a.at for a in timeline.jobs["stuck"].admissions] == [0.0]
    assert not timeline.jobs["x"].admissions and not timeline.jobs["y"].admissions


def test_the_end_of_such_a_wait_is_refused() -> None:
    """When stuck ends (30), Kueue admits x and goes on with y against the snapshot it took
    before the wait: not modelled, refused in one line."""
    with pytest.raises(UnsupportedVersionError, match="y is considered in the cycle"):
        replay(_two_queues(30))


@pytest.mark.sim
def test_the_sim_holds_the_rest_of_the_waiting_cycle_too(sim_backend: SimBackend) -> None:
    """Kueue's own scheduler, waiting inside x's evaluation, never reaches y."""
    timeline = replay_on(_two_queues(None), sim_backend.session)
    assert [a.at for a in timeline.jobs["stuck"].admissions] == [0.0]
    assert not timeline.jobs["x"].admissions and not timeline.jobs["y"].admissions
