"""Two TAS flavors on the same nodes before v0.18 (KueueRules.overlapping_flavors_share_usage,
kueue#11210): each flavor counts only its own usage, so Kueue puts a pod on a node a sibling
flavor's pods fill, and kube-scheduler cannot bind it (harness/fit/binding.py). Each
test fails with the rule removed (the flag set as v0.19.2's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fit import fit
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario, Step
from tests import rule_flags
from tests.rule_flags import AS_IT_IS, AS_V0_19_2

OVERLAP = Path(__file__).resolve().parents[2] / "suites" / "v2" / "overlapping-flavors"
KEEPS_OUT = OVERLAP / "v2-overlap-sibling-usage-keeps-workload-out.yaml"
FALLBACK = OVERLAP / "v2-overlap-fallback-flavor-on-shared-nodes.yaml"
PREEMPTION = OVERLAP / "v2-overlap-sibling-usage-forces-preemption.yaml"
MULTI_POD_SET = OVERLAP / "v2-overlap-multi-podset-no-self-overlap.yaml"


@pytest.fixture(params=[AS_IT_IS, AS_V0_19_2])
def rule_removed(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield from rule_flags.rule_removed(request, "v0.17.1", overlapping_flavors_share_usage=True)


def on(path: Path, version: str = "v0.17.1", **gates: bool) -> Scenario:
    scenario = dataclasses.replace(load_scenario(path), kueue=version, expect=None)
    if gates:
        scenario = dataclasses.replace(scenario, feature_gates={**scenario.feature_gates, **gates})
    return scenario


def _cannot_start(outcome: Outcome, pod_set: str = "one") -> bool:
    """Admitted, and kube-scheduler finds no room for its pod on the node Kueue chose."""
    reason = outcome.unschedulable_reasons.get(pod_set, "")
    return outcome.unschedulable.get(pod_set) == 1 and "Insufficient cpu" in reason


def test_a_flavor_does_not_see_its_siblings_usage(rule_removed: bool) -> None:
    """on-a (flavor-a) holds 300m of x1's 400m; flavor-b's view of x1 is empty, so on-b's
    200m is admitted there and its pod cannot start."""
    on_b = fit(on(KEEPS_OUT)).outcomes["on-b"]
    if rule_removed:
        assert not on_b.admitted and "doesn't allow to fit any of 1 pod(s)" in on_b.message
        return
    assert on_b.admitted and on_b.flavors == {"one": "flavor-b"}
    assert on_b.placement == {"one": {"x1": 1}}
    assert _cannot_start(on_b)


def test_best_fit_ties_on_nodes_a_sibling_fills(rule_removed: bool) -> None:
    """flavor-a's pods fill x1; flavor-b sees x1 and x2 equally empty and the tie goes to
    x1 (the first), where the pod cannot start."""
    pending = fit(on(FALLBACK)).outcomes["pending-wl"]
    assert pending.admitted and pending.flavors == {"one": "tas-flavor-b"}
    if rule_removed:
        assert pending.placement == {"one": {"x2": 1}} and not pending.unschedulable
        return
    assert pending.placement == {"one": {"x1": 1}}
    assert _cannot_start(pending)


def test_a_siblings_usage_does_not_force_preemption(rule_removed: bool) -> None:
    """flavor-a's view of x1 has w1 (1 CPU) but not w2 (3 CPUs, flavor-b): w3's 2 CPUs fit
    without evicting w1, and w3's pod finds 1 CPU left."""
    outcomes = fit(on(PREEMPTION)).outcomes
    w1, w3 = outcomes["w1-low-prio-a"], outcomes["w3-pending"]
    assert w3.admitted and w3.placement == {"one": {"x1": 1}}
    if rule_removed:
        assert w1.preempted and not w1.admitted and not w3.unschedulable
        return
    assert w1.admitted and not w1.preempted
    assert _cannot_start(w3)


def test_a_workloads_own_pod_sets_are_not_assumed_across_flavors(rule_removed: bool) -> None:
    """ps-a (flavor-a) is placed on x1 first; flavor-b's placement of ps-b does not assume
    it, so both go to x1, where only one 300m pod fits (which one is creation order)."""
    wl = fit(on(MULTI_POD_SET)).outcomes["multi-podset-wl"]
    assert wl.admitted and wl.placement["ps-a"] == {"x1": 1}
    if rule_removed:
        assert wl.placement["ps-b"] == {"x2": 1} and not wl.unschedulable
        return
    assert wl.placement["ps-b"] == {"x1": 1}
    assert sum(wl.unschedulable.values()) == 1


def test_the_waiting_pod_starts_once_the_sibling_leaves(rule_removed: bool) -> None:
    """Deleting on-a frees x1: kube-scheduler binds on-b's waiting pod (retried on the
    change), and Kueue keeps its admission."""
    scenario = on(KEEPS_OUT)
    scenario = dataclasses.replace(scenario, steps=(Step("delete-workload", "on-a"),))
    result = fit(scenario)
    if rule_removed:
        assert not result.outcomes["on-b"].admitted
        return
    assert _cannot_start(result.outcomes["on-b"])
    after = result.steps[0]["on-b"]
    assert after.admitted and after.placement == {"one": {"x1": 1}} and not after.unschedulable


def _on_b_later(version: str, upgrade: bool) -> Scenario:
    """on-b submitted by a step, after an upgrade to v0.18.2 or not."""
    scenario = on(KEEPS_OUT, version)
    (on_b,) = scenario.workloads
    steps = (Step("upgrade-kueue", "v0.18.2"),) if upgrade else ()
    steps += (Step("submit", on_b),)
    return dataclasses.replace(scenario, workloads=(), steps=steps)


def test_an_upgrade_to_v0_18_counts_the_siblings_usage(rule_removed: bool) -> None:
    """The new Kueue builds its TAS cache afresh with the flavors sharing usage: on-b, which
    v0.17.1 would admit onto x1, waits after the upgrade."""
    before = fit(_on_b_later("v0.17.1", upgrade=False)).steps[-1]["on-b"]
    after = fit(_on_b_later("v0.17.1", upgrade=True)).steps[-1]["on-b"]
    assert not after.admitted
    assert "doesn't allow to fit any of 1 pod(s)" in after.message
    assert before.admitted is not rule_removed


def test_the_gate_off_on_v0_19_2_is_v0_17_1s_rule(rule_removed: bool) -> None:
    """TASHandleOverlappingFlavors off: v0.18+ counts per flavor as v0.17.1 does."""
    gate_off = fit(on(KEEPS_OUT, "v0.19.2", TASHandleOverlappingFlavors=False)).outcomes
    assert gate_off["on-b"].admitted and _cannot_start(gate_off["on-b"])
    assert not fit(on(KEEPS_OUT, "v0.19.2")).outcomes["on-b"].admitted
    v0_17_1 = fit(on(KEEPS_OUT)).outcomes["on-b"]
    assert (v0_17_1 == gate_off["on-b"]) is not rule_removed
