"""The victim search's shortcut (tas_step.PodCounter) must say exactly what a full TAS
placement says, also after usage changes leaf by leaf as removals and re-adds do."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.fit.tas_step import PodCounter, TasRequest, TasTrees, place_workload
from harness.scenario.model import (
    HOSTNAME,
    ClusterQueue,
    Flavor,
    Node,
    PodSet,
    Scenario,
    Taint,
    Toleration,
    Topology,
    TopologyRequest,
)

LEVELS = ("block", "rack", HOSTNAME)


@st.composite
def worlds(draw: st.DrawFn) -> tuple[TasTrees, TasRequest, list[tuple[str, int]]]:
    hostname = draw(st.booleans())
    levels = LEVELS if hostname else LEVELS[:2]
    nodes = []
    for i in range(draw(st.integers(1, 12))):
        labels = {"pool": "gpu", "block": f"b{i % 2}", "rack": f"r{i % 4}", HOSTNAME: f"n{i}"}
        taints = (Taint("t", "x", "NoSchedule"),) if draw(st.integers(0, 5)) == 0 else ()
        if draw(st.integers(0, 6)) == 0:
            labels["zone"] = "other"
        gpus = draw(st.integers(0, 8))
        alloc = {"nvidia.com/gpu": Fraction(gpus), "pods": Fraction(draw(st.integers(1, 10)))}
        nodes.append(Node(f"n{i}", labels, alloc, taints))
    flavor = Flavor("gpu", {"pool": "gpu"}, topology_name="t")
    scenario = Scenario(
        name="w",
        topologies=(Topology("t", levels),),
        resource_flavors=(flavor,),
        cluster_queues=(ClusterQueue("a", ()),),
        nodes=tuple(nodes),
        workloads=(),
    )
    trees = TasTrees(scenario, nodes, [])
    mode = draw(st.sampled_from(["required", "preferred", "unconstrained", None]))
    level = draw(st.sampled_from(levels)) if mode in ("required", "preferred") else None
    pod_set = PodSet(
        "main",
        draw(st.integers(1, 20)),
        {"nvidia.com/gpu": Fraction(draw(st.integers(0, 3)))},
        TopologyRequest(mode=mode, level=level) if mode else None,
        {"zone": "other"} if draw(st.integers(0, 4)) == 0 else {},
        (Toleration(key="t", operator="Exists"),) if draw(st.booleans()) else (),
    )
    changes = draw(
        st.lists(
            st.tuples(st.sampled_from(sorted(trees.trees["gpu"].leaves)), st.integers(-3, 3)),
            max_size=8,
        )
    )
    return (
        trees,
        TasRequest(pod_set, "gpu"),
        [(str(k) if isinstance(k, str) else "|".join(k), d) for k, d in changes],
    )


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_the_counter_agrees_with_placement(
    world: tuple[TasTrees, TasRequest, list[tuple[str, int]]],
) -> None:
    trees, request, changes = world
    assert PodCounter.exact_for(trees, (request,))
    counter = PodCounter(trees, request)
    keys = {str(k) if isinstance(k, str) else "|".join(k): k for k in trees.trees["gpu"].leaves}
    assert counter.fits() == (not place_workload(trees, [request]).failures)
    for key, delta in changes:
        trees.add("gpu", keys[key], {"nvidia.com/gpu": delta, "pods": delta})
        assert counter.fits() == (not place_workload(trees, [request]).failures)
    counter.close()
    assert trees.counters["gpu"] == []


def test_a_required_level_needs_one_domain_to_hold_every_pod() -> None:
    # Two blocks of 8 free GPUs: 10 pods fit the flavor, but no single block.
    nodes = [
        Node(
            f"n{i}",
            {"pool": "gpu", "block": f"b{i}", "rack": f"r{i}", HOSTNAME: f"n{i}"},
            {"nvidia.com/gpu": Fraction(8), "pods": Fraction(10)},
        )
        for i in range(2)
    ]
    scenario = Scenario(
        name="w",
        topologies=(Topology("t", LEVELS),),
        resource_flavors=(Flavor("gpu", {"pool": "gpu"}, topology_name="t"),),
        cluster_queues=(ClusterQueue("a", ()),),
        nodes=tuple(nodes),
        workloads=(),
    )
    trees = TasTrees(scenario, nodes, [])
    for mode, level, fits in (("required", "block", False), ("preferred", "block", True)):
        pod_set = PodSet("main", 10, {"nvidia.com/gpu": Fraction(1)}, TopologyRequest(mode, level))
        request = TasRequest(pod_set, "gpu")
        counter = PodCounter(trees, request)
        assert counter.fits() is fits
        assert (not place_workload(trees, [request]).failures) is fits
        counter.close()
