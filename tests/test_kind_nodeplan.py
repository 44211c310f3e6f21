"""Per-scenario reshaping on kind: which nodes go on real workers, which become KWOK nodes,
and the patches that re-apply labels and GPU capacity (pure; no Docker needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.loader import load_scenario
from harness.providers.kind import nodeplan
from harness.providers.kind.config import WORKER_LABEL
from harness.providers.kind.shape import POOL_LABEL
from harness.scenario import Scenario

REPO = Path(__file__).resolve().parents[1]
WORKERS = ["kth-worker", "kth-worker2", "kth-worker3", "kth-worker4"]
BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"


def _scenario(tmp_path: Path, **overrides: Any) -> Scenario:
    doc: dict[str, Any] = {
        "name": "s",
        "topology": {"name": "t", "levels": [BLOCK, RACK, "kubernetes.io/hostname"]},
        "nodes": [
            {"name": "gpu-1", "labels": {BLOCK: "b1", RACK: "r1"},
             "allocatable": {"nvidia.com/gpu": 4}},
            {"name": "gpu-2", "labels": {BLOCK: "b1", RACK: "r2"},
             "allocatable": {"nvidia.com/gpu": 8},
             "taints": [{"key": "example.com/maint", "effect": "NoSchedule"}],
             "unschedulable": True},
        ],
        "workloads": [{"name": "w", "podSets": [{"name": "main", "count": 1,
                                                 "requests": {"nvidia.com/gpu": 1}}]}],
    }  # fmt: skip
    doc.update(overrides)
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_scenario(path)


def test_gpu_only_nodes_go_on_workers_in_order(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    plan = nodeplan.plan_nodes(scenario, WORKERS)
    assert plan.mode == "workers"
    assert dict(plan.workers) == {"gpu-1": "kth-worker", "gpu-2": "kth-worker2"}
    assert plan.idle == ("kth-worker3", "kth-worker4")
    assert plan.real_name("gpu-2") == "kth-worker2"
    assert plan.scenario_name("kth-worker2") == "gpu-2"
    assert plan.scenario_name("kwok-node") == "kwok-node"


def test_worker_actions_reapply_labels_taints_and_gpus(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    plan = nodeplan.plan_nodes(scenario, WORKERS)
    shape_keys = {BLOCK, RACK, "cloud.provider.com/node-group"}
    owned = nodeplan.owned_label_keys(scenario, shape_keys)
    assert "kubernetes.io/hostname" not in owned
    current = {
        w: {BLOCK: "b9", RACK: "r9", "cloud.provider.com/node-group": "tas-group",
            POOL_LABEL: "a100", WORKER_LABEL: str(i), "kubernetes.io/hostname": w}
        for i, w in enumerate(WORKERS)
    }  # fmt: skip
    actions = {a.node: a for a in nodeplan.worker_actions(plan, scenario, current, owned,
                                                         {"nvidia.com/gpu"})}  # fmt: skip
    assert set(actions) == set(WORKERS)
    for node in scenario.nodes:
        action = actions[plan.real_name(node.name)]
        labels = action.patch["metadata"]["labels"]
        for key, value in node.labels.items():
            if key != "kubernetes.io/hostname":  # the kubelet owns it; the plan maps names
                assert labels[key] == value
        assert "kubernetes.io/hostname" not in labels
        assert labels["cloud.provider.com/node-group"] is None  # owned, not in the scenario
        assert POOL_LABEL not in labels and WORKER_LABEL not in labels
        gpus = {op["path"]: op["value"] for op in action.status}
        want = str(int(node.allocatable["nvidia.com/gpu"]))
        assert gpus == {"/status/capacity/nvidia.com~1gpu": want,
                        "/status/allocatable/nvidia.com~1gpu": want}  # fmt: skip
        assert action.patch["spec"]["unschedulable"] is node.unschedulable
        assert [t["key"] for t in action.patch["spec"]["taints"]] == [t.key for t in node.taints]
    for idle in plan.idle:
        action = actions[idle]
        labels = action.patch["metadata"]["labels"]
        assert labels[BLOCK] is None and labels[RACK] is None  # out of the topology
        assert {op["value"] for op in action.status} == {"0"}
        assert action.patch["spec"]["unschedulable"] is True  # and out of Kueue's node cache


def test_cpu_on_a_node_needs_kwok(tmp_path: Path) -> None:
    nodes = [{"name": "n1", "labels": {BLOCK: "b1", RACK: "r1"},
              "allocatable": {"nvidia.com/gpu": 4, "cpu": "32"}}]  # fmt: skip
    plan = nodeplan.plan_nodes(_scenario(tmp_path, nodes=nodes), WORKERS)
    assert plan.mode == "kwok"
    assert plan.kwok == ("n1",)
    assert plan.idle == tuple(WORKERS)
    assert "cpu" in plan.reason


def test_more_nodes_than_workers_needs_kwok(tmp_path: Path) -> None:
    nodes = [{"name": f"n{i}", "labels": {BLOCK: "b1", RACK: "r1"},
              "allocatable": {"nvidia.com/gpu": 1}} for i in range(len(WORKERS) + 1)]  # fmt: skip
    plan = nodeplan.plan_nodes(_scenario(tmp_path, nodes=nodes), WORKERS)
    assert plan.mode == "kwok"
    assert f"{len(nodes)} nodes > {len(WORKERS)} kind workers" in plan.reason


def test_hostname_only_topology_on_kwok_cordons_every_real_node(tmp_path: Path) -> None:
    """Kueue's TAS node cache drops unschedulable nodes, so cordoned workers and control
    plane stay out even of a topology whose only level is the hostname."""
    nodes = [{"name": "n1", "labels": {}, "allocatable": {"nvidia.com/gpu": 1, "cpu": "4"}}]
    topology = {"name": "t", "levels": ["kubernetes.io/hostname"]}
    scenario = _scenario(tmp_path, nodes=nodes, topology=topology)
    plan = nodeplan.plan_nodes(scenario, WORKERS)
    assert plan.mode == "kwok" and plan.idle == tuple(WORKERS)
    owned = nodeplan.owned_label_keys(scenario, set())
    actions = nodeplan.worker_actions(plan, scenario, {}, owned, {"nvidia.com/gpu"},
                                      control_plane="kth-control-plane")  # fmt: skip
    assert [a.node for a in actions] == [*WORKERS, "kth-control-plane"]
    assert all(a.patch["spec"]["unschedulable"] is True for a in actions)
    assert actions[-1].status == [] and "metadata" not in actions[-1].patch


def test_every_suite_scenario_gets_a_plan_with_its_reason() -> None:
    """Over the real suites: the decision follows from each file's data."""
    files = sorted((REPO / "suites").rglob("*.yaml"))
    assert files
    for path in files:
        scenario = load_scenario(path)
        plan = nodeplan.plan_nodes(scenario, WORKERS)
        basic = any(r in n.allocatable for n in scenario.nodes for r in ("cpu", "memory", "pods"))
        too_many = len(scenario.nodes) > len(WORKERS)
        if too_many or basic or not all(n.ready for n in scenario.nodes):
            assert plan.mode == "kwok", path.name
            assert set(plan.kwok) == {n.name for n in scenario.nodes}
        if plan.mode == "workers":
            assert len(plan.workers) + len(plan.idle) == len(WORKERS)
            assert plan.reason == "scenario nodes fit the kind workers"
        else:
            assert plan.reason.startswith("KWOK: ") and plan.idle == tuple(WORKERS)


def test_runner_can_ask_for_kwok_nodes_only(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    plan = nodeplan.plan_nodes(scenario, WORKERS, use_workers=False)
    assert plan.mode == "kwok"
    assert plan.kwok == ("gpu-1", "gpu-2") and plan.idle == tuple(WORKERS)
    actions = nodeplan.worker_actions(
        plan, scenario, {}, nodeplan.owned_label_keys(scenario, set()), {"nvidia.com/gpu"}
    )
    assert [a.node for a in actions] == WORKERS
    assert all({op["value"] for op in a.status} == {"0"} for a in actions)
