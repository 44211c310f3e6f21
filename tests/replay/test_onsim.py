"""The stream replay on kueue-sim: one session keeps Kueue running and answers, per event,
only the outcomes that event changed (harness/sim/go/session.go, harness/replay/onsim.py).
Outcomes reasoned from Kueue's rules on a one-host world; none copied from a run."""

from __future__ import annotations

from typing import Any

import pytest

from harness.backends.base import BackendError
from harness.backends.sim import SimBackend
from harness.replay.onsim import replay_on
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Step

HOST = "kubernetes.io/hostname"


def world(*workloads: dict[str, Any]) -> dict[str, Any]:
    """One 8-GPU host in a TAS flavor; one ClusterQueue of 8 GPUs preempting lower priorities."""
    return {
        "name": "one-host",
        "topologies": [{"name": "hosts", "levels": [HOST]}],
        "resourceFlavors": [{"name": "gpu", "nodeLabels": {"pool": "gpu"}, "topologyName": "hosts"}],
        "nodes": [{"name": "host-1", "labels": {"pool": "gpu"},
                   "allocatable": {"nvidia.com/gpu": 8, "cpu": "64", "pods": 110}}],
        "workloadPriorityClasses": [{"name": "high", "value": 100}, {"name": "low", "value": 1}],
        "clusterQueues": [{"name": "team", "preemption": {"withinClusterQueue": "LowerPriority"},
                           "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                               {"name": "gpu", "resources": [
                                   {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}],
        "workloads": list(workloads),
    }  # fmt: skip


def job(name: str, gpus: int, **extra: Any) -> dict[str, Any]:
    pod_set = {"name": "main", "count": gpus, "requests": {"nvidia.com/gpu": 1}}
    return {"name": name, "queue": "team", "podSets": [pod_set], **extra}


@pytest.mark.sim
def test_a_session_answers_only_what_each_step_changed(sim_backend: SimBackend) -> None:
    scenario = scenario_from_data(world(job("a", 6), job("b", 4)))
    a, b = scenario.workloads
    empty = scenario_from_data(world())
    with sim_backend.session(empty) as sim:
        first = sim.step(Step("submit", a))
        assert list(first) == ["a"] and first["a"].placement == {"main": {"host-1": 6}}
        # b does not fit beside a (6 + 4 > 8): pending; a's outcome is not sent again.
        second = sim.step(Step("submit", b))
        assert list(second) == ["b"] and not second["b"].admitted
        # a finishes: its Workload goes, its cohort's parked workloads are retried.
        third = sim.step(Step("delete-workload", "a"))
        assert list(third) == ["b"] and third["b"].placement == {"main": {"host-1": 4}}


@pytest.mark.sim
def test_a_preempted_job_runs_its_full_time_again_and_its_old_finish_is_dropped(
    sim_backend: SimBackend,
) -> None:
    # low (6 GPUs, 100 s) at 0; high (8 GPUs, 30 s) at 10 evicts it and runs 10-40; low is
    # admitted again at 40 and runs its full 100 s (Kueue does not checkpoint): its first
    # admission's finish at 100 falls while it runs its second and must not end it.
    scenario = scenario_from_data(world(
        job("low", 6, priorityClass="low", submitAt=0, runFor=100),
        job("high", 8, priorityClass="high", submitAt=10, runFor=30),
    ))  # fmt: skip
    jobs = replay_on(scenario, sim_backend.session).jobs
    assert [x.at for x in jobs["low"].admissions] == [0.0, 40.0]
    assert jobs["low"].preempted_at == [10.0]
    assert jobs["low"].finished_at == 140.0
    assert jobs["high"].finished_at == 40.0


@pytest.mark.sim
def test_a_step_kueue_refuses_is_one_error_and_the_process_goes_on(sim_backend: SimBackend) -> None:
    empty = scenario_from_data(world())
    with sim_backend.session(empty) as sim, pytest.raises(BackendError, match="delete-workload"):
        sim.step(Step("delete-workload", "nobody"))
    observed = sim_backend.run(scenario_from_data(world(job("a", 2))))
    assert observed.outcomes["a"].admitted
