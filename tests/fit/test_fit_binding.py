"""The fit model's binding half: which admitted pods kube-scheduler (or the ungater) never runs.

Every expected count is worked out from the rule in the test's docstring, never from a run.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import HarnessError
from harness.fit import fit
from harness.fit.kubescheduler import NodeLoad, Pod, best_node, filter_reasons
from harness.results.comparison import against_expectations, against_prediction
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Node, Taint, Toleration

GPU = "nvidia.com/gpu"
BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"


def node(name: str, rack: str, gpus: int, **extra: Any) -> dict[str, Any]:
    alloc = {GPU: gpus, "cpu": "32", "memory": "256Gi", "pods": 110}
    return {"name": name, "labels": {BLOCK: "b1", RACK: rack}, "allocatable": alloc, **extra}


def scenario(nodes: list[dict[str, Any]], workloads: list[dict[str, Any]], **top: Any) -> Any:
    levels = top.pop("levels", [BLOCK, RACK])
    data = {
        "name": "binding",
        "topology": {"name": "t", "levels": levels},
        "nodes": nodes,
        "workloads": workloads,
        **top,
    }
    return scenario_from_data(data, "test.yaml")


def job(name: str, count: int, gpus: int, **pod_set: Any) -> dict[str, Any]:
    topology = pod_set.pop("topology", {"mode": "required", "level": RACK})
    main = {"name": "main", "count": count, "requests": {GPU: gpus}, "topology": topology}
    return {"name": name, "podSets": [{**main, **pod_set}]}


def outcome(data: Any, name: str = "w") -> Outcome:
    return fit(data).outcomes[name]


def test_rack_lowest_level_admits_a_pod_no_node_can_hold() -> None:
    """Rack is the lowest level: Kueue sums the rack's 2+4+4 GPUs; no node has 8."""
    sc = scenario([node("n1", "r1", 2), node("n2", "r1", 4), node("n3", "r1", 4)], [job("w", 1, 8)])
    got = outcome(sc)
    assert got.admitted and got.placement == {"main": {"r1": 1}}
    assert got.unschedulable == {"main": 1}
    assert (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
        in (got.unschedulable_reasons["main"])
    )


def test_rack_lowest_level_counts_whole_pods_per_node() -> None:
    """Free 5, 5 and 6 GPUs: 16 in the rack, but 4-GPU pods fit 1 + 1 + 1 = 3 times."""
    nodes = [node("n1", "r1", 8), node("n2", "r1", 8), node("n3", "r1", 8)]
    usage = [
        {"node": "n1", "requests": {GPU: 3}},
        {"node": "n2", "requests": {GPU: 3}},
        {"node": "n3", "requests": {GPU: 2}},
    ]
    got = outcome(scenario(nodes, [job("w", 4, 4)], usage=usage))
    assert got.placement == {"main": {"r1": 4}}
    assert got.unschedulable == {"main": 1}


def test_rack_lowest_level_ignores_taints_kube_scheduler_does_not() -> None:
    """One of two 4-GPU nodes is tainted: Kueue counts 8 GPUs, kube-scheduler can use 4."""
    taint = {"key": "example.com/maintenance", "effect": "NoSchedule"}
    nodes = [node("n1", "r1", 4, taints=[taint]), node("n2", "r1", 4)]
    got = outcome(scenario(nodes, [job("w", 2, 4)]))
    assert got.unschedulable == {"main": 1}
    assert "1 node(s) had untolerated taint(s)" in got.unschedulable_reasons["main"]
    tolerated = job(
        "w", 2, 4, tolerations=[{"key": "example.com/maintenance", "operator": "Exists"}]
    )
    assert outcome(scenario(nodes, [tolerated])).unschedulable == {}


def test_own_selector_on_another_rack_stays_gated() -> None:
    """The pod set selects rack r1, which is too small; Kueue (rack lowest) ignores the
    selector and assigns r2; the ungater may not change rack=r1 to r2, so both stay gated."""
    nodes = [node("n1", "r1", 2), node("n2", "r2", 8)]
    got = outcome(scenario(nodes, [job("w", 2, 2, nodeSelector={RACK: "r1"})]))
    assert got.placement == {"main": {"r2": 2}}
    assert got.unschedulable == {"main": 2}
    assert "stays scheduling-gated" in got.unschedulable_reasons["main"]
    assert f"{RACK}=r2" in got.unschedulable_reasons["main"]


def test_leader_selector_is_not_honoured_for_the_group() -> None:
    """Hostname lowest: the group is placed by the workers' pod set alone, so the leader's
    gpu-type selector is ignored and it lands on an a100 host where no node matches."""
    a100 = {"example.com/gpu-type": "a100"}
    nodes = [
        {**node("a1", "r1", 8), "labels": {BLOCK: "b1", RACK: "r1", **a100}},
        {
            **node("h1", "r2", 1),
            "labels": {BLOCK: "b1", RACK: "r2", "example.com/gpu-type": "h100"},
        },
    ]
    group = {"mode": "required", "level": RACK, "podSetGroupName": "lws"}
    workload = {
        "name": "w",
        "podSets": [
            {
                "name": "leader",
                "count": 1,
                "requests": {"cpu": "1"},
                "topology": group,
                "nodeSelector": {"example.com/gpu-type": "h100"},
            },
            {"name": "workers", "count": 4, "requests": {GPU: 1}, "topology": group},
        ],
    }
    got = outcome(scenario(nodes, [workload], levels=[BLOCK, RACK, HOST]))
    assert got.placement == {"leader": {"a1": 1}, "workers": {"a1": 4}}
    assert got.unschedulable == {"leader": 1}
    assert (
        "2 node(s) didn't match Pod's node affinity/selector"
        in (got.unschedulable_reasons["leader"])
    )


def test_pods_beyond_the_assignment_stay_gated() -> None:
    """5 pods in slices of 2 on hosts: Kueue assigns 2 slices (4 pods); the 5th has no domain."""
    nodes = [node("n1", "r1", 8), node("n2", "r1", 8)]
    topology = {"mode": "required", "level": RACK, "sliceLevel": HOST, "sliceSize": 2}
    got = outcome(scenario(nodes, [job("w", 5, 1, topology=topology)], levels=[RACK, HOST]))
    assert sum(got.placement["main"].values()) == 4
    assert got.unschedulable == {"main": 1}
    assert "holds 4 of 5 pods" in got.unschedulable_reasons["main"]


def test_later_workload_sees_where_earlier_pods_were_bound() -> None:
    """kube-scheduler spreads w1's two 2-GPU, 8-cpu pods over both 4-GPU, 32-cpu nodes
    (LeastAllocated: 75 for the empty node, 50 beside the first pod): 4 GPUs stay free in the
    rack but 2 per node, so Kueue admits w2's 4-GPU pod and kube-scheduler cannot bind it."""
    nodes = [node("n1", "r1", 4), node("n2", "r1", 4)]
    w1 = job("w1", 2, 2, requests={GPU: 2, "cpu": "8"})
    result = fit(scenario(nodes, [w1, job("w2", 1, 4)]))
    assert result.outcomes["w1"].unschedulable == {}
    assert result.outcomes["w2"].admitted
    assert result.outcomes["w2"].unschedulable == {"main": 1}


def test_unbound_pod_binds_after_a_step_frees_its_node() -> None:
    """The 4-GPU pod has no node while usage holds 2 GPUs of each; deleting one usage frees n1."""
    nodes = [node("n1", "r1", 4), node("n2", "r1", 4)]
    usage = [
        {"name": "u1", "node": "n1", "requests": {GPU: 2}},
        {"name": "u2", "node": "n2", "requests": {GPU: 2}},
    ]
    sc = scenario(nodes, [job("w", 1, 4)], usage=usage, steps=[{"delete-usage": "u1"}])
    result = fit(sc)
    assert result.outcomes["w"].unschedulable == {"main": 1}
    assert result.steps[0]["w"].unschedulable == {}


def test_hostname_lowest_level_binds_everything_kueue_admits() -> None:
    """With hostname leaves Kueue already checks per node: nothing is left unbound."""
    nodes = [node("n1", "r1", 4), node("n2", "r1", 4)]
    got = outcome(scenario(nodes, [job("w", 2, 4)], levels=[RACK, HOST]))
    assert got.admitted and got.unschedulable == {}


# ---- kube-scheduler's filters and scores --------------------------------------------------


def plain(name: str, **extra: Any) -> Node:
    return Node(name, {HOST: name}, {}, **extra)


ROOM = {"cpu": 4000, "memory": 8 << 30, "pods": 10}


def test_filters_in_kube_schedulers_order() -> None:
    pod = Pod({"cpu": 1000}, {}, ())
    assert filter_reasons(plain("a", unschedulable=True), ROOM, NodeLoad(), pod) == [
        "node(s) were unschedulable"
    ]
    assert filter_reasons(plain("a", ready=False), ROOM, NodeLoad(), pod) == [
        "node(s) had untolerated taint(s)"
    ]
    full = NodeLoad({"cpu": 3500}, {}, 10)
    assert filter_reasons(plain("a"), ROOM, full, pod) == ["Too many pods", "Insufficient cpu"]
    anything = Pod({"cpu": 1000}, {}, (Toleration(operator="Exists"),))
    assert (
        filter_reasons(plain("a", unschedulable=True, ready=False), ROOM, NodeLoad(), anything)
        == []
    )


def test_prefer_no_schedule_taint_loses_the_tie() -> None:
    soft = Taint("example.com/soft", "", "PreferNoSchedule")
    pod = Pod({"cpu": 1000}, {}, ())
    first, second = plain("a", taints=(soft,)), plain("b")
    assert best_node([(first, ROOM, NodeLoad()), (second, ROOM, NodeLoad())], pod) is second


def test_least_allocated_prefers_the_emptier_node() -> None:
    pod = Pod({"cpu": 1000}, {}, ())
    busy = NodeLoad()
    busy.add(Pod({"cpu": 2000}, {}, ()))
    first, second = plain("a"), plain("b")
    assert best_node([(first, ROOM, busy), (second, ROOM, NodeLoad())], pod) is second


# ---- outcome, expectations and comparisons ------------------------------------------------


def test_outcome_json_carries_unschedulable_pods() -> None:
    got = Outcome(
        True, {"main": {"r1": 2}}, unschedulable={"main": 1}, unschedulable_reasons={"main": "why"}
    )
    data = got.to_json()
    assert data["unschedulable"] == {"main": 1}
    assert Outcome.from_json(data) == got
    assert "unschedulable" not in Outcome(True, {"main": {"r1": 2}}).to_json()


def test_unexpected_unplaceable_pods_fail_with_what_happened() -> None:
    sc = scenario(
        [node("n1", "r1", 2), node("n2", "r1", 4), node("n3", "r1", 4)],
        [job("w", 1, 8)],
        expect={"w": {"admitted": True, "placement": {"main": {"r1": 1}}}},
    )
    lines = against_expectations(sc.expect or {}, fit(sc).outcomes)
    assert len(lines) == 1
    assert lines[0].startswith("w: admitted by Kueue, but 1 pod(s) can never run (main: 1")
    assert "Insufficient nvidia.com/gpu" in lines[0]
    assert "add `unschedulable: {main: 1}`" in lines[0]


def test_expected_unplaceable_pods_pass_and_counts_are_compared() -> None:
    got = {"w": Outcome(True, {"main": {"r1": 1}}, unschedulable={"main": 1})}
    want = scenario(
        [node("n1", "r1", 8)],
        [job("w", 1, 8)],
        expect={"w": {"admitted": True, "unschedulable": {"main": 1}}},
    ).expect
    assert want is not None and against_expectations(want, got) == []
    wrong = {"w": Outcome(True, {"main": {"r1": 1}}, unschedulable={"main": 2})}
    assert against_expectations(want, wrong) == ["w/main: expected 1 unschedulable pod(s), got 2"]


def test_backends_that_see_no_pods_are_not_judged_on_binding() -> None:
    unseen = {"w": Outcome(True, {"main": {"r1": 1}}, binding_observed=False)}
    predicted = {"w": Outcome(True, {"main": {"r1": 1}}, unschedulable={"main": 1})}
    assert against_prediction(predicted, unseen) == []
    assert against_prediction(predicted, {"w": Outcome(True, {"main": {"r1": 1}})}) == [
        "w/main: predicted 1 unschedulable pod(s), observed 0"
    ]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"admitted": False, "unschedulable": {"main": 1}}, "only an admitted workload"),
        ({"admitted": True, "unschedulable": {"main": 3}}, "pod set main has only 2 pods"),
        ({"admitted": True, "unschedulable": {"other": 1}}, "other"),
        ({"admitted": True, "unschedulable": {"main": -1}}, "at least 0"),
    ],
)
def test_loader_checks_unschedulable(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(HarnessError) as err:
        scenario([node("n1", "r1", 8)], [job("w", 2, 1)], expect={"w": entry})
    assert "expect.w.unschedulable" in str(err.value)
    assert problem in str(err.value)
