"""Where a scenario's nodes live on kind: on the real workers, or as KWOK nodes (pure logic).

Real workers can take a scenario's labels, taints, cordon and extended resources (GPUs), but
not its CPU, memory or pod counts (the kubelet reports the machine's), not NotReady, and
they cannot be added or removed by a step. A scenario that needs any of that, or has more
nodes than the cluster has workers, runs on KWOK nodes instead. Real nodes the scenario does
not use are cordoned: Kueue's TAS node cache drops unschedulable nodes entirely
(pkg/cache/scheduler/tas_nodes_cache.go sync), so they appear in no topology, count, or
message, whatever the scenario's levels. Each decision carries its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.providers.kind.config import gpu_status_patch, label_patch
from harness.scenario import HOSTNAME, Node, Scenario

Obj = dict[str, Any]
TOPOLOGY_CHANGING_STEPS = ("add-node", "delete-node")


@dataclass(frozen=True)
class NodePlan:
    """workers: scenario node -> kind worker; kwok: scenario nodes to create as KWOK nodes."""

    workers: Mapping[str, str]
    kwok: tuple[str, ...]
    idle: tuple[str, ...]
    reason: str

    @property
    def mode(self) -> str:
        return "workers" if self.workers else "kwok"

    def real_name(self, scenario_node: str) -> str:
        """Node name on the cluster for a scenario node name."""
        return self.workers.get(scenario_node, scenario_node)

    def scenario_name(self, real_node: str) -> str:
        """Scenario node name for a node name Kueue reports (inverse of real_name)."""
        for scenario_node, worker in self.workers.items():
            if worker == real_node:
                return scenario_node
        return real_node


@dataclass(frozen=True)
class NodeAction:
    """Patches for one real worker: a merge patch of metadata/spec and a status JSON patch."""

    node: str
    patch: Obj = field(default_factory=dict)
    status: list[Obj] = field(default_factory=list)


def _extended(resource: str) -> bool:
    domain = resource.partition("/")[0] if "/" in resource else ""
    return bool(domain) and not domain.endswith("kubernetes.io")


def _worker_misfit(node: Node) -> str | None:
    basic = sorted(r for r in node.allocatable if not _extended(r))
    if basic:
        return f"node {node.name} sets {', '.join(basic)}, which a kubelet reports itself"
    if not node.ready:
        return f"node {node.name} is NotReady, which a live kubelet would undo"
    return None


def plan_nodes(scenario: Scenario, workers: Sequence[str], use_workers: bool = True) -> NodePlan:
    """Decide workers vs KWOK for one scenario.

    `use_workers=False` always picks KWOK nodes (for a runner that creates every scenario
    node itself and does not map names); the workers are then only kept out of the way.
    """
    why_not: str | None = None
    if not use_workers:
        why_not = "the runner asked for KWOK nodes"
    elif len(scenario.nodes) > len(workers):
        why_not = f"{len(scenario.nodes)} nodes > {len(workers)} kind workers"
    elif any(step.action in TOPOLOGY_CHANGING_STEPS for step in scenario.steps):
        why_not = "its steps add or delete nodes"
    elif any(not all(_extended(r) for r in u.requests) for u in scenario.usage):
        why_not = "its usage pods request CPU or memory the real nodes account differently"
    else:
        why_not = next((m for m in map(_worker_misfit, scenario.nodes) if m), None)
    if why_not is None:
        mapping = {n.name: w for n, w in zip(scenario.nodes, workers, strict=False)}
        idle = tuple(workers[len(scenario.nodes) :])
        return NodePlan(mapping, (), idle, "scenario nodes fit the kind workers")
    return NodePlan({}, tuple(n.name for n in scenario.nodes), tuple(workers), f"KWOK: {why_not}")


def owned_label_keys(scenario: Scenario, shape_keys: set[str]) -> set[str]:
    """Label keys the harness may set or remove on workers; never kubelet-owned ones."""
    keys = set(shape_keys) | set(scenario.flavor.node_labels)
    keys |= {k for n in scenario.nodes for k in n.labels}
    keys |= set(scenario.topology.levels)
    return {k for k in keys if k != HOSTNAME}


def worker_actions(
    plan: NodePlan,
    scenario: Scenario,
    current: Mapping[str, Mapping[str, str]],
    owned: set[str],
    gpu_resources: set[str],
    control_plane: str | None = None,
) -> list[NodeAction]:
    """Patches that make each real worker what the plan says; `current` is labels per worker.

    Mapped workers get the scenario node's labels, taints, cordon and extended resources
    (resources the scenario leaves out are set to 0); idle workers lose every owned label and
    all GPUs and are cordoned, as is the control plane, which takes them out of TAS.
    """
    actions = []
    nodes = {n.name: n for n in scenario.nodes}
    extended = set(gpu_resources) | {r for n in scenario.nodes for r in n.allocatable}
    for scenario_node, worker in plan.workers.items():
        node = nodes[scenario_node]
        labels = {k: v for k, v in node.labels.items() if k != HOSTNAME}
        patch = label_patch(labels, current.get(worker, {}), owned)
        patch["spec"] = {
            "taints": [
                {"key": t.key, "value": t.value, "effect": t.effect}
                if t.value
                else {"key": t.key, "effect": t.effect}
                for t in node.taints
            ],
            "unschedulable": node.unschedulable,
        }
        status = [
            op
            for r in sorted(extended)
            for op in gpu_status_patch(r, int(node.allocatable.get(r, 0)))
        ]
        actions.append(NodeAction(worker, patch, status))
    for worker in plan.idle:
        status = [op for r in sorted(extended) for op in gpu_status_patch(r, 0)]
        patch = label_patch({}, current.get(worker, {}), owned)
        patch["spec"] = {"taints": [], "unschedulable": True}
        actions.append(NodeAction(worker, patch, status))
    if control_plane is not None:
        actions.append(NodeAction(control_plane, {"spec": {"unschedulable": True}}))
    return actions
