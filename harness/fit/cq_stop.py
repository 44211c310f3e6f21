"""A `set-stop-policy: {clusterQueue, ...}` step in the fit model: a ClusterQueue's stopPolicy
changes, and Kueue's ClusterQueue controller, workload controller and job reconciler react
(the rules: harness.kueue.queue_activity).

Kueue v0.19.2: the ClusterQueue controller's Update hands the new spec to the cache (Hold and
HoldAndDrain: inactive, reason Stopped) and to the queue manager, which requeues the parked
workloads of its cohort tree on any spec change (manager.go UpdateClusterQueue). The
workload controller (workload_controller.go reconcileOnClusterQueueActiveState) evicts the
workloads it admitted under HoldAndDrain (ClusterQueueStopped, "The ClusterQueue is
stopped"), takes a reservation waiting for admission checks away under either policy, and
writes "ClusterQueue NAME is inactive" into every pending one (getQueueBlocker). Once the
policy is None again the drained ones are requeued (ClusterQueueRestarted).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from harness.errors import Nondeterministic
from harness.fit.check_controller import give_back
from harness.kueue.queue_activity import DRAIN_MESSAGE, DRAIN_REASON, inactive_message
from harness.kueue.queue_activity import inactive_reason as reason_of
from harness.results.outcome import Outcome
from harness.scenario.model import ClusterQueueStopChange, Eviction

if TYPE_CHECKING:
    from harness.fit.engine import Engine


def apply(engine: Engine, change: ClusterQueueStopChange) -> None:
    """Inactive or active again as Kueue's cache decides; then the workload controller's
    reactions for each workload of the ClusterQueue, and the requeue of its cohort tree."""
    engine.tick += 1
    name = change.cluster_queue
    cq = replace(engine.scenario.cluster_queue(name), stop_policy=change.stop_policy)
    stopped = change.stop_policy != "None"
    inactive = reason_of(cq, engine.scenario.admission_checks) is not None
    racing = name not in engine.queues.inactive  # the cache still says active, for a moment
    if inactive:
        engine.queues.inactive.add(name)  # the Snapshot shares this set
    else:
        engine.queues.inactive.discard(name)
    members = [n for n, w in engine.workloads.items() if w.queue == name]
    for member in members:
        outcome = engine.outcomes.get(member)
        if outcome is None or outcome.rejected:
            continue
        if member in engine.snap.holding:
            drains = change.stop_policy == "HoldAndDrain" and outcome.admitted
            if stopped and (outcome.quota_reserved or drains):
                _unreserve(engine, member, evict=drains, message=inactive_message(cq))
        elif inactive:  # deactivated ones too: getQueueBlocker does not ask
            before = engine.outcomes[member]
            engine._pending_outcome(member, inactive_message(cq))
            if racing:
                _blocker_race(engine, member, before)
    engine.generation[name] += 1
    engine.queues.flush(engine._cohort_of(name))
    if not stopped:
        _restart(engine, name, members)


def _restart(engine: Engine, name: str, members: list[str]) -> None:
    """The drained workloads are queued again only once the workload controller has written
    Requeued True (ClusterQueueRestarted) on each, while the others are queued at once by
    the queue manager: when they compete for the room, the order is a race."""
    static = {a.name for a in engine.scenario.admitted if a.queue == name}
    drained = {
        n
        for n in members
        if (n in engine.cq_drained or n in static)
        and n not in engine.snap.holding
        and n in engine.outcomes
        and not engine.outcomes[n].rejected
    }
    engine.cq_drained -= drained
    submitted = {n for n in members if n in engine.outcomes and not engine.outcomes[n].rejected}
    waiting = {n for n in submitted if n not in engine.snap.holding} - drained
    if not drained or not waiting:
        return
    engine.settle()
    left = sorted(n for n in drained | waiting if n not in engine.snap.holding)
    if left:
        raise Nondeterministic(
            f"{engine.scenario.path}: set-stop-policy None on ClusterQueue {name}: the drained "
            f"workloads ({', '.join(sorted(drained))}) race the waiting ones for the room "
            f"({left[0]} is left out): Kueue requeues them only after a status write each"
        )


def _blocker_race(engine: Engine, name: str, before: Outcome) -> None:
    """A workload waiting without quota is reconciled once, on the spec change
    (workloadQueueHandler.Update enqueues every workload of the ClusterQueue), and
    getQueueBlocker reads the cache, which the ClusterQueue controller updates in its own
    event handler (clusterqueue_controller.go Update): whether that one reconcile already
    sees the queue inactive is a race, and nothing reconciles the workload again until
    something writes it. So it says either "ClusterQueue NAME is inactive" or what it said
    before, evaluated or not: the embedded cluster kept the old message in 2 of 5 runs of a
    parked workload, and 1 of 3 (each) for a parked one, a StrictFIFO head and a workload
    never evaluated behind it, every workload of the queue alike within a run. The outcome
    carries both (`message_race`); the sim always takes the cache first. A queue that was
    inactive already (Hold to HoldAndDrain) leaves no race: that reconcile writes this
    message."""
    now = engine.outcomes[name]
    # The same message (its LocalQueue's, or this one again): an earlier race still stands.
    kept = before.message_race if now.message == before.message else before.message
    if kept is not None:
        engine.outcomes[name] = replace(now, message_race=kept)


def _unreserve(engine: Engine, name: str, *, evict: bool, message: str) -> None:
    """`evict`: HoldAndDrain on an admitted workload (Evicted, ClusterQueueStopped); else a
    reservation waiting for admission checks taken away without eviction. Quota and nodes
    go back; it waits in its inactive ClusterQueue."""
    preempted = engine.outcomes[name].preempted
    if evict:
        engine.faults.report.evicted[name] = Eviction(DRAIN_REASON, DRAIN_MESSAGE)
        engine.cq_drained.add(name)
    give_back(engine, name)
    engine.queues.push(engine._pending(engine.workloads[name]))
    text = engine.blocked_message(name, message)
    engine.outcomes[name] = Outcome(admitted=False, message=text, preempted=preempted)
