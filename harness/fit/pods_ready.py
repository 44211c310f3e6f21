"""waitForPodsReady in the fit model: pods held not Ready by a step, Kueue's PodsReady timeout
(eviction with backoff, or deactivation past backoffLimitCount) and blockAdmission.

Rules: docs/dev/kueue-v0.19.2-rules-v2.md §11; configuration and time rule:
harness.kueue.pods_ready. In short:
- `pods-not-ready` on an admitted workload: PodsReady turns False (WaitForRecovery). A recovery
  timeout within the step horizon runs out: the workload is evicted (PodsReadyTimeout), its
  quota and domain released at once, its cohort's parked workloads requeued; after the
  backoff it is queued again (ordered by its eviction time with timestamp Eviction) and
  placed afresh. Past backoffLimitCount it is deactivated instead, which requeues the
  parked workloads twice: evaluated once or twice is a race (`requeued_twice`). A longer
  timeout never runs out: the workload stays admitted, not ready.
- blockAdmission: an entry that fits while a workload holding quota is not ready (held not
  Ready, pods that can never run, or waiting for admission checks) gets "waiting for all
  admitted workloads to be in PodsReady condition", and the scheduler stops until none is;
  then it admits that entry with the assignment it had.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

from harness.errors import UnsupportedVersionError
from harness.fit import lq_stop
from harness.fit.check_controller import give_back
from harness.fit.ties import Nondeterministic
from harness.kueue.pods_ready import (
    LIMIT_MESSAGE,
    TIMEOUT_MESSAGE,
    TIMER_HORIZON,
    PodsReadyConfig,
    within_step,
)
from harness.results.outcome import Outcome
from harness.scenario.model import Eviction, Scenario

if TYPE_CHECKING:
    from harness.fit.cycle import Entry, Model
    from harness.fit.engine import Engine
    from harness.fit.tree import LeafKey

    TasUsageByFlavor = dict[str, dict[LeafKey, dict[str, int]]]

ORDERED_BACKOFF = 3.0
"""Seconds: a backoff at least this long ends after the parked workloads of the cohort have
been requeued (Kueue's inadmissible batches run every second); a shorter one races them."""
MIN_START = 5.0
"""Seconds: a timeout shorter than this races the pods' own start (KWOK makes them Ready within
a second or two of admission)."""


@dataclass
class Blocked:
    """The entry the scheduler holds while it waits (waitForPodsReadyIfNeeded)."""

    entry: Entry
    tas_usage: TasUsageByFlavor
    later: list[str] = field(default_factory=list)
    """The entries of its cycle after it: held, unevaluated, until the wait ends."""


class PodsReadiness:
    """Which workloads are not ready, their requeue counts, and the blocked entry."""

    def __init__(self, scenario: Scenario) -> None:
        self.config = PodsReadyConfig.of(scenario.kueue_config.document, scenario.feature_gates)
        self.path = scenario.path
        self.held: set[str] = set()  # admitted workloads whose pods a step holds not Ready
        self.requeues: dict[str, int] = {}  # status.requeueState.count
        self.blocked: Blocked | None = None
        self.due: list[str] = []  # `podsReady: false` admissions whose timeout runs out

    def admitted(self, model: Model, name: str) -> None:
        """A `podsReady: false` workload admitted: its new pods never turn Ready, PodsReady
        stays False (WaitForStart) and `timeout` counts from the Admitted condition
        (reconcileNotReadyTimeout); one within the step horizon runs out (`due`)."""
        w = model.workloads.get(name)
        if w is None or w.pods_ready or not self.config.enabled:
            return
        self.held.add(name)
        if within_step(self.config.timeout):
            self.due.append(name)

    def check_supported(self) -> None:
        """Refuse timers the model cannot time against the cluster."""
        c = self.config
        if not c.enabled:
            return
        for key, timer in (("timeout", c.timeout), ("recoveryTimeout", c.recovery_timeout)):
            if timer < MIN_START:
                raise UnsupportedVersionError(
                    f"{self.path}: kueueConfig.waitForPodsReady.{key}: {timer:g}s races the "
                    f"pods' start; not modelled (use at least {MIN_START:g}s)"
                )

    def check_never_started(self, model: Model) -> None:
        """Refuse a timeout within the step horizon over pods that never run: Kueue would
        evict such a workload while the harness reads the step (WaitForStart), not modelled."""
        if not self.config.enabled or not within_step(self.config.timeout):
            return
        for name, outcome in model.outcomes.items():
            if outcome.admitted and any((outcome.unschedulable or {}).values()):
                raise UnsupportedVersionError(
                    f"{self.path}: kueueConfig.waitForPodsReady.timeout: {name}'s pods can "
                    f"never all run, and a {self.config.timeout:g}s timeout would evict it: "
                    "not modelled"
                )

    def released(self, name: str) -> None:
        """The workload's pods went with its quota: new pods start Ready."""
        self.held.discard(name)

    def not_ready(self, model: Model) -> list[str]:
        """Workloads in the cache without PodsReady=True (WorkloadsNotReady)."""
        out = []
        for name in model.snap.holding:
            outcome = model.outcomes.get(name)
            never_run = outcome is not None and any((outcome.unschedulable or {}).values())
            waiting = outcome is not None and outcome.quota_reserved
            if name in self.held or never_run or waiting:
                out.append(name)
        return out

    def blocks(self, model: Model, assumed: int = 0) -> bool:
        """blockAdmission holds an entry that fits: some workload is not ready. `assumed`
        counts the workloads admitted earlier in this cycle: the scheduler assumes each in
        the cache at once (scheduler.go admit -> assumeWorkload), and the cache lists one
        without PodsReady=True as not ready (clusterqueue.go addOrUpdateWorkload), so a
        second entry that fits in the same cycle waits (upstream scheduler_test.go "Should
        block admission of one new workload if two are considered in the same scheduling
        cycle")."""
        if not (self.config.enabled and self.config.block_admission):
            return False
        return assumed > 0 or bool(self.not_ready(model))

    def block(self, entry: Entry, tas_usage: TasUsageByFlavor) -> None:
        self.blocked = Blocked(entry, tas_usage)

    def unblock(self, model: Model) -> None:
        """Every workload is ready (or gone): the waiting entry is admitted as assigned."""
        if self.blocked is None or self.blocks(model):
            return
        if self.blocked.later:
            raise UnsupportedVersionError(
                f"{self.path}: {self.blocked.later[0]} is considered in the cycle in which "
                "the scheduler waits for PodsReady (blockAdmission), after the wait, against "
                "the snapshot taken before it: not modelled"
            )
        blocked, self.blocked = self.blocked, None
        held = model._admit(blocked.entry, blocked.tas_usage)
        model._hold(held)
        model.generation[held.cq] += 1
        lq_stop.admitted_while_held(cast("Engine", model), held.name)


def pods_not_ready(engine: Engine, name: str) -> None:
    """The kubelet reports the running pods not Ready; a short recovery timeout runs out."""
    readiness, outcome = engine.readiness, engine.outcomes.get(name)
    if outcome is None or not outcome.admitted or not readiness.config.enabled:
        return  # no running pods to fail, or nothing watches them
    readiness.held.add(name)
    if within_step(readiness.config.recovery_timeout):
        time_out(engine, name)


def pods_ready(engine: Engine, name: str) -> None:
    """The pods pass their readiness probe again: PodsReady=True (Recovered)."""
    engine.readiness.held.discard(name)
    engine.readiness.unblock(engine)


def time_out(engine: Engine, name: str) -> None:
    """reconcileNotReadyTimeout: deactivate past the limit, else evict, back off, requeue."""
    readiness = engine.readiness
    config, count = readiness.config, readiness.requeues.get(name, 0)
    preempted = engine.outcomes[name].preempted
    if config.deactivates(count):
        held = engine.snap.holding.get(name)
        engine.faults.report.evicted.setdefault(name, Eviction("Deactivated", LIMIT_MESSAGE))
        give_back(engine, name)
        engine.queues.delete(name)
        message = engine.blocked_message(name, LIMIT_MESSAGE)
        engine.outcomes[name] = Outcome(admitted=False, message=message, preempted=preempted)
        readiness.unblock(engine)
        if held is not None:
            requeued_twice(engine, name, held.cq)
        return
    readiness.requeues[name] = count + 1
    backoff = config.backoff(count + 1)
    if not within_step(backoff):
        raise UnsupportedVersionError(
            f"{engine.scenario.path}: kueueConfig.waitForPodsReady.requeuingStrategy: a "
            f"backoff of {backoff:g}s after the timeout outlasts the step ({TIMER_HORIZON:g}s); "
            "not modelled"
        )
    engine.faults.report.evicted.setdefault(name, Eviction("PodsReadyTimeout", TIMEOUT_MESSAGE))
    give_back(engine, name)
    message = engine.blocked_message(name, TIMEOUT_MESSAGE)
    engine.outcomes[name] = Outcome(admitted=False, message=message, preempted=preempted)
    readiness.unblock(engine)
    # The backoff: the cohort's parked workloads go first.
    admitted = {n for n, o in engine.outcomes.items() if o.admitted}
    engine.settle()
    took = {n for n, o in engine.outcomes.items() if o.admitted} - admitted
    if took and backoff < ORDERED_BACKOFF:
        raise Nondeterministic(
            f"{engine.scenario.path}: {name}'s backoff of {backoff:g}s races {sorted(took)[0]} "
            f"for the room its eviction freed (give backoffBaseSeconds >= {ORDERED_BACKOFF:g})"
        )
    if config.timestamp == "Eviction":  # GetQueueOrderTimestamp: the eviction time
        engine.created[name] = max(engine.created.values()) + 1
    engine.queues.push(engine._pending(engine.workloads[name]))


def requeued_twice(engine: Engine, name: str, cq: str) -> None:
    """A deactivation requeues the cohort's parked workloads twice, and whether they are
    evaluated once or twice is a race in Kueue (docs/dev/kueue-v0.19.2-rules-v2.md §11).

    Kueue v0.19.2: the `spec.active: false` update that freed the quota requeues them
    (workload_controller.go Update, `!active`: QueueAssociatedInadmissibleWorkloadsAfter);
    the job reconciler's write clearing the reservation once the Job stopped (about 1.1 s
    later on the embedded cluster) is one more `!active` update, which requeues them again.
    The requeuer batches by a second (pkg/cache/queue/inadmissible_workloads.go
    requeueBatchPeriod): a second update after the first batch has them evaluated again,
    against what the first evaluation left (predicted here, and what the sim does); one
    within the first batch (a loaded machine) has them evaluated once. A workload still
    pending whose message changed carries the one evaluation's message as `message_race`;
    only while the second evaluation admits nothing new (the same room: it never should),
    else the outcome stays as predicted."""
    from harness.fit.cycle import Model  # cycle imports this module

    engine.settle()
    once = {n: o.message for n, o in engine.outcomes.items() if not o.admitted}
    taken = _taken(engine)
    engine.requeue_associated(name, cq)
    # Only the cycles of this requeue: a start timeout due runs out later (Engine.settle).
    Model.settle(engine)
    if _taken(engine) != taken:
        return
    for n, message in once.items():
        now = engine.outcomes.get(n)
        if now is not None and not now.admitted and now.message != message:
            engine.outcomes[n] = replace(now, message_race=message)


def _taken(engine: Engine) -> tuple[set[str], set[str]]:
    """The admitted workloads, and those holding quota (a reservation waiting for checks)."""
    admitted = {n for n, o in engine.outcomes.items() if o.admitted}
    return admitted, set(engine.snap.holding)


def run_due(engine: Engine) -> bool:
    """The first due start timeout of a workload still admitted runs out; False when none."""
    readiness = engine.readiness
    while readiness.due:
        name = readiness.due.pop(0)
        outcome = engine.outcomes.get(name)
        if outcome is not None and outcome.admitted and name in readiness.held:
            time_out(engine, name)
            return True
    return False


def deleted(engine: Engine, name: str) -> None:
    engine.readiness.held.discard(name)
    engine.readiness.requeues.pop(name, None)
