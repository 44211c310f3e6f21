"""Properties every prediction must have, over random topologies and workloads (hypothesis).

The checks recompute what fits from the scenario alone (per-node integer division), so
they hold the fit model to invariants rather than to its own numbers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.fit import fit
from harness.k8s.quantity import kueue_units
from harness.scenario import shorthand
from harness.scenario.model import (
    HOSTNAME,
    Flavor,
    Node,
    PodSet,
    Queue,
    Scenario,
    Topology,
    TopologyRequest,
    Usage,
    Workload,
)

LEVELS = ("ex.com/block", "ex.com/rack", "ex.com/sub", HOSTNAME)
GPU = "nvidia.com/gpu"


@st.composite
def scenarios(draw: st.DrawFn, workloads: int = 3, sliced: bool = False) -> Scenario:
    """Random scenarios; `sliced` gives every constrained pod set slices of 2 to 4 pods."""
    depth = draw(st.integers(1, 4))
    levels = LEVELS[len(LEVELS) - depth :]
    nodes, usage = [], []
    for index in range(draw(st.integers(1, 12))):
        labels = {lv: f"{lv[-3:]}{draw(st.integers(0, 2))}" for lv in levels[:-1]}
        name = f"n{index}"
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        nodes.append(
            Node(
                name=name,
                labels={**labels, HOSTNAME: name},
                allocatable={GPU: Fraction(gpus), "cpu": Fraction(32), "pods": Fraction(110)},
                ready=draw(st.booleans()) or draw(st.booleans()),
            )
        )
        busy = draw(st.integers(0, gpus))
        if busy:
            usage.append(Usage(node=name, requests={GPU: Fraction(busy)}))
    wls = []
    for index in range(draw(st.integers(1, workloads))):
        count = draw(st.integers(1, 12))
        mode = draw(st.sampled_from(["required", "preferred", "unconstrained"]))
        level = None if mode == "unconstrained" else draw(st.sampled_from(levels))
        slice_size, slice_level = None, None
        if mode != "unconstrained" and (sliced or draw(st.booleans())):
            assert level is not None
            deeper = levels[levels.index(level) :]
            slice_level = draw(st.sampled_from(deeper))
            if sliced:
                slice_size = draw(st.integers(2, 4))
                count = slice_size * draw(st.integers(1, 3))
            else:
                divisors = [d for d in range(1, count + 1) if count % d == 0]
                slice_size = draw(st.sampled_from(divisors))
        topology = TopologyRequest(
            mode=mode, level=level, slice_level=slice_level, slice_size=slice_size
        )
        pod_set = PodSet(
            name="main",
            count=count,
            requests={GPU: Fraction(draw(st.integers(1, 2)))},
            topology=topology,
        )
        wls.append(Workload(name=f"w{index}", pod_sets=(pod_set,)))
    return shorthand.scenario(
        name="prop",
        topology=Topology(name="t", levels=levels),
        flavor=Flavor(name="f"),
        queue=Queue(),
        nodes=tuple(nodes),
        usage=tuple(usage),
        workloads=tuple(wls),
    )


def free_per_node(scenario: Scenario) -> dict[str, dict[str, int]]:
    free: dict[str, dict[str, int]] = {}
    for node in scenario.nodes:
        if node.ready and not node.unschedulable:
            free[node.name] = {r: kueue_units(r, q) for r, q in node.allocatable.items()}
    for entry in scenario.usage:
        if entry.node in free:
            for r, q in entry.requests.items():
                free[entry.node][r] -= kueue_units(r, q) * entry.count
            free[entry.node]["pods"] -= entry.count
    return free


def fits(free: dict[str, int], pod_set: PodSet) -> int:
    request = {r: kueue_units(r, q) for r, q in pod_set.requests.items()}
    request["pods"] = request.get("pods", 0) + 1
    return min(max(0, free.get(r, 0)) // v for r, v in request.items() if v)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


Property = Callable[[Scenario, Counter[str]], None]


def checked(prop: Property, strategy: st.SearchStrategy[Scenario]) -> Counter[str]:
    """Run a property over generated scenarios; returns how often each of its checks ran.

    Properties of admitted workloads pass vacuously when nothing is admitted, so each test
    asserts its checks ran often enough (hypothesis `event`s show the same counts with
    --hypothesis-show-statistics)."""
    seen: Counter[str] = Counter()

    @SETTINGS
    @given(strategy)
    def run(scenario: Scenario) -> None:
        before = set(seen)
        prop(scenario, seen)
        for name in set(seen) - before:
            event(name)

    run()
    return seen


def assert_tested(seen: Counter[str], least: dict[str, int]) -> None:
    """Each check ran in at least that many of the 150 scenarios (measured: 3x or more)."""
    short = {name: seen[name] for name, n in least.items() if seen[name] < n}
    assert not short, f"the property tested too little: {short} (want {least})"


def placements_whole_and_within_free_capacity(scenario: Scenario, seen: Counter[str]) -> None:
    outcomes = fit(scenario).outcomes
    free = free_per_node(scenario)
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for workload in scenario.workloads:
        outcome = outcomes[workload.name]
        if not outcome.admitted:
            continue
        for pod_set in workload.pod_sets:
            placed = outcome.placement[pod_set.name]
            assert sum(placed.values()) == pod_set.count
            for node, pods in placed.items():
                assert node in free, f"{node} is not eligible but got pods"
                for r, q in pod_set.requests.items():
                    used[node][r] += kueue_units(r, q) * pods
                used[node]["pods"] += pods
            seen["admitted"] += 1
            if len(placed) > 1:
                seen["spread over nodes"] += 1
    for node, per_resource in used.items():
        for r, amount in per_resource.items():
            assert amount <= free[node].get(r, 0), f"{node} over-committed on {r}"


def test_placements_are_whole_and_within_free_capacity() -> None:
    seen = checked(placements_whole_and_within_free_capacity, scenarios())
    assert_tested(seen, {"admitted": 30, "spread over nodes": 8})


def required_level_and_slices_respected(scenario: Scenario, seen: Counter[str]) -> None:
    outcomes = fit(scenario).outcomes
    nodes = {n.name: n for n in scenario.nodes}
    levels = scenario.topologies[0].levels
    for workload in scenario.workloads:
        outcome = outcomes[workload.name]
        if not outcome.admitted:
            continue
        pod_set = workload.pod_sets[0]
        tr = pod_set.topology
        assert tr is not None
        placed = outcome.placement[pod_set.name]
        if tr.mode == "required":
            depth = levels.index(tr.level) + 1
            domains = {_path(nodes[n], levels, depth) for n in placed}
            assert len(domains) == 1, f"required {tr.level} spans {domains}"
            seen["required admitted"] += 1
        if tr.slice_level is not None and tr.slice_size:
            depth = levels.index(tr.slice_level) + 1
            per_domain: dict[tuple[str, ...], int] = defaultdict(int)
            for node, pods in placed.items():
                per_domain[_path(nodes[node], levels, depth)] += pods
            assert all(v % tr.slice_size == 0 for v in per_domain.values()), per_domain
            if tr.slice_size > 1:
                seen["sliced admitted"] += 1


def test_required_level_and_slices_are_respected() -> None:
    seen = checked(required_level_and_slices_respected, scenarios(sliced=True))
    assert_tested(seen, {"required admitted": 5, "sliced admitted": 14})


def test_a_property_that_sees_nothing_admitted_fails() -> None:
    """Negative control: with every node NotReady nothing is admitted, and the coverage
    check must say so instead of passing."""
    seen = checked(placements_whole_and_within_free_capacity, scenarios().map(_all_not_ready))
    with pytest.raises(AssertionError, match="tested too little"):
        assert_tested(seen, {"admitted": 30, "spread over nodes": 8})


def _all_not_ready(scenario: Scenario) -> Scenario:
    return replace(scenario, nodes=tuple(replace(n, ready=False) for n in scenario.nodes))


def _path(node: Node, levels: tuple[str, ...], depth: int) -> tuple[str, ...]:
    return tuple(node.labels[lv] for lv in levels[:depth])


@SETTINGS
@given(scenarios(workloads=1))
def test_first_workload_admitted_iff_some_domain_fits(scenario: Scenario) -> None:
    """Required: some domain at the level holds all slices; otherwise: the whole topology does."""
    workload = scenario.workloads[0]
    pod_set = workload.pod_sets[0]
    tr = pod_set.topology
    assert tr is not None
    levels = scenario.topologies[0].levels
    free = free_per_node(scenario)
    nodes = {n.name: n for n in scenario.nodes}
    size = tr.slice_size or 1
    slice_depth = levels.index(tr.slice_level) + 1 if tr.slice_level else len(levels)
    per_slice_domain: dict[tuple[str, ...], int] = defaultdict(int)
    for name, node_free in free.items():
        per_slice_domain[_path(nodes[name], levels, slice_depth)] += fits(node_free, pod_set)
    slices = {d: pods // size for d, pods in per_slice_domain.items()}
    needed = pod_set.count // size
    if tr.mode == "required":
        depth = levels.index(tr.level) + 1
        per_domain: dict[tuple[str, ...], int] = defaultdict(int)
        for domain, count in slices.items():
            per_domain[domain[:depth]] += count
        expected = any(v >= needed for v in per_domain.values())
    else:
        expected = sum(slices.values()) >= needed
    assert fit(scenario).outcomes[workload.name].admitted == expected
