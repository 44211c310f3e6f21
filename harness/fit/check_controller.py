"""A `set-admission-check` step in the fit model: the check controller writes a state, and
Kueue's workload controller reacts (pkg/controller/core/workload_controller.go:
`reconcileSyncAdmissionChecks`, `SyncAdmittedCondition`, `reconcileCheckBasedEviction`; the
job reconciler then stops the evicted Job and gives its quota back). The rules are in
harness.fit.checks."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from harness.errors import Nondeterministic
from harness.fit.checks import rejection, retry_eviction
from harness.kueue.queue_activity import inactive_message
from harness.results.outcome import Outcome
from harness.scenario.model import CheckChange

if TYPE_CHECKING:
    from harness.fit.engine import Engine


def apply(engine: Engine, change: CheckChange) -> None:
    """Write the state; then evict (Retry), deactivate (Rejected) or admit (all Ready) a
    workload holding quota. A pending workload only carries the state to its next
    evaluation: a status change does not requeue it (cluster_queue.go PushOrUpdate)."""
    engine.tick += 1
    checks, name = engine.checks, change.workload
    blocked = engine.readiness.blocked
    if blocked is not None and blocked.entry.pending.workload.name == name:
        # The waiting scheduler admits with the copy it popped (scheduler.go admit: a forced
        # apply of its status.admissionChecks): whether that copy already listed the check
        # (the workload controller's sync racing the pop) decides whether this write lasts.
        raise Nondeterministic(
            f"{engine.scenario.path}: set-admission-check on {name} while Kueue's scheduler "
            "waits for PodsReady to admit it (blockAdmission): its admission may overwrite "
            "the state with the copy it popped"
        )
    written = checks.changes(change)
    kept = checks.set(change)
    if written and name in checks.inactive_workloads and name in engine.outcomes:
        # The update handler of a deactivated Workload requeues its cohort's parked
        # workloads on every status write (workload_controller.go Update, `!active`:
        # QueueAssociatedInadmissibleWorkloadsAfter), a check it no longer needs too: the
        # write adds it, and the workload controller's sync drops it again.
        engine.requeue_associated(name, engine.workloads[name].queue)
    if not kept or name not in engine.snap.holding:
        return
    rejected, retry = checks.with_state(name, "Rejected"), checks.with_state(name, "Retry")
    outcome = engine.outcomes[name]
    if rejected:
        eviction = rejection(rejected)
        engine.faults.report.evicted[name] = eviction
        give_back(engine, name)
        checks.inactive_workloads.add(name)
        engine.queues.delete(name)
        engine.outcomes[name] = Outcome(
            admitted=False,
            message=_pending_message(engine, name, eviction.message),
            preempted=outcome.preempted,
        )
    elif retry:
        eviction = retry_eviction(retry)
        engine.faults.report.evicted[name] = eviction
        give_back(engine, name)
        # GetQueueOrderTimestamp: an AdmissionCheck eviction orders it by its eviction time.
        engine.evicted_now(name)
        engine.queues.push(engine._pending(engine.workloads[name]))
        engine.outcomes[name] = Outcome(
            admitted=False,
            message=_pending_message(engine, name, eviction.message),
            preempted=outcome.preempted,
        )
    elif outcome.quota_reserved and checks.all_ready(name):
        held, w = engine.snap.holding[name], engine.workloads[name]
        engine.outcomes[name] = replace(outcome, admitted=True, quota_reserved=False, message="")
        engine.binder.admit(w, engine._released(w, held), held.per_leaf, engine.nodes, engine.usage)
        engine._note_unschedulable(name)
        # Admitted now: a start timeout counts from this Admitted condition, not from the
        # quota reservation (workload_controller.go admittedNotReadyWorkload).
        engine.readiness.admitted(engine, name)


def _pending_message(engine: Engine, name: str, eviction: str) -> str:
    """Once the Job stopped, the workload controller writes why it waits over the eviction
    message when its ClusterQueue is inactive, deactivated or not (getQueueBlocker in
    pkg/controller/core/workload_controller.go: syncQuotaReservedFalseCondition)."""
    cq = engine.scenario.cluster_queue(engine.workloads[name].queue)
    message = inactive_message(cq) if cq.name in engine.queues.inactive else eviction
    return engine.blocked_message(name, message)


def give_back(engine: Engine, name: str) -> None:
    """The Job stopped (evicted by a check or by the PodsReady timeout): quota and nodes
    released, its cohort's parked workloads requeued."""
    held = engine._release(name)
    if held is None:
        return
    engine.generation[held.cq] += 1
    engine.requeue_associated(name, held.cq)
