"""A typed Scenario as the contract-shaped dict kueue-sim reads: always the version-2 lists
(docs/scenario-format-v2.md; the loader desugars a version-1 file), with
ResourceFlavors and ClusterQueues in Kueue's own spec shape, and each `admitted` entry's
status built by harness/kueue/admission_status.py, the builder the cluster runner uses too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from harness.fit.bindable import bindable_nodes
from harness.k8s.quantity import format_quantity
from harness.kueue.admission_status import admitted_status, reservation_times
from harness.kueue.cluster_queue_spec import cluster_queue_spec
from harness.kueue.cohort_spec import cohort_spec
from harness.kueue.gates import merged
from harness.scenario.model import (
    AdmissionCheck,
    AdmittedWorkload,
    CheckChange,
    ClusterQueue,
    ClusterQueueStopChange,
    Flavor,
    LocalQueue,
    Node,
    PodFault,
    PodSet,
    Scenario,
    Step,
    StopPolicyChange,
    Taint,
    TaintChange,
    Toleration,
    Usage,
    Workload,
)


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


def _taint(t: Taint) -> dict[str, Any]:
    return {"key": t.key, "value": t.value, "effect": t.effect}


def _node(n: Node) -> dict[str, Any]:
    return {
        "name": n.name,
        "labels": dict(n.labels),
        "allocatable": _resources(n.allocatable),
        "taints": [_taint(t) for t in n.taints],
        "ready": n.ready,
        "unschedulable": n.unschedulable,
    }


def _workload(w: Workload) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": w.name,
        "queue": w.queue,
        "podSets": [_pod_set(p) for p in w.pod_sets],
    }
    if w.priority_class is not None:
        out["priorityClass"] = w.priority_class
    if w.local_queue:
        out["localQueue"] = w.local_queue
    if w.namespace:
        out["namespace"] = w.namespace
    if not w.pods_ready:
        out["podsReady"] = False
    return out


def _local_queue(lq: LocalQueue) -> dict[str, Any]:
    out: dict[str, Any] = {"name": lq.name, "clusterQueue": lq.cluster_queue}
    if lq.namespace:
        out["namespace"] = lq.namespace
    if lq.fair_weight is not None:
        out["fairSharing"] = {"weight": format_quantity(lq.fair_weight)}
    if lq.stop_policy != "None":
        out["stopPolicy"] = lq.stop_policy
    return out


def _flavor(f: Flavor) -> dict[str, Any]:
    """A ResourceFlavor: its name and Kueue's ResourceFlavorSpec."""
    out: dict[str, Any] = {
        "name": f.name,
        "nodeLabels": dict(f.node_labels),
        "nodeTaints": [_taint(t) for t in f.node_taints],
        "tolerations": [_toleration(t) for t in f.tolerations],
    }
    if f.topology_name is not None:
        out["topologyName"] = f.topology_name
    return out


def _cluster_queue(cq: ClusterQueue) -> dict[str, Any]:
    """A ClusterQueue: its name and Kueue's ClusterQueueSpec, every default spelled out."""
    return {"name": cq.name, **cluster_queue_spec(cq)}


def _admitted(sc: Scenario, a: AdmittedWorkload, reserved_at: datetime) -> dict[str, Any]:
    """An admitted workload: the workload, and the status Kueue would have written."""
    workload = a.as_workload()
    return {
        **_workload(workload),
        "status": admitted_status(sc, a, reserved_at),
    }


def step_to_dict(step: Step) -> dict[str, Any]:
    """One step in the contract form (a scenario's `steps`, or a session's request)."""
    target = step.target
    if isinstance(target, Node):
        return {step.action: _node(target)}
    if isinstance(target, Usage):
        return {step.action: _usage(target)}
    if isinstance(target, Workload):
        return {step.action: _workload(target)}
    if isinstance(target, TaintChange):
        return {step.action: {"node": target.node, **_taint(target.taint)}}
    if isinstance(target, PodFault):
        pods = {"workload": target.workload, "usage": target.usage, "node": target.node}
        out: dict[str, Any] = {k: v for k, v in pods.items() if v is not None}
        if target.count is not None:
            out["count"] = target.count
        return {step.action: out}
    if isinstance(target, CheckChange):
        change = {"workload": target.workload, "check": target.check, "state": target.state}
        return {step.action: change}
    if isinstance(target, ClusterQueueStopChange):
        cq_stop = {"clusterQueue": target.cluster_queue, "stopPolicy": target.stop_policy}
        return {step.action: cq_stop}
    if isinstance(target, StopPolicyChange):
        stop = {"localQueue": target.local_queue, "stopPolicy": target.stop_policy}
        return {step.action: stop | ({"namespace": target.namespace} if target.namespace else {})}
    return {step.action: str(target)}


def _admission_check(c: AdmissionCheck) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "controllerName": c.controller_name}
    if c.parameters is not None:
        out["parameters"] = dict(c.parameters)
    return out | {"active": c.active}


def scenario_to_dict(
    sc: Scenario, extra_gates: Mapping[str, bool] | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """The contract form kueue-sim reads; `extra_gates` apply under the scenario's own;
    admitted workloads reserved quota in the seconds just before `now` (default: the clock)."""
    reserved = reservation_times(sc, now or datetime.now(UTC))
    return {
        "name": sc.name,
        "featureGates": merged(extra_gates or {}, sc.feature_gates),
        "kueueConfig": dict(sc.kueue_config.document),
        "topologies": [{"name": t.name, "levels": list(t.levels)} for t in sc.topologies],
        "resourceFlavors": [_flavor(f) for f in sc.resource_flavors],
        "cohorts": [{"name": c.name, **cohort_spec(c)} for c in sc.cohorts],
        "clusterQueues": [_cluster_queue(cq) for cq in sc.cluster_queues],
        "workloadPriorityClasses": [
            {"name": pc.name, "value": pc.value} for pc in sc.priority_classes
        ],
        "nodes": [_node(n) for n in sc.nodes],
        "usage": [_usage(u) for u in sc.usage],
        "admitted": [_admitted(sc, a, reserved[a.name]) for a in sc.admitted],
        "admissionChecks": [_admission_check(c) for c in sc.admission_checks],
        "namespaces": [{"name": n.name, "labels": dict(n.labels)} for n in sc.namespaces],
        "localQueues": [_local_queue(lq) for lq in sc.queues()],
        "workloads": [_workload(w) for w in sc.workloads],
        "steps": [step_to_dict(st) for st in sc.steps],
        "bindableNodes": {w.name: bindable_nodes(sc, w) for w in _submitted(sc)},
    }


def _submitted(sc: Scenario) -> list[Workload]:
    """The workloads the scenario submits, at the start and in its steps."""
    later = [st.target for st in sc.steps if isinstance(st.target, Workload)]
    return [*sc.workloads, *later]
