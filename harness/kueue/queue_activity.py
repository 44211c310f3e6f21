"""Which ClusterQueues Kueue keeps inactive, and what it writes into their workloads.

A ClusterQueue with `stopPolicy` Hold or HoldAndDrain is inactive (Active False, reason
Stopped: pkg/cache/scheduler/clusterqueue.go `inactiveReason`), and so is one listing a
flavor no ResourceFlavor is named after (reason FlavorNotFound), or one using an
AdmissionCheck that does not exist or is not Active (AdmissionCheckNotFound/Inactive). The
queue manager gives the scheduler no head from it, and the workload controller writes into
each of its pending
workloads QuotaReserved False, "ClusterQueue NAME is inactive" (workload_controller.go
`getQueueBlocker`). Its quota stays in its cohort (the cohort's subtree quota counts every
child; snapshot.go skips only the inactive queue itself), so others may still borrow it.
With HoldAndDrain the workload controller also evicts every workload it admitted, reason
ClusterQueueStopped, "The ClusterQueue is stopped" (`reconcileOnClusterQueueActiveState`);
Hold leaves them running.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.scenario.model import AdmissionCheck, ClusterQueue

STOPPED = "Stopped"
"""kueue.ClusterQueueActiveReasonStopped."""
FLAVOR_NOT_FOUND = "FlavorNotFound"
"""kueue.ClusterQueueActiveReasonFlavorNotFound: it lists a flavor no ResourceFlavor is."""
CHECK_NOT_FOUND = "AdmissionCheckNotFound"
"""kueue.ClusterQueueActiveReasonAdmissionCheckNotFound: it uses a check no object is."""
CHECK_INACTIVE = "AdmissionCheckInactive"
"""kueue.ClusterQueueActiveReasonAdmissionCheckInactive: a check it uses is not Active."""
DRAIN_REASON = "ClusterQueueStopped"
"""kueue.WorkloadEvictedByClusterQueueStopped."""
DRAIN_MESSAGE = "The ClusterQueue is stopped"


def inactive_reason(cq: ClusterQueue, checks: Iterable[AdmissionCheck] = ()) -> str | None:
    """Why Kueue keeps `cq` inactive (its Active condition's first reason, in Kueue's
    order), None when active. `checks`: the scenario's AdmissionCheck objects."""
    if cq.stop_policy != "None":
        return STOPPED
    if cq.missing_flavors:
        return FLAVOR_NOT_FOUND
    known = {c.name: c for c in checks}
    used = [r.name for r in cq.admission_checks]
    if any(name not in known for name in used):
        return CHECK_NOT_FOUND
    return CHECK_INACTIVE if any(not known[name].active for name in used) else None


def inactive_message(cq: ClusterQueue) -> str:
    """The pending message of every workload waiting in an inactive ClusterQueue."""
    return f"ClusterQueue {cq.name} is inactive"


def drains(cq: ClusterQueue) -> bool:
    """HoldAndDrain: the workloads it admitted are evicted."""
    return cq.stop_policy == "HoldAndDrain"
