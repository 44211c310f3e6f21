"""A `set-stop-policy: {clusterQueue, ...}` step on the cluster: patch the ClusterQueue's
spec.stopPolicy as a user would (kubectl patch, or kueuectl stop/resume clusterqueue), then
wait until Kueue has acted on it (harness.kueue.queue_activity): the ClusterQueue's Active
condition, and, when stopped, each of its workloads either waiting with "ClusterQueue NAME
is inactive" (its LocalQueue's message when that is held) or, still admitted, kept (Hold);
HoldAndDrain's evictions have given their quota back. The step's general settling follows
(harness.runner.steps)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from harness.kube import KUEUE_API, has_condition, wait_for
from harness.kube import condition as get_condition
from harness.kueue import local_queue_stop
from harness.kueue.queue_activity import inactive_message, inactive_reason
from harness.runner.lq_stop import await_stopped
from harness.scenario.model import ClusterQueueStopChange

if TYPE_CHECKING:
    from harness.runner.objects import Obj
    from harness.runner.session import Entry, Session


def apply(s: Session, change: ClusterQueueStopChange) -> None:
    name = change.cluster_queue
    holding = [e for e in _entries(s, name) if _reserved(s.workload_obj(e))]
    s.kube.patch(KUEUE_API, "ClusterQueue", name, {"spec": {"stopPolicy": change.stop_policy}})
    cq = replace(s.scenario.cluster_queue(name), stop_policy=change.stop_policy)
    reason = inactive_reason(cq, s.scenario.admission_checks)
    wait_for(
        s.kube,
        KUEUE_API,
        "ClusterQueue",
        name,
        has_condition("Active", "False" if reason else "True"),
        what=f"Active {reason is None} after stopPolicy {change.stop_policy}",
        timeout=s.t.settle,
        interval=s.t.interval,
    )
    if change.stop_policy != "None":
        _await_stopped(s, change, holding)


def _entries(s: Session, cluster_queue: str) -> list[Entry]:
    return [
        e
        for e in s.entries.values()
        if e.rejected is None and e.kueue_name and e.workload.queue == cluster_queue
    ]


def _reserved(wl: Obj | None) -> bool:
    return (get_condition(wl, "QuotaReserved") or {}).get("status") == "True" if wl else False


def _await_stopped(s: Session, change: ClusterQueueStopChange, entries: list[Entry]) -> None:
    """Every workload that held quota says it waits, or is admitted and (Hold) allowed to
    keep running. One that waited without quota is left alone: whether Kueue's one
    reconcile of it sees the queue inactive races the cache (harness/fit/cq_stop.py)."""
    drains = change.stop_policy == "HoldAndDrain"
    cq = s.scenario.cluster_queue(change.cluster_queue)
    held = {
        (q.namespace, q.name) for q in s.scenario.queues() if local_queue_stop.held(q.stop_policy)
    }

    def wanted(e: Entry) -> str:
        if (e.workload.namespace, e.workload.queue_name) in held:
            # getQueueBlocker names the LocalQueue first
            return local_queue_stop.inactive_message(e.workload.queue_name)
        return inactive_message(cq)

    what = f"the workloads of ClusterQueue {cq.name} stopped ({change.stop_policy})"
    await_stopped(s, entries, wanted, drains, what)
