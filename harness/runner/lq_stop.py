"""A `set-stop-policy` step on the cluster: patch the LocalQueue's spec.stopPolicy as a user
would, then wait until Kueue has acted on it (harness.kueue.local_queue_stop): the
LocalQueue's Active condition, and, when held, each of its workloads either waiting with
"LocalQueue NAME is inactive" or, still admitted, kept (Hold); HoldAndDrain's evictions
have given their quota back. The step's general settling follows (harness.runner.steps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.kube import KUEUE_API, Obj, poll_until
from harness.kube import condition as get_condition
from harness.kueue import local_queue_stop as rules
from harness.kueue.queue_activity import inactive_reason
from harness.runner.shaping import await_local_queue
from harness.scenario.model import StopPolicyChange

if TYPE_CHECKING:
    from harness.runner.session import Entry, Session


def apply(s: Session, change: StopPolicyChange) -> None:
    namespace = s.names.real(change.namespace)
    s.kube.patch(
        KUEUE_API,
        "LocalQueue",
        change.local_queue,
        {"spec": {"stopPolicy": change.stop_policy}},
        namespace=namespace,
    )
    lq = next(
        q
        for q in s.scenario.queues()
        if (q.namespace, q.name) == (change.namespace, change.local_queue)
    )
    cq = s.scenario.cluster_queue(lq.cluster_queue)
    held = rules.held(change.stop_policy)
    active = not held and inactive_reason(cq, s.scenario.admission_checks) is None
    what = f"Active {active} after stopPolicy {change.stop_policy}"
    await_local_queue(s.kube, lq.name, s.names, s.t, what, active, namespace)
    if held:
        _await_held(s, change)


def _await_held(s: Session, change: StopPolicyChange) -> None:
    """Every workload of the LocalQueue says it waits on it, or is admitted and (Hold)
    allowed to keep running."""
    drains = rules.drains(change.stop_policy)
    wanted = rules.inactive_message(change.local_queue)
    entries = [
        e
        for e in s.entries.values()
        if e.rejected is None
        and e.kueue_name
        and (e.workload.namespace, e.workload.queue_name) == (change.namespace, change.local_queue)
    ]

    await_stopped(
        s,
        entries,
        lambda _: wanted,
        drains,
        f"the workloads of LocalQueue {change.local_queue} held ({change.stop_policy})",
    )


def await_stopped(
    s: Session, entries: list[Entry], wanted: Callable[[Entry], str], drains: bool, what: str
) -> None:
    """Until each workload of a stopped queue is gone, admitted and (not draining) allowed to
    keep running, or without quota saying `wanted(entry)` (LocalQueue and ClusterQueue
    stopPolicy steps alike)."""

    def probe() -> tuple[bool, str]:
        seen = []
        for e in entries:
            ok, said = _settled(s.workload_obj(e), wanted(e), drains)
            if not ok:
                seen.append(f"{e.workload.name}: {said}")
        return not seen, "; ".join(seen) or "all settled"

    poll_until(probe, what=what, timeout=s.t.settle, interval=s.t.interval)


def _settled(wl: Obj | None, wanted: str, drains: bool) -> tuple[bool, str]:
    if wl is None:
        return True, "gone"
    admitted = get_condition(wl, "Admitted") or {}
    reserved = get_condition(wl, "QuotaReserved") or {}
    if admitted.get("status") == "True" and not drains:
        return True, "admitted"
    said = f"QuotaReserved={reserved.get('status')} ({reserved.get('message', '')})"
    return reserved.get("status") == "False" and reserved.get("message") == wanted, said
