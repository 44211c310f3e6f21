"""The scheduler model: Kueue's scheduling cycles over several ClusterQueues (rules §3.2-3.4,
§6, §7: pkg/scheduler/scheduler.go schedule, nominate, getAssignments,
updateAssignmentForTAS, processEntry, fits, reserveCapacityForUnreclaimablePreempt,
requeueAndUpdate).

Per cycle: the head of every ClusterQueue is nominated against the same snapshot (flavor
assignment with the preemption oracle, the TAS step, victims when it needs preemption); the
entries are ordered (non-borrowing first, higher priority, earlier) and processed: admitted,
preempting, skipped (an earlier entry took the room or the victims), or pending. Victims are
released after the cycle (rules §6: evicted, then their quota and nodes free up, they are
requeued and their cohort's parked workloads flushed); the preemptor is admitted in a later
cycle. Cycles run until one changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field, replace

from harness.errors import HarnessError
from harness.fit import explain, fair_victims, fairshare
from harness.fit.admission_fs import QueueUsage
from harness.fit.amount import add, sub
from harness.fit.binding import Binder, Unplaceable
from harness.fit.checks import CheckStates, waiting_message
from harness.fit.flavors import (
    NO_FIT,
    PREEMPT,
    Assignment,
    assign_flavors,
    is_tas_flavor,
    requests_tas,
)
from harness.fit.pods_ready import PodsReadiness
from harness.fit.queueing import (
    FAILED_AFTER_NOMINATION,
    NO_CANDIDATES,
    PENDING_PREEMPTION,
    Pending,
    Queues,
    Scan,
    scheduling_hash,
)
from harness.fit.queueing import NO_FIT as REQUEUE_NO_FIT
from harness.fit.resource_transform import pod_quota, tas_view
from harness.fit.snapshot import Holding, Snapshot
from harness.fit.tas_step import (
    TasRequest,
    TasResult,
    fits_check,
    lowest_values,
    place_workload,
    usage_of,
)
from harness.fit.ties import Nondeterministic, TieBreak
from harness.fit.tree import LeafKey, Tree
from harness.fit.versions import RULES, KueueRules
from harness.fit.victims import Preemptor, Target, eviction_message, oracle
from harness.kueue.admission_checks import FAILED_CHECKS, flavors_of
from harness.kueue.admission_fair_sharing import NAMESPACE_MISMATCH
from harness.kueue.local_queue_stop import held as lq_held
from harness.kueue.local_queue_stop import inactive_message as lq_inactive_message
from harness.kueue.pods_ready import BLOCKED_MESSAGE
from harness.kueue.queue_activity import inactive_reason
from harness.kueue.quota_requests import pod_set_units
from harness.kueue.versions import DEFAULT_KUEUE
from harness.results.outcome import Outcome
from harness.scenario.model import (
    ClusterQueue,
    Scenario,
    Workload,
)

SKIPPED = "Workload no longer fits after processing another workload"
WAITING_FOR_PODS_READY = "WaitingForPodsReady"
"""Not a requeue reason: the scheduler holds the entry (waitForPodsReadyIfNeeded)."""
WRITE_REFUSED = "AdmissionWriteRefused"
"""Not a requeue reason: the API server refused the admission's status write; admit()'s
goroutine requeues it (FailedAfterNomination) once that answer comes back, after the next
cycle has taken its heads (`Model.in_flight`)."""
OVERLAPPING = "Workload has overlapping preemption targets with another workload"
NEVER_EVALUATED = Outcome(admitted=False, message="")
"""A workload Kueue never looked at (behind a StrictFIFO head): it has no status message."""
REST_BATCHES = 8
"""Requeue batches in a row that lead to no new state before a loop counts as rest (the
sim's restCycles)."""
MAX_CYCLES = 1_000
ORDER_STEP = 1_000
"""Room between two creations for evictions that happen between them (Engine.queue_order)."""

Note = Callable[[str, str], None]
"""--explain: (workload, line)."""


@dataclass
class Entry:
    """A nominated head (`entry`): its assignment, TAS requests and placement, victims."""

    pending: Pending
    cq: ClusterQueue
    assignment: Assignment
    tas: list[TasRequest] = field(default_factory=list)
    per_leaf: dict[str, dict[LeafKey, int]] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    # The TAS step's as-if-empty placement and the requests it placed: updateAssignmentForTAS
    # without targets places the same requests on the same snapshot (the victim search
    # between them restores every removal), so it is not run twice.
    empty: tuple[list[TasRequest], TasResult] | None = None

    @property
    def name(self) -> str:
        return self.pending.workload.name

    def message(self) -> str:
        return self.assignment.message([ps.name for ps in self.pending.workload.pod_sets])


class Model:
    """Kueue's scheduler, queues and cache for one scenario."""

    def __init__(
        self,
        scenario: Scenario,
        ties: TieBreak,
        note: Note | None,
        rules: KueueRules = RULES[DEFAULT_KUEUE],
    ) -> None:
        self.scenario = scenario
        self.rules = rules
        self.snap = Snapshot(scenario, rules.shares_usage(scenario))
        hashing = rules.gate(scenario, "SchedulingEquivalenceHashing")
        self.queues = Queues(scenario, hashing=hashing)
        self.afs = QueueUsage(scenario, rules.gate(scenario, "AdmissionFairSharing", True))
        self.queues.afs = self.afs
        self.afs.pick = ties.pick
        self.preserve_scan = rules.gate(scenario, "FlavorFungibilityPreserveScanProgress")
        self.ties = ties
        self.note = note
        self.fair = scenario.kueue_config.fair_sharing
        self.observe: Callable[[str, Tree], None] | None = None
        self.outcomes: dict[str, Outcome] = {}
        self.preempted: set[str] = set()
        self.cycle = 0
        self.in_flight: list[Pending] = []
        """Workloads whose admission write the API server refused, not yet requeued: on a
        real cluster its answer takes far longer than the scheduler takes to start the next
        cycle, so they sit that cycle out (the next workload of their queue is tried)."""
        self.generation = {cq.name: 0 for cq in scenario.cluster_queues}
        self.tick = 0
        submitted = [*scenario.workloads]
        submitted += [s.target for s in scenario.steps if isinstance(s.target, Workload)]
        names = [a.name for a in scenario.admitted] + [w.name for w in submitted]
        # Creation order, spaced so that an eviction between two creations can be ordered
        # between them (`queue_order`).
        self.created = {name: i * ORDER_STEP for i, name in enumerate(names)}
        self.queue_order: dict[str, int] = {}
        """GetQueueOrderTimestamp where it is not the creation: a workload evicted by an
        admission check (Evicted=True, reason AdmissionCheck) is ordered by its eviction
        time until it reserves quota again (Evicted then turns False)."""
        self.now = -ORDER_STEP
        """The latest creation or eviction time, in `created`'s units."""
        self.workloads: dict[str, Workload] = {w.name: w for w in submitted}
        self.nodes = {node.name: node for node in scenario.nodes}
        self.usage = list(scenario.usage)
        self.binder = Binder(scenario)
        self.checks = CheckStates(scenario)
        self.readiness = PodsReadiness(scenario)
        self.queues.inactive = {
            cq.name
            for cq in scenario.cluster_queues
            if inactive_reason(cq, scenario.admission_checks) is not None
        }
        self.snap.inactive = self.queues.inactive
        self.queues.stopped = {
            (lq.namespace, lq.name) for lq in scenario.queues() if lq_held(lq.stop_policy)
        }

    # -- the cache and kube-scheduler -----------------------------------------------------------

    def _hold(self, held: Holding) -> None:
        """The workload holds quota and TAS capacity; its pods are released and bound
        (harness.fit.binding: a node Kueue over-commits leaves some waiting)."""
        self.queue_order.pop(held.name, None)  # quota reserved: Evicted turns False
        self.snap.hold(held)
        w = self.workloads[held.name]
        outcome = self.outcomes.get(held.name)
        if outcome is not None and outcome.quota_reserved:
            return  # waiting for admission checks: its Job stays suspended, no pods
        self.binder.admit(w, self._released(w, held), held.per_leaf, self.nodes, self.usage)
        self._note_unschedulable(held.name)
        self.readiness.admitted(self, held.name)

    def _released(self, w: Workload, held: Holding) -> dict[str, str | None]:
        """The pod sets requesting TAS, whose pods the ungater releases -> their TAS flavor
        (None where none was assigned: its pods stay gated). Only those with a topology
        assignment: podset.go adds the TAS gate only with one, so the pods of a pod set
        admitted without (assignFlavors returned before the TAS step) are not gated."""
        cq = self.scenario.cluster_queue(held.cq)
        out: dict[str, str | None] = {}
        for ps in w.pod_sets:
            if requests_tas(cq, self.scenario, ps) and ps.name in held.per_leaf:
                names = held.flavors.get(ps.name, "").split(",")
                tas = [f for f in names if f and self._is_tas(f)]
                out[ps.name] = tas[0] if tas else None
        return out

    def _is_tas(self, flavor: str) -> bool:
        return is_tas_flavor(self.scenario, flavor)

    def _release(self, name: str) -> Holding | None:
        """The workload's quota, TAS capacity and pods go; waiting pods are tried again."""
        held = self.snap.release(name)
        self.readiness.released(name)
        self.binder.forget(name)
        self._rebind()
        if held is not None:
            # resetChecksOnEviction, then the checks of a workload without admission.
            self.checks.reset_on_eviction(name)
            self.checks.sync(name, self.scenario.cluster_queue(held.cq), None)
        return held

    def _rebind(self) -> None:
        for name, bound in self.binder.retry(self.nodes, self.usage).items():
            self._note_unschedulable(name, bound)

    def _note_unschedulable(self, name: str, bound: Unplaceable | None = None) -> None:
        outcome = self.outcomes.get(name)
        if outcome is not None and outcome.admitted:
            if bound is None:
                bound = self.binder.unplaceable(name)
            # Replaced only when it changed (in order too: the outcome's dicts are printed).
            if list(outcome.unschedulable.items()) != list(bound.counts.items()) or list(
                outcome.unschedulable_reasons.items()
            ) != list(bound.reasons.items()):
                self.outcomes[name] = replace(
                    outcome, unschedulable=bound.counts, unschedulable_reasons=bound.reasons
                )

    def _pending(self, w: Workload) -> Pending:
        priority = self.scenario.priority(w)
        order = self.queue_order.get(w.name, self.created[w.name])
        return Pending(w, priority, order, scheduling_hash(w, priority))

    def evicted_now(self, name: str) -> None:
        """An admission check evicted it: ordered by this moment from now on."""
        self.now += 1
        self.queue_order[name] = self.now

    def requeue_associated(self, name: str, cq: str) -> None:
        """`QueueAssociatedInadmissibleWorkloadsAfter` (a workload released or deleted): the
        parked workloads of its ClusterQueue's cohort are requeued, unless its LocalQueue is
        held: the queue manager no longer knows that LocalQueue and requeues nothing
        (pkg/cache/queue/manager.go)."""
        w = self.workloads.get(name)
        if w is not None and self.queues.local_queue(w) in self.queues.stopped:
            return
        self.queues.flush(self._cohort_of(cq))

    def _cohort_of(self, cq: str) -> list[str]:
        return self.snap.book.members(cq) or [cq]

    # -- settling -----------------------------------------------------------------------------

    def settle(self) -> None:
        """Cycles until one changes nothing; a state seen before whose outcomes differ along
        the way means Kueue's answer depends on when one looks (rules §8). The parked
        workloads a release requeues come back only then (`Queues.requested`)."""
        seen: dict[Hashable, int] = {}
        history: list[Hashable] = []
        ever: set[Hashable] = set()  # every state of this settle, across requeue batches
        batches = 0  # requeue batches taken in a row that led to no state not seen before
        for _ in range(MAX_CYCLES):
            if not any(self.queues.heap.values()):
                self._land_refused()  # Heads waits for them
            if not any(self.queues.heap.values()) or self.readiness.blocked is not None:
                self._land_refused()
                if self.queues.requeue_requested() and self.readiness.blocked is None:
                    continue
                return
            self.run_cycle()
            state = (
                self.queues.signature(),
                tuple(sorted(p.workload.name for p in self.in_flight)),
                tuple(sorted(self.snap.holding)),
                self._outcome_key(),
            )
            if state not in ever:
                ever.add(state)
                batches = 0
            if state in seen:
                loop = history[seen[state] :]
                if len({key[3] for key in loop if isinstance(key, tuple)}) > 1:
                    why = (
                        "the cycles repeat without settling (a StrictFIFO scan or a "
                        f"preemption cycle): messages keep changing{_alternating(loop)}"
                    )
                    extra = self.ties.loop_offset(len(loop), why, (state, self._placements()))
                    if extra is None:
                        raise Nondeterministic(f"{self.scenario.path}: {why}")
                    for _ in range(extra):
                        self.run_cycle()
                self._land_refused()
                # The batch comes about once a second while Kueue keeps cycling: a loop that
                # flushes the parked workloads on every turn (a preemption ping-pong) brings
                # them back forever; at rest once REST_BATCHES batches led nowhere new.
                if batches < REST_BATCHES and self.queues.requeue_requested():
                    batches += 1
                    seen.clear()
                    history.clear()
                    continue
                self._settle_phase(len(history) - seen[state])
                return
            seen[state] = len(history)
            history.append(state)
        raise HarnessError(f"{self.scenario.path}: no fixpoint after {MAX_CYCLES} cycles")

    def _placements(self) -> str:
        """Every held workload's leaves, as text (the state signature names only)."""
        return repr(
            sorted((n, sorted(map(repr, h.per_leaf.items()))) for n, h in self.snap.holding.items())
        )

    def _settle_phase(self, period: int) -> None:
        """Kueue retries a head every cycle (a StrictFIFO head, one with flavors left to
        scan) and its flavor scan goes round with `period` states (rules §4.5): which of
        them the next event meets is a matter of timing, so the replay takes the next."""
        if period > 1 and self.ties.pick(
            (False, True),
            f"cycle {self.cycle}: the heads retried every cycle go round {period} flavor "
            "scan states; the next event meets whichever one Kueue is at",
        ):
            self.run_cycle()

    def _land_refused(self) -> None:
        """The refused admissions' requeues come back (requeueAndUpdate: at once)."""
        for pending in self.in_flight:
            self.queues.requeue(pending, FAILED_AFTER_NOMINATION)
        self.in_flight = []

    def _outcome_key(self) -> Hashable:
        return tuple(
            (n, o.admitted, o.message, o.preempted, tuple(sorted(o.flavors.items())))
            for n, o in sorted(self.outcomes.items())
        )

    # -- one cycle ----------------------------------------------------------------------------

    def run_cycle(self) -> None:
        self.cycle += 1
        heads = self.queues.heads()
        self._land_refused()  # once this cycle has its heads
        failed = [p for p in heads if self.checks.failed(p.workload.name)]
        for pending in failed:  # nominate: "The workload has failed admission checks"
            self._pending_outcome(pending.workload.name, FAILED_CHECKS)
            self.queues.requeue(pending, "Generic")
        heads = [p for p in heads if p not in failed]
        for pending in [p for p in heads if not self._namespace_matches(p.workload)]:
            # nominate: ValidateAdmissibility's ErrNamespaceMismatch (workload/resources.go)
            mismatch = NAMESPACE_MISMATCH
            if not self.rules.namespace_mismatch_lowercase:
                mismatch = mismatch[0].upper() + mismatch[1:]
            self._pending_outcome(pending.workload.name, mismatch)
            self.queues.requeue(pending, "NamespaceMismatch")
            self.queues.mismatched.add(pending.workload.name)
            heads.remove(pending)
        self.snap.begin_cycle()
        entries = [self.nominate(p) for p in heads]
        entries.sort(
            # Borrows(): the borrowing height, compared as a number (cohort trees).
            key=lambda e: (e.assignment.borrow, -e.pending.priority, e.pending.created)
        )
        claimed: dict[str, Holding] = {}
        admitted: list[Holding] = []
        victims: list[tuple[Holding, Entry, str]] = []
        requeue: list[tuple[Entry, str]] = []
        written: list[Pending] = []
        for entry in self._in_order(entries):
            if self.readiness.blocked is not None:
                # Kueue's scheduler waits inside processEntry: the later entries of its cycle
                # stay popped, unevaluated and unwritten until the wait ends.
                self.readiness.blocked.later.append(entry.name)
                continue
            reason, message = self.process(entry, claimed, admitted, victims)
            if reason == WRITE_REFUSED:
                self.in_flight.append(entry.pending)
            elif reason and reason != WAITING_FOR_PODS_READY:
                requeue.append((entry, reason))
            if reason and message is not None:
                if self.outcomes.get(entry.name, NEVER_EVALUATED).message != message:
                    written.append(entry.pending)
                self._pending_outcome(entry.name, message)
            if self.note:
                said = "admitted" if not reason else message or "admission not written"
                self.note(entry.name, f"cycle {self.cycle}: {said}")
        for entry, reason in requeue:
            self.queues.requeue(entry.pending, reason)
        if not self.preserve_scan:
            # The status writes (requeueAndUpdate, after RequeueWorkload) reach the workload
            # controller's Update handler, which rebuilds the queue's Info without the scan
            # progress (manager.go AddOrUpdateWorkload: v0.18.2 :655, v0.17.1 :570; v0.19.2
            # carries it over only with the gate, :726). A write happens only when the
            # QuotaReserved condition changes (UnsetQuotaReservationWithCondition,
            # workload.go:741): a new message. The requeue above already chose heap or
            # inadmissible set with the progress.
            for pending in written:
                pending.scan = None
        self.snap.end_cycle()
        for held in admitted:
            self._hold(held)
            self.generation[held.cq] += 1
        for victim, entry, why in victims:
            self._evict(victim, entry, why)
        # The scheduler waits mid-cycle (waitForPodsReadyIfNeeded); a workload it admitted
        # earlier in this cycle was not ready only until its pods start: once they do, it
        # admits the waiting entry (they may as well stay not ready: checks, pods that never
        # run or never pass their probe).
        self.readiness.unblock(self)

    def _namespace_matches(self, w: Workload) -> bool:
        cq = self.scenario.cluster_queue(w.queue)
        return cq.namespace_selector.matches(self.scenario.namespace_labels(w.namespace))

    def _in_order(self, entries: list[Entry]) -> Iterator[Entry]:
        """`makeIterator`: the classical order (`entries` come sorted: non-borrowing first,
        higher priority, earlier), or with fair sharing the tournament of each cohort
        (harness.fit.fairshare), whose shares count the entries processed before."""
        if self.fair is None:
            yield from entries
            return

        def head(e: Entry) -> fairshare.Head:
            pending = e.pending
            return fairshare.Head(e.cq.name, e.assignment.usage, pending.priority, pending.created)

        def pick(roots: list[str]) -> str:
            return self.ties.pick(
                roots, f"cycle {self.cycle}: heads of {', '.join(roots)} are taken in Go map order"
            )

        yield from fairshare.iterate(self.snap.book, entries, head, pick)

    def _pending_outcome(self, name: str, message: str) -> None:
        self.outcomes[name] = Outcome(
            admitted=False,
            message=self.blocked_message(name, message),
            preempted=name in self.preempted,
        )

    def blocked_message(self, name: str, message: str) -> str:
        """The workload controller writes why a workload without quota waits over any other
        message while its LocalQueue is held (getQueueBlocker checks it first)."""
        w = self.workloads.get(name)
        if w is not None and self.queues.local_queue(w) in self.queues.stopped:
            return lq_inactive_message(w.queue_name)
        return message

    def nominate(self, pending: Pending, pinned: dict[str, dict[str, str]] | None = None) -> Entry:
        """`getAssignments`: flavors (asking the preemption oracle), the TAS step, victims if
        it needs preemption, and the TAS placement it would take (`updateAssignmentForTAS`)."""
        w = pending.workload
        cq = self.scenario.cluster_queue(w.queue)
        scan = pending.scan
        # lastAssignmentOutdated: the scan restarts when the ClusterQueue's allocatable
        # generation moved since it was made; with FlavorFungibilityPreserveScanProgress
        # (v0.19.2 scheduler.go:824-839) not when it was made in the previous cycle. Without
        # the gate (and before v0.19: flavorassigner.go:571-573 v0.18.2, :539-541 v0.17.1)
        # any admission or eviction in the cohort since restarts it.
        if (
            scan is not None
            and (not self.preserve_scan or self.cycle - scan.cycle > 1)
            and self.generation[cq.name] > scan.generation
        ):
            scan = None
        base = Preemptor(
            w.name,
            cq,
            pending.priority,
            pending.created,
            {},
            frozenset(),
            rules=self.rules,
            fair=self.fair,
        )
        a = assign_flavors(
            self.scenario,
            self.snap.book,
            w,
            start=scan.start() if scan is not None and pinned is None else None,
            oracle=lambda fr, v: oracle(
                self.snap, base, fr, v, self.ties, fair_victims.find_targets
            ),
            pinned=pinned,
            past_no_fit=self.rules.quota_reasons_past_no_fit,
            grouped_borrows=self.rules.grouped_pod_set_borrows_flavor,
            start_in_order=self.rules.scan_start_in_request_order,
            fair_sharing=self.fair is not None,
        )
        entry = Entry(pending, cq, a)
        self._tas_step(entry)
        if a.mode.visible == "Preempt":
            pre = Preemptor(
                w.name,
                cq,
                pending.priority,
                pending.created,
                total_requests(
                    self.scenario, w, a, with_pods=not self.rules.preemption_request_without_pods
                ),
                frozenset(a.needs_preemption()),
                tuple(entry.tas),
                self.rules,
                self.fair,
            )
            entry.targets = fair_victims.find_targets(self.snap, pre, self.ties)
            self._tas_for_preemption(entry)
        pending.scan = Scan(dict(a.tried), self.cycle, self.generation[cq.name])
        if self.note:
            for line in explain.nomination(self.scenario, w, a, entry.targets):
                self.note(w.name, line)
        return entry

    def _tas_requests(self, entry: Entry) -> list[TasRequest]:
        """`WorkloadsTopologyRequests`: pod sets requesting TAS, on their one TAS flavor."""
        a, cq, out = entry.assignment, entry.cq, []
        tas_flavors = {
            f.name
            for g in cq.resource_groups
            for f in g.flavors
            if is_tas_flavor(self.scenario, f.name)
        }
        for ps in entry.pending.workload.pod_sets:
            if not requests_tas(cq, self.scenario, ps):
                continue
            mine = sorted({f for f in a.flavors.get(ps.name, {}).values() if f in tas_flavors})
            problem = None
            if not tas_flavors:
                problem = "workload requires Topology, but there is no TAS cache information"
            elif not mine:
                problem = "no TAS flavor assigned"
            elif len(mine) > 1:
                problem = f"more than one TAS flavor assigned: {', '.join(mine)}"
            if problem is not None:
                a.fail(ps.name, problem, recompute=self.rules.tas_request_error_blocks)
                continue
            out.append(TasRequest(ps, mine[0]))
        return out

    def _tas_step(self, entry: Entry) -> None:
        """The tail of `assignFlavors` (rules §4.6): placement on the chosen flavors turns
        Fit into Preempt where it fails; a Preempt assignment must fit as if empty, else
        NoFit, and then all its TAS pod sets need preemption."""
        a = entry.assignment
        if a.mode.preemption == NO_FIT or a.before_tas:
            return
        a.forced = a.mode  # the `== NoFit` check above caches the representative mode
        entry.tas = self._tas_requests(entry)
        if a.mode.preemption == NO_FIT or not entry.tas:
            return
        if a.mode.visible == "Fit":
            observe = self._observer(entry.name)
            result = place_workload(self.snap.tas, entry.tas, rules=self.rules, observe=observe)
            if result.failures:
                ps, reason = self._failure(entry, result)
                a.reasons.setdefault(ps, []).append(reason)
                a.set_mode(ps, PREEMPT)
            else:
                entry.per_leaf = result.per_leaf
                return
        empty = place_workload(self.snap.tas, entry.tas, simulate_empty=True, rules=self.rules)
        entry.empty = (list(entry.tas), empty)
        if empty.failures:
            ps, _ = self._failure(entry, empty)
            a.set_mode(ps, NO_FIT)
            return
        for tr in entry.tas:
            a.set_mode(tr.pod_set.name, PREEMPT)

    def _observer(self, name: str) -> Callable[[str, Tree], None] | None:
        """--explain-domains: the free capacity per domain the placement saw."""
        observe = self.observe
        if observe is None:
            return None
        return lambda pod_set, tree: observe(f"{name}/{pod_set}", tree)

    def _failure(self, entry: Entry, result: TasResult) -> tuple[str, str]:
        """`TASAssignmentsResult.Failure`: one failing pod set, in Go map order (rules §8)."""
        per_flavor: dict[str, tuple[str, str]] = {}
        for ps, reason, flavor in result.failures:
            per_flavor.setdefault(flavor, (ps, reason))
        return self.ties.pick(
            list(per_flavor.values()),
            f"{entry.name}: TAS fails on pod sets of several flavors (Kueue names one at random)",
        )

    def _tas_for_preemption(self, entry: Entry) -> None:
        """`updateAssignmentForTAS`: the placement a Preempt entry would take, with its
        victims removed, or as if empty when it has none."""
        w, cq = entry.pending.workload, entry.cq
        tas_only = all(
            is_tas_flavor(self.scenario, f.name) for g in cq.resource_groups for f in g.flavors
        )
        if not (any(ps.topology is not None for ps in w.pod_sets) or tas_only):
            return
        entry.tas = self._tas_requests(entry)
        if not entry.targets and entry.empty is not None and entry.empty[0] == entry.tas:
            result = entry.empty[1]
        elif not entry.targets:
            result = place_workload(self.snap.tas, entry.tas, simulate_empty=True, rules=self.rules)
        else:
            for t in entry.targets:
                self.snap.remove(t.holding)
            result = place_workload(self.snap.tas, entry.tas, rules=self.rules)
            for t in entry.targets:
                self.snap.restore(t.holding)
        entry.per_leaf = result.per_leaf

    # -- processEntry -------------------------------------------------------------------------

    def _fits(self, entry: Entry, claimed: dict[str, Holding]) -> str:
        """`fits`: with every victim claimed so far and this entry's own removed, the
        entry's quota and TAS usage fit: "ok", "quota" or "tas"."""
        merged = dict(claimed)
        merged.update({t.holding.name: t.holding for t in entry.targets})
        for held in merged.values():
            self.snap.remove(held)
        book, cq = self.snap.book, entry.cq.name
        result = "ok"
        if any(book.available(cq, fr) < v for fr, v in entry.assignment.usage.items()):
            result = "quota"
        elif not self.snap.tas.domains_fit(
            fits_check(
                entry.tas, entry.per_leaf, self._slots(entry), tas_view(self.scenario, entry.cq)
            )
        ):
            result = "tas"
        for held in merged.values():
            self.snap.restore(held)
        return result

    def process(
        self,
        entry: Entry,
        claimed: dict[str, Holding],
        admitted: list[Holding],
        victims: list[tuple[Holding, Entry, str]],
    ) -> tuple[str, str | None]:
        """`processEntry`: (requeue reason, message: None when no status is written), or
        ("", "") when admitted."""
        check = self._fits(entry, claimed)
        recompute = self.rules.gate(self.scenario, "TASRecomputeAssignmentWithinSchedulingCycle")
        if check == "tas" and recompute:
            # TASRecomputeAssignmentWithinSchedulingCycle: assign again from the first
            # flavor, each pod set pinned to the flavors nominated (rules §3.4 step 1).
            pinned = {ps: dict(f) for ps, f in entry.assignment.flavors.items()}
            entry.pending.scan = None
            fresh = self.nominate(entry.pending, pinned)
            entry.assignment, entry.tas = fresh.assignment, fresh.tas
            entry.per_leaf, entry.targets = fresh.per_leaf, fresh.targets
            check = self._fits(entry, claimed)
        a, cq = entry.assignment, entry.cq
        mode = a.mode.visible
        view = tas_view(self.scenario, entry.cq)
        tas_usage = usage_of(entry.tas, entry.per_leaf, self._slots(entry), view)
        if mode == "NoFit":
            return REQUEUE_NO_FIT, entry.message()
        if mode == "Preempt" and not entry.targets:
            if cq.preemption.reclaim_within_cohort != "Any":
                self.snap.add_usage(cq.name, self._to_reserve(entry), tas_usage)
            return NO_CANDIDATES, entry.message()
        overlapping = any(t.holding.name in claimed for t in entry.targets)
        if overlapping or check != "ok":
            # markSkipped: the scan progress is kept with FlavorFungibilityPreserveScanProgress
            # (v0.19.2 scheduler.go:247-253); without it, and before v0.19 (v0.18.2
            # scheduler.go:228-232, v0.17.1 setSkipped :212-220), the next cycle starts over.
            if not self.preserve_scan:
                entry.pending.scan = None
            return FAILED_AFTER_NOMINATION, OVERLAPPING if overlapping else SKIPPED
        claimed.update({t.holding.name: t.holding for t in entry.targets})
        self.snap.add_usage(cq.name, a.usage, tas_usage)
        if mode == "Preempt":
            victims += [(t.holding, entry, t.reason) for t in entry.targets]
            entry.pending.scan = None
            message = entry.message() + (
                f". Pending the preemption of {len(entry.targets)} workload(s)"
            )
            return PENDING_PREEMPTION, message
        if any(not entry.per_leaf.get(tr.pod_set.name) for tr in entry.tas) or (
            len(a.resource_modes) < len(entry.pending.workload.pod_sets)
        ):
            # Kueue admits with a topology assignment holding no domain, or with fewer pod
            # set assignments than pod sets (assignFlavors returned early: `before_tas`
            # before the last group); the API server refuses that write (Workload CRD:
            # topologyAssignment.slices: Required value; "podSetAssignments must have the
            # same number of podSets as the spec"), the cache drops the workload and it is
            # requeued (at once, but after the next cycle took its heads: WRITE_REFUSED),
            # its status unwritten. Dropping it moves the ClusterQueue's
            # allocatable generation (cache deleteWorkload: v0.18.2 clusterqueue.go:509), so
            # a scan that restarts on that restarts here.
            self.generation[cq.name] += 1
            return WRITE_REFUSED, None
        if self.readiness.blocks(self, assumed=len(admitted)):
            # waitForPodsReadyIfNeeded: the status is written, then the loop waits.
            self.queues.delete(entry.name)
            self.readiness.block(entry, tas_usage)
            return WAITING_FOR_PODS_READY, BLOCKED_MESSAGE
        admitted.append(self._admit(entry, tas_usage))
        return "", ""

    def _slots(self, entry: Entry) -> int:
        return self.rules.pod_slots_held(entry.cq.group_of("pods") is not None)

    def _to_reserve(self, entry: Entry) -> dict[tuple[str, str], int]:
        """`quotaResourcesToReserve` of a Preempt entry without victims (rules §3.4 step 3)."""
        book, cq, out = self.snap.book, entry.cq.name, {}
        for fr, request in entry.assignment.usage.items():
            nominal, used = book.nominal(cq, fr), book.used(cq, fr)
            if entry.assignment.borrowing:
                limit = book.borrowing_limit(cq, fr)
                out[fr] = request if limit is None else min(request, sub(add(nominal, limit), used))
            else:
                out[fr] = max(0, min(request, sub(nominal, used)))
        return out

    def _admit(self, entry: Entry, tas_usage: dict[str, dict[LeafKey, dict[str, int]]]) -> Holding:
        a, w = entry.assignment, entry.pending.workload
        placement = {
            ps.name: lowest_values(entry.per_leaf[ps.name])
            for ps in w.pod_sets
            if ps.name in entry.per_leaf
        }
        flavors = {ps.name: a.pod_set_flavor(ps.name) for ps in w.pod_sets}
        self.queues.delete(w.name)
        self.afs.charge(w)
        # prepareWorkload admits at once when the checks listed are all Ready and include
        # every one the admission needs; else the workload controller syncs the list to those
        # (a check not needed is dropped) and admits when they are all Ready
        # (syncAdmissionCheckConditions, SyncAdmittedCondition). Either way it ends admitted
        # exactly when the needed checks are Ready: none for an admission on no flavor
        # (admissionChecksForAdmission intersects the checks' flavors with the admission's),
        # every one in v0.17.
        every = not self.rules.flavorless_admission_needs_no_checks
        self.checks.sync(w.name, entry.cq, flavors_of(flavors), every)
        ready = self.checks.all_ready(w.name)
        self.outcomes[w.name] = Outcome(
            admitted=ready,
            placement=placement,
            flavors=flavors,
            preempted=w.name in self.preempted,
            quota_reserved=not ready,
            message="" if ready else waiting_message(),
        )
        return Holding(
            name=w.name,
            cq=w.queue,
            priority=entry.pending.priority,
            created=self.created[w.name],
            reserved=self.tick,
            quota=dict(a.usage),
            frs=frozenset((f, r) for per in a.flavors.values() for r, f in per.items()),
            tas=tas_usage,
            flavors=flavors,
            placement=placement,
            per_leaf={ps: dict(leaves) for ps, leaves in entry.per_leaf.items()},
        )

    def _evict(self, victim: Holding, entry: Entry, reason: str) -> None:
        """Rules §6: the victim is evicted; once its job stops, its quota and nodes are
        released, it is requeued at once and its cohort's parked workloads are flushed."""
        if victim.name not in self.snap.holding:
            return
        self.preempted.add(victim.name)
        message = eviction_message(
            entry.name, reason, self.snap.book.tree, entry.cq.name, victim.cq
        )
        self._pending_outcome(victim.name, message)
        self._release(victim.name)
        self.generation[victim.cq] += 1
        self.queues.push(self._pending(self.workloads[victim.name]))
        self.requeue_associated(victim.name, victim.cq)


def total_requests(
    scenario: Scenario, w: Workload, a: Assignment, with_pods: bool = False
) -> dict[tuple[str, str], int]:
    """`TotalRequestsFor`: the quota a workload asks, per fr, without zeros; `pods` (on the
    flavor assigned to it) only `with_pods` (KueueRules.preemption_request_without_pods)."""
    out: dict[tuple[str, str], int] = {}
    for ps in w.pod_sets:
        pods_flavor = a.flavors.get(ps.name, {}).get("pods")
        quota = pod_quota(scenario, ps)
        if with_pods and pods_flavor is not None and "pods" not in quota:
            out[(pods_flavor, "pods")] = out.get((pods_flavor, "pods"), 0) + ps.count
        for r, q in quota.items():
            value = pod_set_units(r, q, ps.count)
            flavor = a.flavors.get(ps.name, {}).get(r)
            if value == 0 or flavor is None:
                continue
            out[(flavor, r)] = out.get((flavor, r), 0) + value
    return out


MODELLED_GATES = {
    "FairSharingPreemptWithinNominal": True,
    "FairSharingPrioritizeNonBorrowing": True,
    "FlavorFungibility": True,
    "FlavorFungibilityPreserveScanProgress": True,
    "PrioritySortingWithinCohort": True,
    "PrioritizePreemptorWorkloads": False,
    "RecomputeAssignmentUponPreemptionTargetsOverlap": False,
    "SchedulerTimestampPreemptionBuffer": False,
    "SchedulingEquivalenceHashing": True,
    "TASHandleOverlappingFlavors": True,
    "TASRecomputeAssignmentWithinSchedulingCycle": True,
}
"""Gates whose v0.19.2 default this driver builds in (rules §0); another value is refused,
except where the driver follows the gate (MODELLED_EITHER_WAY: older versions' defaults)."""

MODELLED_EITHER_WAY = (
    "SchedulingEquivalenceHashing",
    "TASRecomputeAssignmentWithinSchedulingCycle",
    "FlavorFungibilityPreserveScanProgress",
    "TASHandleOverlappingFlavors",
)
"""Gates whose off value (an older version's default) is modelled: the driver reads them
(the last through KueueRules.shares_usage)."""


def _alternating(loop: list[Hashable]) -> str:
    """The first workload whose outcome differs within the repeating cycles, and how."""
    keys = [key[3] for key in loop if isinstance(key, tuple)]
    for i, entry in enumerate(keys[0] if keys else ()):
        seen = list(dict.fromkeys(k[i] for k in keys))
        if len(seen) > 1:
            return f": {entry[0]}: " + " | ".join(repr(s[1:]) for s in seen)
    return ""
