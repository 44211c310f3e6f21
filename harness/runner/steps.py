"""The `steps` of a scenario on the cluster: carry one out, then wait until Kueue has reacted.

Every step is followed by the same two waits: Kueue's reaction to running workloads
(harness.runner.repair: node failures recorded, replaced or evicted and requeued), then the
step window for pending workloads and pods that could not run (`after_step`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from harness.backends import BackendError
from harness.kube import KUEUE_API, events
from harness.runner import binding, faults, objects, repair, shaping
from harness.runner.kueuelog import KueueLog
from harness.runner.reading import admission_placement, state
from harness.runner.waits import delete_pods, wait_gone
from harness.scenario import Node, PodFault, Step, TaintChange, Usage, Workload

if TYPE_CHECKING:
    from harness.runner.session import Entry, Session

# Kueue v0.19.2's defaults (pkg/features/kube_features.go): all three on.
FAIL_FAST = "TASFailedNodeReplacementFailFast"
NODE_REPLACEMENT = "TASFailedNodeReplacement"
NODE_TAINTS = "TASReplaceNodeOnNodeTaints"


def apply(s: Session, step: Step) -> None:
    """Carry out one step, then let Kueue react and pending workloads settle."""
    s.let_requeue_pass()
    s.before = before(s)
    log = KueueLog(s.kueue_log_path)
    touched = _act(s, step)
    watch = repair.Watch(
        read=lambda: {e.kueue_name: s.workload_obj(e) for e in _live(s)},
        nodes=touched,
        namespace=s.names.namespace,
        fail_fast=s.gates.get(FAIL_FAST, True),
        node_controller=s.gates.get(NODE_REPLACEMENT, True),
    )
    repair.settle(watch, log, s.t)
    after_step(s)


def _live(s: Session) -> list[Entry]:
    return [e for e in s.entries.values() if e.rejected is None and e.kueue_name]


def before(s: Session) -> repair.Before:
    """Placements and eviction counts of every live workload, and the pods bound now."""
    placements = {}
    evictions = {}
    for name, entry in s.entries.items():
        if entry.rejected is not None or not entry.kueue_name:
            continue
        wl = s.workload_obj(entry)
        evictions[name] = repair.eviction_counts(wl)
        if wl is not None and state(wl).kind == "admitted":
            placements[name] = admission_placement(wl, s.rename(entry))
    pods = s.kube.list("v1", "Pod", s.names.namespace, s.names.run_selector)
    bound = frozenset(
        p["metadata"]["uid"]
        for p in pods
        if binding.live(p) and (p.get("spec") or {}).get("nodeName")
    )
    seen = events(s.kube, s.names.namespace, kind="Workload")
    return repair.Before(
        placements, evictions, bound, frozenset(e["metadata"]["uid"] for e in seen)
    )


def _act(s: Session, step: Step) -> list[str]:
    """Do what the step says; returns the nodes whose state it changed for Kueue's node
    controller (only fault steps: the others are awaited by the settle rules alone)."""
    action, target = step.action, step.target
    ns = s.names.namespace
    if action == "submit":
        assert isinstance(target, Workload)
        s.submit(target)
    elif action == "delete-workload":
        assert isinstance(target, str)
        _delete_workload(s, target)
    elif action == "delete-usage":
        assert isinstance(target, str)
        delete_pods(s.kube, ns, f"{objects.USAGE_LABEL}={target}", s.t)
    elif action in ("cordon", "uncordon"):
        assert isinstance(target, str)
        flag = True if action == "cordon" else None
        s.kube.patch("v1", "Node", target, {"spec": {"unschedulable": flag}})
    elif action == "add-node":
        assert isinstance(target, Node)
        shaping.create_nodes(s.kube, [target], s.names, s.t)
        s.nodes[target.name] = target
    elif action == "delete-node":
        assert isinstance(target, str)
        s.kube.delete("v1", "Node", target)
        wait_gone(s.kube, "v1", "Node", target, None, s.t)
        faults.delete_bound(s.kube, ns, target, s.names.run_selector, s.t)
        s.nodes.pop(target, None)
        return [target]
    elif action == "add-usage":
        assert isinstance(target, Usage)
        ready = {n.name for n in s.nodes.values() if n.ready}
        shaping.create_usage(s.kube, target, s.usage_count, s.names, ready, s.t)
        s.usage_count += 1
    else:
        return _fault(s, action, target)
    return []


def _fault(s: Session, action: str, target: object) -> list[str]:
    ns = s.names.namespace
    if action == "node-not-ready":
        assert isinstance(target, str)
        faults.node_not_ready(s.kube, target, ns, s.t)
        return [target]
    if action == "node-ready":
        assert isinstance(target, str)
        faults.node_ready_again(s.kube, target, s.t)
        return [target]
    if action in ("taint-node", "untaint-node"):
        assert isinstance(target, TaintChange)
        faults.retaint(s.kube, target.node, target.taint, add=action == "taint-node")
        evicting = action == "taint-node" and target.taint.effect == "NoExecute"
        if evicting:
            faults.wait_evicted(s.kube, ns, target.node, target.taint, s.names.run_selector, s.t)
        # Kueue's node controller looks at a taint change only with TASReplaceNodeOnNodeTaints
        # (on by default); without it, only at the pods a NoExecute taint evicts.
        return [target.node] if s.gates.get(NODE_TAINTS, True) or evicting else []
    if action in ("terminate-pods", "fail-pods"):
        assert isinstance(target, PodFault)
        pods = _pods_of(s, target)
        if action == "terminate-pods":
            faults.terminate(s.kube, ns, pods, s.t)
        else:
            faults.fail(s.kube, ns, pods, s.t)
        # Usage pods are not TAS pods: Kueue's node controller ignores them.
        return [] if target.usage else sorted({p["spec"]["nodeName"] for p in pods})
    raise BackendError(f"step action {action!r} is not implemented by the cluster runner")


def _pods_of(s: Session, fault: PodFault) -> list[objects.Obj]:
    ns = s.names.namespace
    if fault.usage:
        sel = f"{objects.USAGE_LABEL}={fault.usage}"
        return [p for p in s.kube.list("v1", "Pod", ns, sel) if binding.live(p)]
    assert fault.workload is not None
    entry = s.entries[fault.workload]
    per_pod_set = [
        s.kube.list("v1", "Pod", ns, s.selector(entry, ps.name)) for ps in entry.workload.pod_sets
    ]
    return faults.choose(per_pod_set, fault.node, fault.count)


def after_step(s: Session) -> None:
    """Wait up to `step_window` for pending workloads to be admitted and for pods that
    could not run before the step to be bound; what is still pending or unbound then
    stays so (the window covers Kueue's 10 s requeue batching and kube-scheduler's
    retry backoff)."""
    waiting = [e for e in s.entries.values() if e.rejected is None]
    for entry in waiting:
        entry.settled_message = None  # re-evaluated after the step: read it afresh
    deadline = time.monotonic() + s.t.step_window
    while time.monotonic() < deadline:
        if all(s.state_of(e).kind == "admitted" for e in waiting) and not any(
            _unbound(s, e) for e in waiting if e.unschedulable
        ):
            return
        time.sleep(max(s.t.interval, 0.25))


def _unbound(s: Session, entry: Entry) -> bool:
    """Some live pod of an admitted workload is not bound (yet)."""
    for ps in entry.workload.pod_sets:
        pods = s.kube.list("v1", "Pod", s.names.namespace, s.selector(entry, ps.name))
        live = [p for p in pods if binding.live(p)]
        if sum(1 for p in live if (p.get("spec") or {}).get("nodeName")) < ps.count:
            return True
    return False


def _delete_workload(s: Session, name: str) -> None:
    """The Job, JobSet or Workload goes, and its pods; pods held Terminating by a
    `terminate-pods` step stay (kueue#10076)."""
    entry = s.entries.pop(name)
    if entry.rejected is not None:
        return
    ns = s.names.namespace
    if entry.as_job:
        s.kube.delete("batch/v1", "Job", name, ns)
    elif entry.kind == "JobSet":
        s.kube.delete(objects.JOBSET_API, "JobSet", name, ns)
    else:
        s.kube.delete(KUEUE_API, "Workload", name, ns)
    wait_gone(s.kube, KUEUE_API, "Workload", entry.kueue_name, ns, s.t)
    if s.has_pods(entry):
        delete_pods(s.kube, ns, s.owner_selector(entry), s.t, keep=faults.HOLD_FINALIZER)
