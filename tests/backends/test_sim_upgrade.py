"""`upgrade-kueue` on the sim (harness/sim/upgrade.py): the old version's kueue-sim runs up to
the step, the new version's starts from the world it leaves, as a replaced Kueue rebuilds
its queues from the cluster's Workloads."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.backends.base import Unsupported
from harness.backends.sim import SimBackend
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.sim import upgrade

SUITES = Path(__file__).resolve().parents[2] / "suites"
UPGRADE = (
    SUITES / "upgrade" / "upgrade-v0.18.2-to-v0.19.2-running-job-kept-pending-job-admitted.yaml"
)
HOST = {"nvidia.com/gpu": 4, "cpu": "8", "pods": 10}


def world(steps: list[dict[str, object]]) -> dict[str, object]:
    job = {"name": "main", "count": 4, "requests": {"nvidia.com/gpu": 1},
           "topology": {"mode": "required", "level": "kubernetes.io/hostname"}}  # fmt: skip
    return {
        "name": "x",
        "kueue": "v0.18.2",
        "topology": {"name": "t", "levels": ["example.com/rack", "kubernetes.io/hostname"]},
        "nodes": [
            {"name": f"n{i}", "labels": {"example.com/rack": "r1"}, "allocatable": HOST}
            for i in (1, 2)
        ],
        "usage": [{"name": "busy", "node": "n2", "requests": {"nvidia.com/gpu": 1}}],
        "workloads": [{"name": name, "podSets": [job]} for name in ("a", "b", "c")],
        "steps": steps,
    }


def test_the_new_version_starts_from_the_world_the_old_one_left() -> None:
    """Admitted workloads keep flavor and nodes, waiting ones are submitted again in their
    order, deleted ones and deleted usage are gone, cordons stay, later steps follow."""
    scenario = scenario_from_data(world([
        {"delete-usage": "busy"}, {"delete-workload": "a"}, {"cordon": "n1"},
        {"upgrade-kueue": "v0.19.2"}, {"delete-workload": "b"},
    ]))  # fmt: skip
    index = upgrade.upgrade_index(scenario)
    assert index == 3
    assert [s.action for s in upgrade.before(scenario, index).steps] == [
        "delete-usage",
        "delete-workload",
        "cordon",
    ]
    state = {
        "b": Outcome(admitted=True, placement={"main": {"n1": 4}}, flavors={"main": "default"}),
        "c": Outcome(admitted=False, message="waits"),
    }
    rest = upgrade.after(scenario, index, state)
    assert rest.usage == ()
    assert [n.unschedulable for n in rest.nodes] == [True, False]
    [b] = rest.admitted
    assert (b.name, b.pod_sets[0].flavor, dict(b.pod_sets[0].placement or {})) == (
        "b",
        "default",
        {"n1": 4},
    )
    assert [w.name for w in rest.workloads] == ["c"]
    assert [(s.action, s.target) for s in rest.steps] == [("delete-workload", "b")]


def test_what_a_fault_leaves_is_not_carried() -> None:
    scenario = scenario_from_data(world([{"node-not-ready": "n1"}, {"upgrade-kueue": "v0.19.2"}]))
    with pytest.raises(upgrade.NotCarried, match="upgrade-kueue after node-not-ready"):
        upgrade.after(scenario, 1, {})


@pytest.mark.sim
def test_the_upgrade_scenario_runs_both_versions_on_the_sim(sim_binary: Path) -> None:
    """v0.18.2 leaves train waiting after its host's usage goes (kueue#13772); the v0.19.2
    sim, starting from that world, admits it there and keeps serve and batch in place."""
    backend = SimBackend(kueue_version="v0.18.2")
    try:
        observed = backend.run(load_scenario(UPGRADE))
        scenario = load_scenario(UPGRADE)
        assert observed.kueue == "v0.18.2"
        after_delete, after_upgrade = observed.steps[0], observed.steps[1]
        assert not after_delete["train"].admitted
        assert after_upgrade["train"].placement == {"main": {"gpu-node-3": 4}}
        assert after_upgrade["serve"].placement == {"main": {"gpu-node-1": 4}}
        assert len(observed.steps) == len(scenario.steps)
    finally:
        backend.close()


@pytest.mark.sim
def test_an_upgrade_after_a_fault_is_refused_on_the_sim(sim_binary: Path) -> None:
    scenario = scenario_from_data(world([{"node-not-ready": "n1"}, {"upgrade-kueue": "v0.19.2"}]))
    backend = SimBackend(kueue_version="v0.18.2")
    try:
        with pytest.raises(Unsupported, match="cannot hand what a fault leaves"):
            backend.run(scenario)
    finally:
        backend.close()


def test_a_run_at_or_past_the_upgrade_version_says_there_is_no_upgrade() -> None:
    """--kueue-version v0.19.2 on a file that upgrades to v0.19.2: pytest skips it with this
    reason and compare-versions does not compare it; from v0.17.1 it is still an upgrade."""
    scenario = scenario_from_data(world([{"upgrade-kueue": "v0.19.2"}]))
    assert scenario.no_upgrade() is None
    assert dataclasses.replace(scenario, kueue="v0.17.1").no_upgrade() is None
    assert dataclasses.replace(scenario, kueue="v0.19.2").no_upgrade() == (
        "steps: upgrade-kueue: v0.19.2 is not newer than v0.19.2, the version the scenario "
        "starts on here: there is no upgrade to check"
    )
