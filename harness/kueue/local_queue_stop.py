"""A LocalQueue's `stopPolicy` (Hold, HoldAndDrain), as Kueue v0.19.2 applies it.

- The LocalQueue controller adds a LocalQueue to the queue manager only while its policy is
  None, removes it (and its pending workloads from their ClusterQueue's heap and
  inadmissible set) when the policy turns Hold or HoldAndDrain, and adds it back when it
  returns to None: every admissible workload of it goes to the heap again
  (pkg/controller/core/localqueue_controller.go Create/Update, pkg/cache/queue/manager.go
  AddLocalQueue, cluster_queue.go AddFromLocalQueue). So a held LocalQueue's workloads are
  never heads; the scheduler cache keeps the LocalQueue, and its admitted workloads keep
  their quota and can still be preempted.
- The workload controller writes into each of its workloads without quota QuotaReserved
  False, "LocalQueue NAME is inactive" (workload_controller.go getQueueBlocker: the
  LocalQueue is checked before the ClusterQueue). A workload holding quota but not admitted
  (waiting for admission checks) loses the reservation ("LocalQueue NAME is stopped",
  reconcileOnLocalQueueActiveState), whichever the policy.
- HoldAndDrain evicts each admitted workload: Evicted, reason LocalQueueStopped, "The
  LocalQueue is stopped"; once its Job stopped it gives the quota back with Requeued False
  (that reason), so it is not popped (cluster_queue.go backoffWaitingTimeExpired). Hold
  leaves admitted workloads running.
- Back to None: the workload controller sets Requeued True, reason LocalQueueRestarted, on
  the drained ones, and the queue manager pops them again with the others (upstream:
  test/integration/singlecluster/scheduler/scheduler_test.go "Should evict workloads when
  stop policy is drain"; controller/core/workload_controller_test.go, "LocalQueue inactive").
"""

from __future__ import annotations

from harness.scenario.model import LocalQueue

DRAIN_REASON = "LocalQueueStopped"
"""kueue.WorkloadEvictedByLocalQueueStopped."""
DRAIN_MESSAGE = "The LocalQueue is stopped"
RESTARTED_REASON = "LocalQueueRestarted"
"""kueue.WorkloadLocalQueueRestarted: Requeued True once the policy is None again."""


def held(policy: str) -> bool:
    """Hold or HoldAndDrain: the LocalQueue is out of the queue manager."""
    return policy != "None"


def drains(policy: str) -> bool:
    """HoldAndDrain: its admitted workloads are evicted."""
    return policy == "HoldAndDrain"


def inactive_message(lq: LocalQueue | str) -> str:
    """The pending message of every workload of a held LocalQueue (getQueueBlocker)."""
    name = lq if isinstance(lq, str) else lq.name
    return f"LocalQueue {name} is inactive"
