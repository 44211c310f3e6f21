"""Kueue v0.19.2's classical preemption: which admitted workloads a preemptor evicts
(rules §5: pkg/scheduler/preemption/preemption.go classicalPreemptions, workloadFits,
fillBackWorkloads; classical/candidate_generator.go, hierarchical_preemption.go;
common/ordering.go CandidatesOrdering, common/preemption_policy.go; preemption_oracle.go).

Candidates are removed from the snapshot one by one (quota and TAS usage) until the
preemptor fits in quota and topology, then added back from the second-to-last down while
it still fits. Removals and re-adds are deltas on the snapshot, restored before returning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from harness.fit.cohort import FlavorResource
from harness.fit.cohort_tree import CQ, CohortTree, Node
from harness.fit.flavors import NO_CANDIDATES, PREEMPT, RECLAIM, Mode
from harness.fit.snapshot import Holding, Snapshot
from harness.fit.tas_step import PodCounter, TasRequest, place_workload
from harness.fit.ties import TieBreak
from harness.fit.versions import RULES, KueueRules
from harness.kueue.versions import DEFAULT_KUEUE
from harness.scenario.model import ClusterQueue

IN_CLUSTER_QUEUE = "InClusterQueue"
RECLAMATION = "InCohortReclamation"
RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
FAIR_SHARING = "InCohortFairSharing"
HUMAN_REASONS = {
    FAIR_SHARING: "Fair Sharing within the cohort",
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    RECLAMATION: "reclamation within the cohort",
    RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

# Kueue's preemptionVariant (classical/hierarchical_preemption.go).
WITHIN_CQ, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING = range(4)
_REASON = {
    WITHIN_CQ: IN_CLUSTER_QUEUE,
    HIERARCHICAL: RECLAMATION,
    WITHOUT_BORROWING: RECLAMATION,
    WHILE_BORROWING: RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True)
class Preemptor:
    """The workload looking for room: `requests` its quota (TotalRequestsFor: no `pods`, no
    zero amounts), `need` the fr whose mode is Preempt, `tas` its TAS requests (none in the
    oracle)."""

    name: str
    cq: ClusterQueue
    priority: int
    created: int
    requests: dict[FlavorResource, int]
    need: frozenset[FlavorResource]
    tas: tuple[TasRequest, ...] = ()
    rules: KueueRules = RULES[DEFAULT_KUEUE]
    """The version's rules the TAS check of each candidate set places with (workloadFits ->
    FindTopologyAssignmentsForWorkload runs that version's placement)."""
    fair: tuple[str, ...] | None = None
    """kueueConfig.fairSharing's preemption strategies (None: fair sharing off)."""


@dataclass(frozen=True)
class Target:
    holding: Holding
    reason: str


@dataclass(frozen=True)
class _Candidate:
    holding: Holding
    variant: int
    lca: Node | None = None
    """The cohort whose subtree it was found in (the lowest common ancestor with the
    preemptor); validity is checked on the cohorts below it only."""


def satisfies(policy: str, pre: Preemptor, cand: Holding) -> bool:
    """`SatisfiesPreemptionPolicy` (SchedulerTimestampPreemptionBuffer off)."""
    if policy == "LowerPriority":
        return pre.priority > cand.priority
    if policy == "LowerOrNewerEqualPriority":
        newer = pre.priority == cand.priority and pre.created < cand.created
        return pre.priority > cand.priority or newer
    return policy == "Any"


def _variant(pre: Preemptor, cand: Holding, advantage: bool) -> int | None:
    """`classifyPreemptionVariant`; None: not a candidate."""
    if not cand.frs & pre.need:
        return None
    own = cand.cq == pre.cq.name
    policy = pre.cq.preemption
    if not satisfies(
        policy.within_cluster_queue if own else policy.reclaim_within_cohort, pre, cand
    ):
        return None
    if own:
        return WITHIN_CQ
    if advantage:
        return HIERARCHICAL
    if policy.borrow_within_cohort == "Never":
        return WITHOUT_BORROWING
    threshold = policy.max_priority_threshold
    if cand.priority >= pre.priority or (threshold is not None and cand.priority > threshold):
        return WITHOUT_BORROWING
    return WHILE_BORROWING


class Search:
    """One victim search on a snapshot (`classicalPreemptions`)."""

    def __init__(self, snap: Snapshot, pre: Preemptor, ties: TieBreak) -> None:
        self.snap, self.pre, self.ties = snap, pre, ties
        self.counter: PodCounter | None = None

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """The walk order (`NewCandidateIterator`: hierarchy candidates, then priority
        candidates, then the preemptor's own queue's), and whether there are other-queue /
        hierarchy candidates."""
        pre, snap = self.pre, self.snap
        cq = pre.cq
        same: list[_Candidate] = []
        if cq.preemption.within_cluster_queue != "Never":
            for held in snap.candidates_in(cq.name).values():
                if (v := _variant(pre, held, False)) is not None:
                    same.append(_Candidate(held, v))
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        if snap.book.has_cohort(cq.name) and cq.preemption.reclaim_within_cohort != "Never":
            self._reclaim_candidates(hierarchy, priority)
        walk = self._ordered(hierarchy) + self._ordered(priority) + self._ordered(same)
        return walk, bool(hierarchy or priority), bool(hierarchy)

    def _reclaim_candidates(self, hierarchy: list[_Candidate], priority: list[_Candidate]) -> None:
        """`collectCandidatesForHierarchicalReclaim`: walk up from the preemptor's cohort;
        once a subtree on the way holds the request, the preemptor has the advantage over
        every workload using quota of that subtree."""
        book = self.snap.book
        node = (CQ, self.pre.cq.name)
        advantage, remaining = book.quantities_fit(node, self.pre.requests)
        previous: Node | None = None
        for subtree_root in book.tree.ancestors(node):
            into = hierarchy if advantage else priority
            self._collect(subtree_root, subtree_root, previous, advantage, into)
            fits, remaining = book.quantities_fit(subtree_root, remaining)
            advantage = advantage or fits
            previous = subtree_root

    def _collect(
        self,
        current: Node,
        subtree_root: Node,
        skip: Node | None,
        advantage: bool,
        into: list[_Candidate],
    ) -> None:
        """`collectCandidatesInSubtree`: the workloads of queues beyond nominal, in cohorts
        beyond their subtree quota, leaving out the subtree already searched."""
        book, pre = self.snap.book, self.pre
        for child in book.tree.child_cohorts(current):
            if child != skip and not book.node_within_nominal(child, pre.need):
                self._collect(child, subtree_root, skip, advantage, into)
        for _, name in book.tree.child_queues(current):
            if name == pre.cq.name or book.within_nominal(name, pre.need):
                continue
            for held in self.snap.candidates_in(name).values():
                if (v := _variant(pre, held, advantage)) is not None:
                    into.append(_Candidate(held, v, subtree_root))

    def _ordered(self, items: list[_Candidate]) -> list[_Candidate]:
        """`CandidatesOrdering`: other ClusterQueues first, lower priority, newer reservation;
        then UID, which the model breaks by file order (rules §8)."""
        own = self.pre.cq.name
        return self.ties.sort(
            items,
            key=lambda c: (int(c.holding.cq == own), c.holding.priority, -c.holding.reserved),
            order=lambda c: c.holding.created,
            what=lambda tied: (
                "victim candidates "
                + ", ".join(c.holding.name for c in tied)
                + f" of {self.pre.name} are equal but for their UIDs"
            ),
        )

    def targets(self) -> list[Target]:
        try:
            return self._targets()
        finally:
            if self.counter is not None:
                self.counter.close()

    def _targets(self) -> list[Target]:
        walk, from_others, hierarchy = self.candidates()
        pre, book = self.pre, self.snap.book
        forbidden = pre.cq.preemption.borrow_within_cohort == "Never"
        if not from_others or (forbidden and not book.under_nominal(pre.cq.name, pre.need)):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            found = self._attempt(walk, allow_borrowing)
            if found:
                return found
        return []

    def _attempt(self, walk: list[_Candidate], allow_borrowing: bool) -> list[Target]:
        removed: list[_Candidate] = []
        found: list[_Candidate] = []
        for cand in walk:
            if not self._valid(cand, allow_borrowing):
                continue
            self.snap.remove(cand.holding)
            removed.append(cand)
            if self.fits(allow_borrowing):
                found = self._fill_back(removed, allow_borrowing)
                break
        for cand in found or removed:
            self.snap.restore(cand.holding)
        return [Target(c.holding, _REASON[c.variant]) for c in found]

    def _valid(self, cand: _Candidate, allow_borrowing: bool) -> bool:
        """`candidateIsValid`, on the snapshot as it is after the removals so far."""
        if cand.holding.cq == self.pre.cq.name:
            return True
        if allow_borrowing and cand.variant == WITHOUT_BORROWING:
            return False
        book = self.snap.book
        if book.within_nominal(cand.holding.cq, self.pre.need):
            return False
        for node in book.tree.ancestors((CQ, cand.holding.cq)):
            if node == cand.lca:
                break
            if book.node_within_nominal(node, self.pre.need):
                return False
        return True

    def fits(self, allow_borrowing: bool) -> bool:
        """`workloadFits`: quota first, then the TAS requests on the snapshot as it is."""
        pre, book = self.pre, self.snap.book
        for fr, value in pre.requests.items():
            if not allow_borrowing and book.borrowing_with(pre.cq.name, fr, value):
                return False
            if value > book.available(pre.cq.name, fr):
                return False
        if not pre.tas:
            return True
        # PodCounter sums clamped counts: not exact where v0.17.1 counts negative pods.
        if pre.rules.count_clamped_at_zero and PodCounter.exact_for(self.snap.tas, pre.tas):
            if self.counter is None:
                self.counter = PodCounter(self.snap.tas, pre.tas[0])
            return self.counter.fits()
        if self.snap.tas.surely_short(pre.tas):
            return False
        return not place_workload(self.snap.tas, list(pre.tas), rules=pre.rules).failures

    def _fill_back(self, targets: list[_Candidate], allow_borrowing: bool) -> list[_Candidate]:
        """`fillBackWorkloads`: from the second-to-last down, add back what is not needed
        (the last target moves into the freed slot, as Kueue's O(1) delete does)."""
        targets = list(targets)
        for i in range(len(targets) - 2, -1, -1):
            self.snap.restore(targets[i].holding)
            if self.fits(allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.snap.remove(targets[i].holding)
        return targets


def find_targets(snap: Snapshot, pre: Preemptor, ties: TieBreak) -> list[Target]:
    """`GetTargets`: the victims that make room for the preemptor, or none."""
    return Search(snap, pre, ties).targets()


Finder = Callable[[Snapshot, Preemptor, TieBreak], list[Target]]


def oracle(
    snap: Snapshot,
    pre: Preemptor,
    fr: FlavorResource,
    amount: int,
    ties: TieBreak,
    find: Finder = find_targets,
) -> Mode:
    """`SimulatePreemption` for one fr during flavor assignment: a search for that fr alone
    without TAS; the borrowing height is taken with the victims removed."""
    one = replace(pre, requests={fr: amount}, need=frozenset({fr}), tas=())
    targets = find(snap, one, ties)
    book = snap.book
    if not targets:
        return Mode(NO_CANDIDATES, book.borrow_height(pre.cq.name, fr, amount))
    for t in targets:
        snap.remove(t.holding)
    borrow = book.borrow_height(pre.cq.name, fr, amount)
    for t in targets:
        snap.restore(t.holding)
    own = any(t.holding.cq == pre.cq.name for t in targets)
    return Mode(PREEMPT if own else RECLAIM, borrow)


def eviction_message(
    preemptor: str, reason: str, tree: CohortTree, preemptor_cq: str, victim_cq: str
) -> str:
    """The victim's Evicted/QuotaReserved message (`preemptionMessage`). The UIDs are random
    on a cluster: the model names them by the preemptor's name, in angle brackets."""
    return (
        f"Preempted to accommodate a workload (UID: <uid of {preemptor}>, JobUID: "
        f"<job uid of {preemptor}>) due to {HUMAN_REASONS[reason]}; preemptor path: "
        f"{tree.path(preemptor_cq)}; preemptee path: {tree.path(victim_cq)}"
    )
