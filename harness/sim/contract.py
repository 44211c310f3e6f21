"""A typed Scenario as the contract-shaped dict kueue-sim reads (docs/scenario-format.md)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from harness.kueue_gates import merged
from harness.quantity import format_quantity
from harness.scenario import Node, PodSet, Scenario, Step, Toleration, Usage, Workload


def _resources(res: Mapping[str, Fraction]) -> dict[str, str]:
    return {name: format_quantity(q) for name, q in res.items()}


def _toleration(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": t.key,
        "operator": t.operator,
        "value": t.value,
        "effect": t.effect,
    }
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def _pod_set(ps: PodSet) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": ps.name,
        "count": ps.count,
        "requests": _resources(ps.requests),
        "nodeSelector": dict(ps.node_selector),
        "tolerations": [_toleration(t) for t in ps.tolerations],
    }
    t = ps.topology
    if t is not None:
        topo = {
            "mode": t.mode,
            "level": t.level,
            "sliceLevel": t.slice_level,
            "sliceSize": t.slice_size,
            "podSetGroupName": t.group,
        }
        out["topology"] = {k: v for k, v in topo.items() if v is not None}
    return out


def _usage(u: Usage) -> dict[str, Any]:
    out = {"node": u.node, "requests": _resources(u.requests), "count": u.count}
    if u.name:
        out["name"] = u.name
    return out


def _node(n: Node) -> dict[str, Any]:
    return {
        "name": n.name,
        "labels": dict(n.labels),
        "allocatable": _resources(n.allocatable),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints],
        "ready": n.ready,
        "unschedulable": n.unschedulable,
    }


def _workload(w: Workload) -> dict[str, Any]:
    return {"name": w.name, "podSets": [_pod_set(p) for p in w.pod_sets]}


def _step(step: Step) -> dict[str, Any]:
    target = step.target
    if isinstance(target, Node):
        return {step.action: _node(target)}
    if isinstance(target, Usage):
        return {step.action: _usage(target)}
    if isinstance(target, Workload):
        return {step.action: _workload(target)}
    return {step.action: str(target)}


def scenario_to_dict(sc: Scenario, extra_gates: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """The contract form kueue-sim reads; `extra_gates` apply under the scenario's own."""
    return {
        "name": sc.name,
        "featureGates": merged(extra_gates or {}, sc.feature_gates),
        "topology": {"name": sc.topology.name, "levels": list(sc.topology.levels)},
        "flavor": {
            "name": sc.flavor.name,
            "nodeLabels": dict(sc.flavor.node_labels),
            "tolerations": [_toleration(t) for t in sc.flavor.tolerations],
        },
        "queue": {"nominalQuota": _resources(sc.queue.nominal_quota)},
        "nodes": [_node(n) for n in sc.nodes],
        "usage": [_usage(u) for u in sc.usage],
        "workloads": [_workload(w) for w in sc.workloads],
        "steps": [_step(st) for st in sc.steps],
    }
