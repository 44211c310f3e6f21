"""The in-process backend runs Kueue's real scheduler: outcomes reasoned from the TAS rules.

Each case states what Kueue v0.19.2 must do and why; none is copied from a run. Needs Go to
build harness/sim/go/ the first time (a few minutes cold, seconds after).
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.backends.sim import SimBackend, _decidable
from harness.errors import Nondeterministic
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.sim.build import build_sim
from harness.sim.contract import scenario_to_dict
from harness.sim.process import SimProcess, run_sim
from harness.toolchain.gocmd import ToolchainError

HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"


def node(name: str, rack: str) -> dict[str, Any]:
    alloc = {"nvidia.com/gpu": 4, "cpu": "32", "memory": "256Gi", "pods": 110}
    return {"name": name, "labels": {RACK: rack}, "allocatable": alloc}


def job(name: str, count: int = 4, **topology: Any) -> dict[str, Any]:
    pod_set: dict[str, Any] = {"name": "main", "count": count, "requests": {"nvidia.com/gpu": 1}}
    if topology:
        pod_set["topology"] = topology
    return {"name": name, "podSets": [pod_set]}


def busy(*nodes: str) -> list[dict[str, Any]]:
    """Two of the four GPUs taken on each named node by a pod Kueue does not manage."""
    return [{"node": n, "requests": {"nvidia.com/gpu": 2}} for n in nodes]


def guide(
    *workloads: dict[str, Any], usage: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    """The seed guide's cluster: two hosts in rack-1, one in rack-2, 4 GPUs each."""
    data = {
        "name": "guide",
        "topology": {"name": "gpu-topology", "levels": [RACK, HOST]},
        "nodes": [
            node("gpu-node-1", "rack-1"),
            node("gpu-node-2", "rack-1"),
            node("gpu-node-3", "rack-2"),
        ],
        "usage": busy("gpu-node-1", "gpu-node-2") if usage is None else usage,
        "workloads": list(workloads),
        **extra,
    }
    return scenario_to_dict(scenario_from_data(data))  # validated like a file


ADMITTED_ON_NODE_3 = {
    "admitted": True,
    "placement": {"main": {"gpu-node-3": 4}},
    "flavors": {"main": "gpu-topology"},  # the version-1 flavor is named after its topology
}


def run_one(binary: Path, scenario: dict[str, Any]) -> dict[str, Any]:
    [answer] = run_sim([scenario], binary)
    assert answer["error"] is None, answer["error"]
    outcome: dict[str, Any] = answer["outcome"]
    return outcome


@pytest.mark.sim
def test_required_host_lands_on_the_only_free_host(sim_binary: Path) -> None:
    # Hosts 1 and 2 have 2 free GPUs each; only gpu-node-3 can take all 4 pods on one host.
    outcome = run_one(sim_binary, guide(job("train", mode="required", level=HOST)))
    assert outcome == {"train": ADMITTED_ON_NODE_3}


@pytest.mark.sim
def test_required_host_waits_when_every_host_is_half_busy(sim_binary: Path) -> None:
    # Every host has 2 free GPUs: the best single host fits 2 of the 4 pods.
    usage = busy("gpu-node-1", "gpu-node-2", "gpu-node-3")
    outcome = run_one(sim_binary, guide(job("train", mode="required", level=HOST), usage=usage))
    assert outcome["train"]["admitted"] is False
    assert "allows to fit only 2 out of 4 pod(s)" in outcome["train"]["message"]
    assert outcome["train"]["message"].startswith("couldn't assign flavors to pod set main: ")


@pytest.mark.sim
def test_admitted_usage_is_seen_by_the_next_workload(sim_binary: Path) -> None:
    # The first job takes gpu-node-3 whole; the second then finds no host with 4 free GPUs.
    first, second = (
        job("first", mode="required", level=HOST),
        job("second", mode="required", level=HOST),
    )
    outcome = run_one(sim_binary, guide(first, second))
    assert list(outcome) == ["first", "second"]  # file order
    assert outcome["first"]["placement"] == {"main": {"gpu-node-3": 4}}
    assert outcome["second"]["admitted"] is False
    assert "allows to fit only 2 out of 4 pod(s)" in outcome["second"]["message"]


@pytest.mark.sim
def test_preferred_host_falls_back_to_one_rack(sim_binary: Path) -> None:
    # No host has 4 free GPUs; rack-1 has 2+2, rack-2 only 2: the pods stay within rack-1.
    usage = busy("gpu-node-1", "gpu-node-2", "gpu-node-3")
    outcome = run_one(sim_binary, guide(job("train", mode="preferred", level=HOST), usage=usage))
    assert outcome["train"] == {
        "admitted": True,
        "placement": {"main": {"gpu-node-1": 2, "gpu-node-2": 2}},
        "flavors": {"main": "gpu-topology"},
    }


@pytest.mark.sim
def test_unconstrained_uses_free_gpus_anywhere(sim_binary: Path) -> None:
    # 6 GPUs free in 2-GPU pieces: 4 pods fit, never more than 2 on one host.
    usage = busy("gpu-node-1", "gpu-node-2", "gpu-node-3")
    outcome = run_one(sim_binary, guide(job("train", mode="unconstrained"), usage=usage))
    placement = outcome["train"]["placement"]["main"]
    assert outcome["train"]["admitted"] is True
    assert sum(placement.values()) == 4
    assert all(pods <= 2 for pods in placement.values())


@pytest.mark.sim
def test_quota_stops_a_workload_that_would_fit_on_nodes(sim_binary: Path) -> None:
    # Quota 6 GPUs: the first job uses 4, the second needs 4 of the 2 left.
    first = job("first", mode="required", level=HOST)
    second = job("second", mode="required", level=HOST)
    data = guide(first, second, usage=[], queue={"nominalQuota": {"nvidia.com/gpu": 6}})
    outcome = run_one(sim_binary, data)
    assert outcome["first"]["admitted"] is True
    assert sorted(outcome["first"]["placement"]["main"].values()) == [4]
    assert outcome["second"]["admitted"] is False
    assert (
        "insufficient unused quota for nvidia.com/gpu in flavor gpu-topology, 2 more needed"
        in outcome["second"]["message"]
    )


@pytest.mark.sim
def test_webhook_refuses_a_slice_larger_than_the_job(sim_binary: Path) -> None:
    # The Job webhook rejects podset-slice-size above the pod count; nothing is queued.
    bad = job("bad", count=2, mode="required", level=RACK, sliceLevel=HOST, sliceSize=3)
    outcome = run_one(sim_binary, guide(bad, job("next", mode="required", level=HOST)))
    assert outcome["bad"]["rejected"] is True
    assert "must not be greater than pod set count 2" in outcome["bad"]["message"]
    assert outcome["next"]["placement"] == {"main": {"gpu-node-3": 4}}


def panicking(base: dict[str, Any]) -> dict[str, Any]:
    """A Workload the webhook would refuse, handed straight to the scheduler: with
    TASBalancedPlacement, a preferred slice larger than the pod set divides by zero."""
    data = copy.deepcopy(base)
    data["name"] = "panics"
    data["featureGates"] = {"TASBalancedPlacement": True}
    data["simOptions"] = {"skipWebhook": True}
    boom = job("boom", count=2, mode="preferred", level=HOST, sliceLevel=HOST, sliceSize=3)
    data["workloads"] = [{**boom, "queue": "tas-cq"}]
    return data


@pytest.mark.sim
def test_a_kueue_panic_fails_one_scenario_not_the_batch(sim_binary: Path) -> None:
    good = guide(job("train", mode="required", level=HOST))
    answers = run_sim([panicking(good), good], sim_binary)
    assert answers[0]["error"] is not None
    assert "divide by zero" in answers[0]["error"]
    assert answers[1]["error"] is None
    assert answers[1]["outcome"]["train"]["placement"] == {"main": {"gpu-node-3": 4}}


@pytest.mark.sim
def test_feature_gates_do_not_leak_between_scenarios(sim_binary: Path) -> None:
    # After a scenario that turns TASBalancedPlacement on, the same panicking input without
    # the gate must take the default (gate off) path and not panic.
    gated = panicking(guide(job("x", mode="required", level=HOST)))
    ungated = copy.deepcopy(gated)
    ungated["featureGates"] = {}
    answers = run_sim([gated, ungated], sim_binary)
    assert answers[0]["error"] is not None
    assert answers[1]["error"] is None


@pytest.mark.sim
def test_unknown_feature_gate_is_an_error_for_that_scenario(sim_binary: Path) -> None:
    data = guide(job("train", mode="required", level=HOST))
    bad = {**data, "featureGates": {"NoSuchGate": True}}
    answers = run_sim([bad, data], sim_binary)
    assert "NoSuchGate" in (answers[0]["error"] or "")
    assert answers[1]["error"] is None


@pytest.mark.sim
def test_backend_adapter_returns_outcomes(sim_backend: SimBackend) -> None:
    data = {
        "name": "adapter",
        "topology": {"name": "gpu-topology", "levels": [RACK, HOST]},
        "nodes": [node("gpu-node-1", "rack-1")],
        "workloads": [job("train", count=2, mode="required", level=HOST)],
    }
    observed = sim_backend.run(scenario_from_data(data))
    assert observed.outcomes["train"].admitted
    assert observed.outcomes["train"].placement == {"main": {"gpu-node-1": 2}}


@pytest.mark.sim
def test_process_is_stopped_after_use(sim_binary: Path) -> None:
    sim = SimProcess(sim_binary)
    with sim:
        sim.run(guide(job("train", mode="required", level=HOST)))
        proc = sim._proc
        assert proc is not None and proc.poll() is None
    assert proc.poll() is not None


@pytest.mark.sim
def test_equivalent_pending_workload_is_parked_without_evaluation(sim_binary: Path) -> None:
    # SchedulingEquivalenceHashing (on by default in v0.19) parks a workload identical to one
    # already inadmissible: the scheduler never evaluates it, so no pending message is written.
    usage = busy("gpu-node-1", "gpu-node-2", "gpu-node-3")
    same = [job(n, mode="required", level=HOST) for n in ("a", "b")]
    [answer] = run_sim([guide(*same, usage=usage)], sim_binary)
    assert "allows to fit only 2 out of 4 pod(s)" in answer["outcome"]["a"]["message"]
    assert answer["outcome"]["b"] == {"admitted": False, "message": ""}
    assert answer["notes"] and answer["notes"][0].startswith("b: not evaluated")


@pytest.mark.sim
def test_equivalence_hashing_off_evaluates_every_workload(sim_binary: Path) -> None:
    usage = busy("gpu-node-1", "gpu-node-2", "gpu-node-3")
    same = [job(n, mode="required", level=HOST) for n in ("a", "b")]
    data = guide(*same, usage=usage, featureGates={"SchedulingEquivalenceHashing": False})
    outcome = run_one(sim_binary, data)
    assert outcome["a"]["message"] == outcome["b"]["message"]
    assert "allows to fit only 2 out of 4 pod(s)" in outcome["b"]["message"]


def run_steps(binary: Path, data: dict[str, Any]) -> dict[str, Any]:
    [answer] = run_sim([data], binary)
    assert answer["error"] is None, answer["error"]
    return answer


@pytest.mark.sim
def test_deleting_usage_retries_the_pending_job(sim_binary: Path) -> None:
    # Every host half busy: the job waits. Freeing gpu-node-3 makes it the only whole host.
    usage = [
        {**u, "name": f"busy-{i}"}
        for i, u in enumerate(busy("gpu-node-1", "gpu-node-2", "gpu-node-3"))
    ]
    data = guide(
        job("train", mode="required", level=HOST), usage=usage, steps=[{"delete-usage": "busy-2"}]
    )
    answer = run_steps(sim_binary, data)
    assert answer["outcome"]["train"]["admitted"] is False
    assert answer["steps"] == [{"train": ADMITTED_ON_NODE_3}]


@pytest.mark.sim
def test_a_freed_host_goes_to_the_oldest_pending_job(sim_binary: Path) -> None:
    # "first" holds gpu-node-3; "older" and "newer" both wait for a whole host. Deleting
    # "first" frees gpu-node-3; BestEffortFIFO retries the older job first and it takes it.
    jobs = [job(n, mode="required", level=HOST) for n in ("first", "older", "newer")]
    jobs[2]["podSets"][0]["count"] = 3  # not equivalent to "older": no hash parking
    data = guide(*jobs, steps=[{"delete-workload": "first"}])
    answer = run_steps(sim_binary, data)
    assert [o["admitted"] for o in answer["outcome"].values()] == [True, False, False]
    [after] = answer["steps"]
    assert "first" not in after
    assert after["older"] == ADMITTED_ON_NODE_3
    assert after["newer"]["admitted"] is False


@pytest.mark.sim
def test_cordoned_node_is_skipped_until_uncordoned(sim_binary: Path) -> None:
    a, b = job("a", mode="required", level=HOST), job("b", mode="required", level=HOST)
    steps = [{"cordon": "gpu-node-3"}, {"submit": a}, {"uncordon": "gpu-node-3"}, {"submit": b}]
    answer = run_steps(sim_binary, guide(steps=steps))
    assert answer["steps"][1]["a"]["admitted"] is False  # only half-free hosts remain
    # Uncordoning retries "a", which then takes gpu-node-3; "b" finds no whole host left.
    assert answer["steps"][2]["a"]["placement"] == {"main": {"gpu-node-3": 4}}
    assert answer["steps"][3]["b"]["admitted"] is False


def test_building_without_go_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KTH_CACHE", str(tmp_path))  # nothing cached here
    monkeypatch.setenv("PATH", str(tmp_path))  # and no go on PATH
    with pytest.raises(ToolchainError, match="Go toolchain not found"):
        build_sim()


def test_a_crashed_process_fails_its_scenario_and_is_restarted(tmp_path: Path) -> None:
    # Stand-in binary: answers the first scenario by dying, later ones normally.
    marker = tmp_path / "crashed-once"
    fake = tmp_path / "kueue-sim"
    fake.write_text(
        "#!/bin/sh\n"
        f'if [ ! -e {marker} ]; then touch {marker}; echo "boom" >&2; exit 3; fi\n'
        'while read -r line; do echo \'{"name": "x", "outcome": {}, "error": null}\'; done\n'
    )
    fake.chmod(0o755)
    answers = run_sim([{"name": "first"}, {"name": "second"}], fake)
    assert answers[0]["error"] == "kueue-sim exited with code 3: boom"
    assert answers[1]["error"] is None


def test_a_crash_mid_batch_fails_only_the_scenario_it_was_on(tmp_path: Path) -> None:
    # First process: answers one scenario, then dies on the second. Its successor answers all.
    marker = tmp_path / "crashed-once"
    fake = tmp_path / "kueue-sim"
    answer = '{"name": "x", "outcome": {}, "error": null}'
    fake.write_text(
        "#!/bin/sh\n"
        f"if [ ! -e {marker} ]; then touch {marker}; read -r line; echo '{answer}';"
        " read -r line; exit 5; fi\n"
        f"while read -r line; do echo '{answer}'; done\n"
    )
    fake.chmod(0o755)
    answers = run_sim([{"name": n} for n in ("one", "two", "three")], fake)
    assert [a["error"] for a in answers] == [
        None,
        "kueue-sim exited with code 5: no output on stderr",
        None,
    ]
    assert answers[1]["name"] == "two"


@pytest.mark.sim
def test_a_retry_round_goes_through_every_pending_workload_in_order(sim_binary: Path) -> None:
    # Three full 8-GPU hosts and twelve pending jobs of 1..12 pods. Freeing n0 retries all
    # twelve oldest first: 1+2+3 pods fit in its 8 GPUs, every later job needs more than 2.
    nodes = [
        {"name": f"n{i}", "labels": {RACK: "r0"}, "allocatable": {"nvidia.com/gpu": 8, "pods": 110}}
        for i in range(3)
    ]
    usage = [
        {"name": f"full-{i}", "node": f"n{i}", "requests": {"nvidia.com/gpu": 8}} for i in range(3)
    ]
    jobs = [job(f"w{k}", count=k, mode="preferred", level=HOST) for k in range(1, 13)]
    data = scenario_to_dict(
        scenario_from_data(
            {
                "name": "retry-round",
                "topology": {"name": "t", "levels": [RACK, HOST]},
                "nodes": nodes,
                "usage": usage,
                "workloads": jobs,
                "steps": [{"delete-usage": "full-0"}],
            }
        )
    )
    answer = run_steps(sim_binary, data)
    assert not any(o["admitted"] for o in answer["outcome"].values())
    [after] = answer["steps"]
    admitted = {name: o["placement"]["main"] for name, o in after.items() if o["admitted"]}
    assert admitted == {"w1": {"n0": 1}, "w2": {"n0": 2}, "w3": {"n0": 3}}


def test_old_sim_builds_are_pruned_to_the_newest_few(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from harness.sim.build import prune_old_sims

    monkeypatch.setenv("KTH_CACHE", str(tmp_path))
    builds = []
    for age, name in enumerate(["sim-a", "sim-b", "sim-c", "sim-d", "sim-e"]):
        d = tmp_path / name
        d.mkdir()
        os.utime(d, (1000 + age, 1000 + age))  # sim-e newest
        builds.append(d)
    (tmp_path / "kueue-v0.19.2").mkdir()
    removed = prune_old_sims(keep=builds[0], newest=3)  # keeps the current (oldest) one too
    assert sorted(p.name for p in removed) == ["sim-b", "sim-c"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["kueue-v0.19.2", "sim-a", "sim-d", "sim-e"]


GROUP_FINDING = Path(__file__).parents[2] / (
    "suites/kueue-findings/v2-group-leader-without-gpu-loses-flavor-scan.yaml"
)


@pytest.mark.sim
def test_an_alternating_message_is_checked_when_every_alternative_holds(
    sim_backend: SimBackend,
) -> None:
    # Kueue retries the group every cycle and names either of its pod sets (rules §8): the
    # expected reason is in both messages, so the outcome is decidable; with no expectation on
    # the group it is not, and the scenario is still refused as nondeterministic.
    scenario = load_scenario(GROUP_FINDING)
    assert sim_backend.run(scenario).outcomes["group"].admitted is False
    unexpected = dataclasses.replace(
        scenario, expect={k: v for k, v in (scenario.expect or {}).items() if k != "group"}
    )
    # Go's map order is not a fair coin (one of two entries comes first ~7 times in 8), so
    # the sim sees the alternation within its 8 rest cycles only about two runs in three:
    # one of 12 runs must see it (all missing it: about 1 in 500,000).
    refusals = []
    for _ in range(12):
        try:
            sim_backend.run(unexpected)
        except Nondeterministic as refusal:
            refusals.append(str(refusal))
            break
    assert refusals and "group: its message changes" in refusals[0]


def test_an_alternative_without_the_expected_message_is_not_decidable() -> None:
    scenario = load_scenario(GROUP_FINDING)
    note = (
        "group: its message changes from one scheduling cycle to the next: "
        '"couldn\'t assign flavors to pod set leader: topology \\"l4-topology\\" doesn\'t allow '
        'to fit any of 1 pod(s)" | "couldn\'t assign flavors to pod set workers: insufficient'
        ' quota"'
    )
    assert not _decidable(scenario, note)
    assert _decidable(
        scenario,
        note.replace(
            "insufficient quota", 'topology \\"l4-topology\\" doesn\'t allow to fit any of 1 pod(s)'
        ),
    )
