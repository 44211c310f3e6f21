"""The fit model's node failure rules per Kueue version (harness/fit/versions.py, faults.py,
replacement.py; kueue-version-differences.md §2.7, §9): hand-worked cases on a small
cluster. Each fails with the rule's flag set as v0.19.2's (`as_v0_19_2`)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.fit.versions import RULES
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.scenario.strict_yaml import parse_yaml

OLD = ["v0.17.1", "v0.18.2"]

NODES = """
topology: {name: t, levels: [example.com/block, example.com/rack, kubernetes.io/hostname]}
x-host: &host {nvidia.com/gpu: 8, pods: 110}
nodes:
  - {name: a1, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: a2, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: a3, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: c1, labels: {example.com/block: b1, example.com/rack: r10}, allocatable: *host}
  - {name: c2, labels: {example.com/block: b1, example.com/rack: r10}, allocatable: {nvidia.com/gpu: 24, pods: 110}}
"""
# BestFit puts a two-pod job requiring a rack in r1 (room for 3 pods) rather than r10 (room
# for 4), on a1 and a2.
REQUIRED_RACK = (
    "count: 2, requests: {nvidia.com/gpu: 8}, topology: {mode: required, level: example.com/rack}"
)


def world(
    version: str, steps: str, *, head: str = "", flavor: str = "{name: gpu}", usage: str = ""
) -> Scenario:
    text = f"name: w\n{head}flavor: {flavor}\n{NODES}{usage}workloads:\n  - name: job\n"
    text += f"    podSets:\n      - {{name: main, {REQUIRED_RACK}}}\nsteps:\n{steps}"
    scenario = scenario_from_data(parse_yaml(text, "w.yaml"), "w.yaml")
    return dataclasses.replace(scenario, kueue=version)


def last(scenario: Scenario) -> Outcome:
    return fit(scenario).steps[-1]["job"]


def as_v0_19_2(monkeypatch: pytest.MonkeyPatch, version: str, flag: str) -> None:
    """`version`'s rules with `flag` as v0.19.2 has it."""
    new = getattr(RULES["v0.19.2"], flag)
    monkeypatch.setitem(RULES, version, dataclasses.replace(RULES[version], **{flag: new}))


@pytest.mark.parametrize("version", OLD)
def test_before_v0_19_a_node_not_ready_for_30_s_is_failed_while_its_pods_run(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kueue#13043: v0.18.2 node_controller.go:176-184 fails the node whatever its pods do;
    the second pass moves a1's pod to a3 (required rack r1) while it still runs on a1."""
    scenario = world(version, "  - node-not-ready: a1\n")
    got = last(scenario)
    assert got.placement == {"main": {"a2": 1, "a3": 1}}
    assert got.replaced == {"main": {"a1": ("a3",)}}
    assert got.drift == {"main": {"a1": 1}}
    as_v0_19_2(monkeypatch, version, "not_ready_timer_gated")
    kept = last(scenario)  # v0.19.2: its pod still runs, the node is kept
    assert kept.placement == {"main": {"a1": 1, "a2": 1}}
    assert kept.replaced == {}


@pytest.mark.parametrize("version", OLD)
def test_before_v0_19_two_not_ready_steps_are_two_replacements(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each NotReady node is failed and replaced within its step, so the second finds
    unhealthyNodes empty: no multiple-failure eviction. Preferred rack: a1's pod goes to the
    tightest rack with room, r1 (a3); a2's then to r10, whose tightest node is c1."""
    scenario = world(version, "  - node-not-ready: a1\n  - node-not-ready: a2\n")
    scenario = dataclasses.replace(
        scenario,
        workloads=[
            dataclasses.replace(
                w,
                pod_sets=[
                    dataclasses.replace(
                        ps, topology=dataclasses.replace(ps.topology, mode="preferred")
                    )
                    for ps in w.pod_sets
                ],
            )
            for w in scenario.workloads
        ],
    )
    first, second = (step["job"] for step in fit(scenario).steps)
    assert first.replaced == {"main": {"a1": ("a3",)}}
    assert second.replaced == {"main": {"a2": ("c1",)}}
    assert second.evicted is None
    assert second.placement == {"main": {"a3": 1, "c1": 1}}
    assert second.drift == {"main": {"a1": 1, "a2": 1}}
    as_v0_19_2(monkeypatch, version, "not_ready_timer_gated")
    kept = fit(scenario).steps[-1]["job"]
    assert kept.replaced == {} and kept.placement == {"main": {"a1": 1, "a2": 1}}


@pytest.mark.parametrize("version", OLD)
def test_before_v0_19_2_rack_r1_takes_a_node_of_rack_r10(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kueue#14452: belongsToRequiredDomain (v0.18.2 tas_flavor_snapshot.go:1727-1733) tests
    "b1,r10,c1" against rack "b1,r1" by string prefix. With a3 busy, r1 has no spare; the
    replacement goes to r10's tightest node, c1."""
    busy = "usage:\n  - {name: busy, node: a3, requests: {nvidia.com/gpu: 8}}\n"
    scenario = world(version, "  - delete-node: a1\n", usage=busy)
    got = last(scenario)
    assert got.evicted is None
    assert got.placement == {"main": {"a2": 1, "c1": 1}}
    assert got.replaced == {"main": {"a1": ("c1",)}}
    as_v0_19_2(monkeypatch, version, "replacement_domain_by_id")
    fixed = last(scenario)
    assert fixed.evicted is not None and fixed.evicted.reason == "NodeFailures"
    assert fixed.replaced == {}


def test_on_v0_17_1_a_taint_only_the_flavor_tolerates_fails_the_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """v0.17.1 judges taints by the pod sets' own tolerations (workload.PodSetsOnNode); from
    v0.18 merged with the flavor's (podSetsWithEffectiveTolerationsOnNode). With
    TASReplaceNodeOnPodTermination off an untolerated taint fails the node at once."""
    flavor = "{name: gpu, tolerations: [{key: example.com/maint, operator: Exists}]}"
    head = "featureGates: {TASReplaceNodeOnPodTermination: false}\n"
    step = "  - taint-node: {node: a1, key: example.com/maint, effect: NoSchedule}\n"
    scenario = world("v0.17.1", step, head=head, flavor=flavor)
    got = last(scenario)
    assert got.replaced == {"main": {"a1": ("a3",)}}
    assert got.placement == {"main": {"a2": 1, "a3": 1}}
    as_v0_19_2(monkeypatch, "v0.17.1", "taints_judged_with_flavor_tolerations")
    kept = last(scenario)
    assert kept.replaced == {} and kept.placement == {"main": {"a1": 1, "a2": 1}}
    v18 = last(dataclasses.replace(scenario, kueue="v0.18.2"))
    assert v18.replaced == {}


@pytest.mark.parametrize("version", OLD)
def test_the_not_ready_timer_gate_is_refused_before_v0_19(version: str) -> None:
    """TASReplaceNodeDueToNotReadyOverFixedTime is registered from v0.19 only."""
    head = "featureGates: {TASReplaceNodeDueToNotReadyOverFixedTime: false}\n"
    with pytest.raises(UnsupportedVersionError) as err:
        fit(world(version, "  - node-not-ready: a1\n", head=head))
    assert "does not register the gate" in str(err.value)
