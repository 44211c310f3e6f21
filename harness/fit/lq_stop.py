"""A `set-stop-policy` step in the fit model: a LocalQueue's stopPolicy changes, and Kueue's
LocalQueue controller, workload controller and job reconciler react (the rules:
harness.kueue.local_queue_stop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.fit.check_controller import give_back
from harness.kueue import local_queue_stop as rules
from harness.kueue.queue_activity import inactive_message
from harness.results.outcome import Outcome
from harness.scenario.model import Eviction, StopPolicyChange

if TYPE_CHECKING:
    from harness.fit.engine import Engine


def apply(engine: Engine, change: StopPolicyChange) -> None:
    """Held: its workloads leave the queues and wait with the LocalQueue's message; a
    reservation without admission is taken away; HoldAndDrain evicts the admitted ones.
    None again: every workload of it is queued (the drained ones too)."""
    engine.tick += 1
    key = (change.namespace, change.local_queue)
    queues = engine.queues
    was_held, now_held = key in queues.stopped, rules.held(change.stop_policy)
    queues.stop_policies[key] = change.stop_policy
    if now_held and not was_held:
        queues.stop(key)
    members = [n for n, w in engine.workloads.items() if queues.local_queue(w) == key]
    for name in members:
        outcome = engine.outcomes.get(name)
        if outcome is None or outcome.rejected:
            continue
        if name in engine.snap.holding:
            if not now_held:
                continue
            if outcome.quota_reserved or rules.drains(change.stop_policy):
                _unreserve(engine, name, evict=not outcome.quota_reserved)
        elif now_held:
            engine._pending_outcome(name, outcome.message)
    if was_held and not now_held:
        queues.resume(key)
        _unblocked(engine, members)


def admitted_while_held(engine: Engine, name: str) -> None:
    """waitForPodsReady blockAdmission: once every workload is ready the scheduler admits the
    entry it waited with, without asking again whether its LocalQueue still takes workloads
    (scheduler.go schedule: WaitForPodsReady, then admit). Held meanwhile, that LocalQueue
    gets the workload controller's answer to a hold (reconcileOnLocalQueueActiveState): a
    reservation waiting for admission checks is taken away, an admission evicted under
    HoldAndDrain."""
    key = engine.queues.local_queue(engine.workloads[name])
    if key not in engine.queues.stopped:
        return
    outcome = engine.outcomes[name]
    if outcome.quota_reserved:
        _unreserve(engine, name, evict=False)
    elif outcome.admitted and rules.drains(_policy(engine, key)):
        _unreserve(engine, name, evict=True)


def _policy(engine: Engine, key: tuple[str, str]) -> str:
    if key in engine.queues.stop_policies:
        return engine.queues.stop_policies[key]
    return next(q.stop_policy for q in engine.scenario.queues() if (q.namespace, q.name) == key)


def _unblocked(engine: Engine, members: list[str]) -> None:
    """The policy's change reconciles every workload of the LocalQueue
    (workloadQueueHandler.Update): one without quota gets getQueueBlocker's message, now its
    ClusterQueue's when that is inactive (the scheduler never pops it to say otherwise)."""
    for name in members:
        outcome = engine.outcomes.get(name)
        if outcome is None or outcome.rejected or name in engine.snap.holding:
            continue
        cq = engine.scenario.cluster_queue(engine.workloads[name].queue)
        if cq.name in engine.queues.inactive:
            engine._pending_outcome(name, inactive_message(cq))


def _unreserve(engine: Engine, name: str, *, evict: bool) -> None:
    """`evict`: HoldAndDrain on an admitted workload (Evicted, LocalQueueStopped; Requeued
    False until the LocalQueue restarts); else a reservation waiting for admission checks
    taken away without eviction. Either way quota and nodes go back and it waits aside."""
    preempted = engine.outcomes[name].preempted
    if evict:
        engine.faults.report.evicted[name] = Eviction(rules.DRAIN_REASON, rules.DRAIN_MESSAGE)
    give_back(engine, name)
    engine.queues.push(engine._pending(engine.workloads[name]))
    message = engine.blocked_message(name, rules.DRAIN_MESSAGE)
    engine.outcomes[name] = Outcome(admitted=False, message=message, preempted=preempted)
