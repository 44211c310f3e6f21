"""The `steps` of a scenario on the cluster: carry one out, then wait until Kueue has reacted.

Every step is followed by the same two waits: Kueue's reaction to running workloads
(harness.runner.repair: node failures recorded, replaced or evicted and requeued), then a
window for pending workloads and pods that could not run (`after_step`). The window is as
long as what could still change them: Kueue's 10 s non-TAS usage drainer when the step let a
non-TAS pod go, kube-scheduler's backoff when pods could not run; otherwise the retries a
step sets off (a node change, a workload gone) land within Kueue's two 1 s batch periods
(harness.runner.requeue).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from harness.backends.base import BackendError, Unsupported
from harness.kube import KUEUE_API, Obj, events, interval_after, pause, poll_until
from harness.kube import condition as get_condition
from harness.kueue.keys import TAS_POD_ANNOTATIONS
from harness.runner import (
    binding,
    check_controller,
    cq_stop,
    faults,
    late_repair,
    lq_stop,
    objects,
    pod_readiness,
    repair,
    shaping,
)
from harness.runner.kueuelog import KueueLog
from harness.runner.reading import admission_placement, evicted_now, state
from harness.runner.requeue import retry_window
from harness.runner.waits import delete_pods, wait_gone
from harness.scenario.model import (
    READINESS_ACTIONS,
    CheckChange,
    ClusterQueueStopChange,
    Node,
    PodFault,
    Step,
    StopPolicyChange,
    TaintChange,
    Usage,
    Workload,
)

if TYPE_CHECKING:
    from harness.runner.session import Entry, Session

# Kueue v0.19.2's defaults (pkg/features/kube_features.go): all three on.
FAIL_FAST = "TASFailedNodeReplacementFailFast"
NODE_REPLACEMENT = "TASFailedNodeReplacement"
NODE_TAINTS = "TASReplaceNodeOnNodeTaints"


def apply(s: Session, step: Step) -> None:
    """Carry out one step, then let Kueue react and pending workloads settle."""
    s.let_requeue_pass()
    wait_pods_ready(s)
    s.before = before(s)
    log = KueueLog(s.cluster.kueue_log_path)
    stuck_before = late_repair.stuck_pods(s, tas_pod)
    touched = act(s, step)
    watch = repair.Watch(
        read=lambda: s.workload_objs(_live(s)),
        nodes=touched,
        namespace=s.names.namespace,
        fail_fast=s.cluster.gates.get(FAIL_FAST, True),
        node_controller=s.cluster.gates.get(NODE_REPLACEMENT, True),
    )
    repair.settle(watch, log, s.t)
    if step.action != "submit":  # a submission awaits its own (Session.submit)
        await_start_timeouts(s)
    restarted = step.action == "upgrade-kueue"
    after_step(s, freed_non_tas=non_tas_freed(s, s.before.non_tas_pods), restarted=restarted)
    s.settle_admitted_pods()
    stuck = late_repair.new_stuck_nodes(s, tas_pod, stuck_before)
    if late_repair.needs_settling(stuck, watch, log):
        late_repair.settle(stuck, watch, log, s)
        after_step(s, freed_non_tas=False)


def await_start_timeouts(s: Session) -> None:
    """The PodsReady timeouts of `podsReady: false` workloads that run out now, each followed
    by Kueue's reaction (harness.runner.pod_readiness)."""

    def settle() -> None:
        watch = repair.Watch(
            read=lambda: s.workload_objs(_live(s)),
            nodes=[],
            namespace=s.names.namespace,
            fail_fast=s.cluster.gates.get(FAIL_FAST, True),
            node_controller=s.cluster.gates.get(NODE_REPLACEMENT, True),
        )
        repair.settle(watch, KueueLog(s.cluster.kueue_log_path), s.t)

    pod_readiness.await_start_timeouts(s, settle)


def _admitted_on(s: Session, node: str) -> list[Entry]:
    """Live admitted workloads whose topology assignment names the node."""
    found = []
    for entry in _live(s):
        wl = s.workload_obj(entry)
        if wl is None or state(wl).kind != "admitted":
            continue
        placement = admission_placement(wl, s.rename(entry))
        if any(node in nodes for nodes in placement.values()):
            found.append(entry)
    return found


def _await_node_repair(s: Session, node: str, placed: list[Entry], log: KueueLog) -> None:
    """Before the deleted node's pods go: until Kueue's node controller has listed the node
    in each workload placed on it and the second pass has replaced it or evicted (or, with
    fail-fast off, failed once). Pod GC deletes a vanished node's pods only after its 40 s
    quarantine, after Kueue's reaction; deleting them at once raced the second pass: their
    Job's status write re-queued it with a copy still naming the node, and a second
    replacement moved the pods again (real Kueue v0.19.2, faults-group-node-fails-group-split:
    cycle 976 replaced gpu-2 by gpu-3, cycle 977 by gpu-4; queue/manager.go
    QueueSecondPassIfNeeded)."""
    if not placed or not s.cluster.gates.get(NODE_REPLACEMENT, True):
        return
    fail_fast = s.cluster.gates.get(FAIL_FAST, True)

    def repaired() -> tuple[bool, str]:
        waiting = []
        for entry in placed:
            wl = s.workload_obj(entry)
            if wl is None or state(wl).kind != "admitted" or evicted_now(wl):
                continue  # gone, evicted or requeued: Kueue has acted
            listed = node in repair.unhealthy_nodes(wl)
            placement = admission_placement(wl, s.rename(entry))
            moved = not any(node in nodes for nodes in placement.values())
            if moved and not listed:
                continue
            if listed and not fail_fast:
                ns = s.names.namespace_of(entry.workload)
                if not log.available or log.second_passes_failed(ns, entry.kueue_name):
                    continue  # fail-fast off: Kueue keeps the node listed while it retries
            said = "second pass pending" if listed else "not marked unhealthy yet"
            waiting.append(f"{entry.workload.name}: {said}")
        return not waiting, "; ".join(waiting) or "all repaired"

    poll_until(
        repaired,
        what=f"Kueue to replace or evict around deleted node {node} before its pods go",
        timeout=s.t.settle + 30,  # the second pass's longest backoff (second_pass_queue.go)
        interval=s.t.interval,
    )


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
        # A reserved workload too: admitted in the step (its checks Ready), Kueue may
        # replace a node of the topology it reserved before its pods run.
        if wl is not None and state(wl).kind in ("admitted", "reserved"):
            placements[name] = admission_placement(wl, s.rename(entry))
    pods = [
        p
        for ns in s.names.all_namespaces
        for p in s.kube.list("v1", "Pod", ns, s.names.run_selector)
    ]
    bound = frozenset(
        p["metadata"]["uid"]
        for p in pods
        if binding.live(p) and (p.get("spec") or {}).get("nodeName")
    )
    seen = [e for ns in s.names.all_namespaces for e in events(s.kube, ns, kind="Workload")]
    # Terminating ones too: Kueue counts them until they are gone (kueue#10076).
    non_tas = frozenset(
        p["metadata"]["uid"]
        for p in pods
        if (p.get("spec") or {}).get("nodeName") and not tas_pod(p) and not _done(p)
    )
    return repair.Before(
        placements, evictions, bound, frozenset(e["metadata"]["uid"] for e in seen), non_tas
    )


def wait_pods_ready(s: Session) -> None:
    """Before a step, every admitted workload whose pods all run has Kueue's PodsReady=True.

    The Job controller's status update that makes it so is one more Workload update; landing
    after a node failure it queues the workload for a second pass a second time, with the
    copy that still lists the unhealthy node, and that stale second pass evicts the workload
    the first one had just repaired (seen on real Kueue v0.19.2: cycle 9 replaced b1-r1-n1,
    cycle 10 evicted with 'no replacement for unhealthy node(s): b1-r1-n1';
    pkg/cache/queue/manager.go QueueSecondPassIfNeeded prequeues the copy it is given)."""

    def probe() -> tuple[bool, str]:
        waiting = []
        for entry in _live(s):
            wl = s.workload_obj(entry)
            if wl is None or state(wl).kind != "admitted" or not s.has_pods(entry):
                continue
            ready = get_condition(wl, "PodsReady")
            if ready is None or ready.get("status") == "True":
                continue
            ns = s.names.namespace_of(entry.workload)
            pods = s.kube.list("v1", "Pod", ns, s.owner_selector(entry))
            # Ready, not only Running: a `pods-not-ready` step holds them Running, not Ready.
            running = [p for p in pods if binding.live(p) and _phase(p) == "Running" and _ready(p)]
            if len(running) >= sum(ps.count for ps in entry.workload.pod_sets):
                waiting.append(f"{entry.workload.name}: PodsReady {ready.get('reason')}")
        return not waiting, "; ".join(waiting) or "all ready"

    poll_until(
        probe,
        what="Kueue to mark workloads whose pods all run PodsReady",
        timeout=s.t.pods,
        interval=s.t.interval,
    )


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def tas_pod(pod: Obj) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(key in annotations for key in TAS_POD_ANNOTATIONS)


def _done(pod: Obj) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def non_tas_freed(s: Session, before: frozenset[str]) -> bool:
    """A non-TAS pod bound before the step is gone, terminating or finished: Kueue's
    non-TAS usage controller queues its node for a retry of inadmissible workloads."""
    if not before:
        return False
    pods = s.kube.list("v1", "Pod", s.names.namespace, s.names.run_selector)
    running = {
        p["metadata"]["uid"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp") and not _done(p)
    }
    return not before <= running


def act(s: Session, step: Step) -> list[str]:
    """Do what the step says, without waiting for Kueue's reaction (`apply` waits; a stream's
    node events are watched by its own clock, harness.runner.streaming); returns the nodes
    whose state it changed for Kueue's node controller (only fault steps: the others are
    awaited by the settle rules alone)."""
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
        placed = _admitted_on(s, target)
        log = KueueLog(s.cluster.kueue_log_path)
        log.mark()
        s.kube.delete("v1", "Node", target)
        wait_gone(s.kube, "v1", "Node", target, None, s.t)
        _await_node_repair(s, target, placed, log)
        faults.delete_bound(s.kube, ns, target, s.names.run_selector, s.t)
        s.nodes.pop(target, None)
        return [target]
    elif action == "add-usage":
        assert isinstance(target, Usage)
        ready = {n.name for n in s.nodes.values() if n.ready}
        shaping.create_usage(s.kube, [(s.usage_count, target)], s.names, ready, s.t)
        s.usage_count += 1
    elif action == "set-admission-check":
        assert isinstance(target, CheckChange)
        entry = s.entries.get(target.workload)
        if entry is not None and entry.rejected is None and entry.kueue_name:
            check_controller.set_state(s.kube, ns, entry.kueue_name, target)
    elif action == "set-stop-policy" and isinstance(target, ClusterQueueStopChange):
        cq_stop.apply(s, target)
    elif action == "set-stop-policy":
        assert isinstance(target, StopPolicyChange)
        lq_stop.apply(s, target)
    elif action in READINESS_ACTIONS:
        assert isinstance(target, str)
        pod_readiness.set_ready(s, target, ready=action == "pods-ready")
    elif action == "upgrade-kueue":
        if s.cluster.upgrade_kueue is None:
            raise BackendError("step upgrade-kueue: this cluster cannot replace its Kueue")
        s.cluster.upgrade_kueue(str(target))
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
        return [target.node] if s.cluster.gates.get(NODE_TAINTS, True) or evicting else []
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


def after_step(s: Session, *, freed_non_tas: bool = True, restarted: bool = False) -> None:
    """Wait for pending workloads to be admitted and for pods that could not run before the
    step to be bound; what is still pending or unbound at the end stays so. The window is
    `step_window` (Kueue's 10 s non-TAS requeue batching, kube-scheduler's retry backoff)
    when the step freed non-TAS capacity, restarted Kueue (a new process schedules its
    rebuilt queues once its caches have synced, and says nothing of a workload it leaves
    as it was) or pods could not run, else Kueue's retry window followed by the pending
    window without a change."""
    waiting = [e for e in s.entries.values() if e.rejected is None]
    for entry in waiting:
        entry.settled_message = None  # re-evaluated after the step: read it afresh
    long = freed_non_tas or restarted or any(e.unschedulable for e in waiting)
    started = time.monotonic()
    deadline = started + (s.t.step_window if long else retry_window(s.t))
    while time.monotonic() < deadline:
        if all(seen.kind == "admitted" for seen in s.states_of(waiting)) and not any(
            _unbound(s, e) for e in waiting if e.unschedulable
        ):
            return
        pause(interval_after(max(s.t.interval, 0.25), time.monotonic() - started))
    if not long:
        _unchanged(s, waiting)


def _unchanged(s: Session, waiting: list[Entry]) -> None:
    """The workloads' states stay the same for `pending_window`: a retry that landed at the
    end of the window has been decided."""
    last = s.states_of(waiting)
    since = time.monotonic()
    deadline = since + s.t.settle
    while time.monotonic() - since < s.t.pending_window:
        pause(s.t.interval)
        now = s.states_of(waiting)
        if now != last:
            if time.monotonic() >= deadline:
                raise BackendError(
                    f"workloads kept changing for {s.t.settle:.0f}s after a step; last seen: "
                    + ", ".join(
                        f"{e.workload.name}: {st.kind}" for e, st in zip(waiting, now, strict=True)
                    )
                )
            last, since = now, time.monotonic()


def _unbound(s: Session, entry: Entry) -> bool:
    """Some live pod of an admitted workload is not bound (yet)."""
    for ps in entry.workload.pod_sets:
        pods = s.kube.list("v1", "Pod", s.names.namespace, s.selector(entry, ps.name))
        live = [p for p in pods if binding.live(p)]
        if sum(1 for p in live if (p.get("spec") or {}).get("nodeName")) < ps.count:
            return True
    return False


def _scale_down_group(s: Session, entry: Entry) -> None:
    """A LeaderWorkerSet group goes when its set is scaled below it: Kueue deletes the
    Workloads of groups past spec.replicas (filterWorkloads). Only the highest live group
    can go that way; deleting the whole set is deleting each group from the last."""
    g = entry.workload.lws
    assert g is not None
    higher = [
        e.workload.name
        for e in s.entries.values()
        if e.workload.lws is not None
        and e.workload.lws.set_name == g.set_name
        and e.workload.lws.index > g.index
    ]
    if higher:
        raise Unsupported(
            f"delete-workload {entry.workload.name}: a LeaderWorkerSet loses groups from the "
            f"highest index down; delete {', '.join(higher)} first"
        )
    patch = {"spec": {"replicas": g.index}}
    s.kube.patch(objects.LWS_API, "LeaderWorkerSet", g.set_name, patch, namespace=s.names.namespace)


def _delete_workload(s: Session, name: str) -> None:
    """The Job, JobSet or Workload goes, and its pods; pods held Terminating by a
    `terminate-pods` step stay (kueue#10076)."""
    entry = s.entries.pop(name)
    if entry.rejected is not None:
        return
    ns = s.names.namespace_of(entry.workload)
    if entry.workload.lws is not None:
        _scale_down_group(s, entry)
    elif entry.as_job:
        s.kube.delete("batch/v1", "Job", name, ns)
    elif entry.kind == "JobSet":
        s.kube.delete(objects.JOBSET_API, "JobSet", name, ns)
    else:
        s.kube.delete(KUEUE_API, "Workload", name, ns)
    wait_gone(s.kube, KUEUE_API, "Workload", entry.kueue_name, ns, s.t)
    if s.has_pods(entry):
        delete_pods(s.kube, ns, s.owner_selector(entry), s.t, keep=faults.HOLD_FINALIZER)
