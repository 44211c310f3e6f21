"""Kueue v0.19.2's fair-sharing preemption: which admitted workloads a preemptor evicts when
`kueueConfig.fairSharing` is set (pkg/scheduler/preemption/preemption.go fairPreemptions,
runFirstFsStrategy, runSecondFsStrategy; fairsharing/ordering.go, target.go, strategy.go).

The preemptor's usage is added to its ClusterQueue first (shares are taken with it). Target
ClusterQueues are visited highest share first; a candidate of another ClusterQueue is taken
when the first strategy holds for it (LessThanOrEqualToFinalShare: the preemptor's new share
at most the target's share without the candidate; LessThanInitialShare: strictly below the
target's share before), after which the target is chosen again. What the first strategy
passed over is tried once per ClusterQueue with LessThanInitialShare when that is the second
strategy. With FairSharingPreemptWithinNominal (on by default) a preemptor within its nominal
quota on the resources it needs takes other ClusterQueues' candidates without a strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import UnsupportedVersionError
from harness.fit import fairshare, victims
from harness.fit.cohort_tree import COHORT, CQ, Node
from harness.fit.fairshare import Share
from harness.fit.snapshot import Holding, Snapshot
from harness.fit.ties import TieBreak
from harness.fit.victims import (
    FAIR_SHARING,
    IN_CLUSTER_QUEUE,
    RECLAMATION,
    Preemptor,
    Search,
    Target,
    _Candidate,
    satisfies,
)
from harness.scenario.kueue_config import LESS_THAN_INITIAL_SHARE


@dataclass
class _Ordering:
    """`TargetClusterQueueOrdering` over the preemptor's cohort tree: candidates per
    ClusterQueue, in candidate order, and the ClusterQueues and Cohorts pruned."""

    search: Search
    per_cq: dict[str, list[Holding]]
    pruned: set[str] = field(default_factory=set)
    pruned_cohorts: set[str] = field(default_factory=set)
    done: bool = False

    def __post_init__(self) -> None:
        tree = self.search.snap.book.tree
        self.pre_node: Node = (CQ, self.search.pre.cq.name)
        self.pre_path = set(tree.ancestors(self.pre_node))

    def share(self, cq: str) -> Share:
        return fairshare.share(self.search.snap.book, cq)

    def next_target(self) -> str | None:
        """`Iter`: a preemptor without a cohort only targets its own queue; else
        `nextTarget` from the root until a ClusterQueue is found or the root is pruned."""
        tree = self.search.snap.book.tree
        pre = self.search.pre.cq.name
        if self.pre_node not in tree.parent:
            if pre in self.pruned or not self.per_cq.get(pre):
                self._end_without_cohort()
                return None
            return pre
        root = tree.root(self.pre_node)
        while root[1] not in self.pruned_cohorts:
            if (cq := self._next(root)) is not None:
                return cq
        self.done = True
        return None

    def _end_without_cohort(self) -> None:
        rules = self.search.pre.rules
        if not rules.cohortless_fair_ordering_ends:
            raise UnsupportedVersionError(
                f"kueue: {rules.version}: fair-sharing preemption for {self.search.pre.name} "
                f"takes every candidate of ClusterQueue {self.search.pre.cq.name}, which has "
                "no Cohort, without making room: Kueue then reads the missing Cohort and "
                "panics (fairsharing/ordering.go Iter, fixed in v0.18 by kueue#10891)"
            )
        self.done = True

    def _next(self, cohort: Node) -> str | None:
        """`nextTarget`: among the cohort's queues, the unpruned one of the highest share
        that has candidates and borrows (or is the preemptor's), equal shares by their
        first candidates; among its child Cohorts, the unpruned one of the highest share
        that borrows or is on the preemptor's path (equal shares: map order); descend into
        that Cohort when its share is at least the queue's."""
        book = self.search.snap.book
        pre = self.search.pre.cq.name
        best: str | None = None
        best_share = fairshare.NEGATIVE
        for node in book.tree.child_queues(cohort):
            cq = node[1]
            if cq in self.pruned:
                continue
            s = self.share(cq)
            if (not s.borrowing and cq != pre) or not self.per_cq.get(cq):
                self.pruned.add(cq)
                continue
            c = fairshare.compare(s, best_share)
            if c > 0 or (c == 0 and best is not None and self._first_before(cq, best)):
                best, best_share = cq, s
        tied: list[Node] = []
        cohort_share = fairshare.NEGATIVE
        for child in book.tree.child_cohorts(cohort):
            if child[1] in self.pruned_cohorts:
                continue
            s = fairshare.node_share(book, child)
            if not s.borrowing and child not in self.pre_path:
                self.pruned_cohorts.add(child[1])
                continue
            c = fairshare.compare(s, cohort_share)
            if c > 0:
                tied, cohort_share = [child], s
            elif c == 0:
                tied.append(child)
        if not tied and best is None:
            self.pruned_cohorts.add(cohort[1])
            return None
        if tied and fairshare.compare(cohort_share, best_share) >= 0:
            names = sorted(n for _, n in tied)
            chosen = self.search.ties.pick(
                names,
                f"Cohorts {', '.join(names)} have equal shares as preemption targets "
                "(Go map order)",
            )
            return self._next((COHORT, chosen))
        return best

    def _first_before(self, a: str, b: str) -> bool:
        ordered = self.search._ordered(
            [_Candidate(self.per_cq[a][0], 0), _Candidate(self.per_cq[b][0], 0)]
        )
        return ordered[0].holding is self.per_cq[a][0]

    def almost_lca(self, cq: str) -> Node:
        """`getAlmostLCA` of the target queue: its ancestor (or itself) just below the
        lowest Cohort it shares with the preemptor."""
        tree = self.search.snap.book.tree
        node: Node = (CQ, cq)
        for ancestor in tree.ancestors(node):
            if ancestor in self.pre_path:
                return node
            node = ancestor
        return node

    def preemptor_almost_lca(self, cq: str) -> Node:
        """The preemptor's node just below that same lowest common Cohort."""
        tree = self.search.snap.book.tree
        lca = tree.parent.get(self.almost_lca(cq))
        node = self.pre_node
        for ancestor in tree.ancestors(self.pre_node):
            if ancestor == lca:
                return node
            node = ancestor
        return node

    def shares(self, cq: str) -> tuple[Share, Share]:
        """`ComputeShares`: the preemptor's and the target's shares at the level where
        their paths meet."""
        book = self.search.snap.book
        if cq == self.search.pre.cq.name:
            s = fairshare.node_share(book, self.pre_node)
            return s, s
        return (
            fairshare.node_share(book, self.preemptor_almost_lca(cq)),
            fairshare.node_share(book, self.almost_lca(cq)),
        )


class FairSearch:
    """One `fairPreemptions` on a snapshot."""

    def __init__(self, search: Search, strategies: tuple[str, ...]) -> None:
        self.search, self.strategies = search, strategies
        self.pre = search.pre
        self.book = search.snap.book

    def candidates(self) -> list[Holding]:
        """`findCandidates`, in `CandidatesOrdering`."""
        pre, snap, book = self.pre, self.search.snap, self.book
        out: list[_Candidate] = []
        if pre.cq.preemption.within_cluster_queue != "Never":
            for held in snap.candidates_in(pre.cq.name).values():
                if held.frs & pre.need and satisfies(
                    pre.cq.preemption.within_cluster_queue, pre, held
                ):
                    out.append(_Candidate(held, 0))
        if pre.cq.cohort and pre.cq.preemption.reclaim_within_cohort != "Never":
            for other in book.members(pre.cq.name):
                borrowing = any(book.used(other, fr) > book.nominal(other, fr) for fr in pre.need)
                if other == pre.cq.name or not borrowing:
                    continue
                for held in snap.candidates_in(other).values():
                    if held.frs & pre.need and satisfies(
                        pre.cq.preemption.reclaim_within_cohort, pre, held
                    ):
                        out.append(_Candidate(held, 0))
        return [c.holding for c in self.search._ordered(out)]

    def _fits(self) -> bool:
        """`workloadFitsForFairSharing`: without the preemptor's simulated usage."""
        self.book.add(self.pre.cq.name, self.pre.requests, -1)
        try:
            return self.search.fits(True)
        finally:
            self.book.add(self.pre.cq.name, self.pre.requests)

    def _ordering(self, holdings: list[Holding]) -> _Ordering:
        per_cq: dict[str, list[Holding]] = {}
        for h in holdings:
            per_cq.setdefault(h.cq, []).append(h)
        return _Ordering(self.search, per_cq)

    def _take(self, held: Holding, reason: str, targets: list[Target]) -> bool:
        self.search.snap.remove(held)
        targets.append(Target(held, reason))
        return self._fits()

    def _share_without(self, held: Holding, node: Node) -> Share:
        """`ComputeTargetShareAfterRemoval`: the share of the target's node at the level
        where it meets the preemptor, without the candidate's usage."""
        self.book.add(held.cq, held.quota, -1)
        try:
            return fairshare.node_share(self.book, node)
        finally:
            self.book.add(held.cq, held.quota)

    def _first(self, candidates: list[Holding]) -> tuple[bool, list[Target], list[Holding]]:
        """`runFirstFsStrategy`."""
        pre = self.pre.cq.name
        ordering = self._ordering(candidates)
        targets: list[Target] = []
        retry: list[Holding] = []
        within = all(self.book.used(pre, fr) <= self.book.nominal(pre, fr) for fr in self.pre.need)
        while not ordering.done:
            cq = ordering.next_target()
            if cq is None:
                break
            queue = ordering.per_cq[cq]
            if cq == pre:
                if self._take(queue.pop(0), IN_CLUSTER_QUEUE, targets):
                    return True, targets, []
                continue
            if within:
                if self._take(queue.pop(0), RECLAMATION, targets):
                    return True, targets, []
                continue
            mine, old = ordering.shares(cq)
            if mine.weighted() == float("inf") and old.weighted() != float("inf"):
                retry += queue
                queue.clear()
                continue
            while queue:
                held = queue.pop(0)
                new = self._share_without(held, ordering.almost_lca(cq))
                if self._passes(self.strategies[0], mine, old, new):
                    if self._take(held, FAIR_SHARING, targets):
                        return True, targets, []
                    break
                retry.append(held)
        return False, targets, retry

    @staticmethod
    def _passes(strategy: str, mine: Share, old: Share, new: Share) -> bool:
        if strategy == LESS_THAN_INITIAL_SHARE:
            return fairshare.compare(mine, old) < 0
        return fairshare.compare(mine, new) <= 0

    def _second(self, retry: list[Holding], targets: list[Target]) -> bool:
        """`runSecondFsStrategy`: LessThanInitialShare, at most one candidate per
        ClusterQueue."""
        ordering = self._ordering(retry)
        while not ordering.done:
            cq = ordering.next_target()
            if cq is None:
                break
            mine, old = ordering.shares(cq)
            held = ordering.per_cq[cq].pop(0)
            if fairshare.compare(mine, old) < 0 and self._take(held, FAIR_SHARING, targets):
                return True
            ordering.pruned.add(cq)
        return False

    def targets(self) -> list[Target]:
        candidates = self.candidates()
        if not candidates:
            return []
        self.book.add(self.pre.cq.name, self.pre.requests)
        try:
            fits, targets, retry = self._first(candidates)
            if not fits and len(self.strategies) > 1:
                fits = self._second(retry, targets)
        finally:
            self.book.add(self.pre.cq.name, self.pre.requests, -1)
        if not fits:
            for t in targets:
                self.search.snap.restore(t.holding)
            return []
        kept = self._fill_back(targets)
        for t in kept:
            self.search.snap.restore(t.holding)
        return kept

    def _fill_back(self, targets: list[Target]) -> list[Target]:
        """`fillBackWorkloads` with borrowing allowed, as the classical search does it."""
        wrapped = [_Candidate(t.holding, i) for i, t in enumerate(targets)]
        kept = self.search._fill_back(wrapped, True)
        return [targets[c.variant] for c in kept]


def find_targets(snap: Snapshot, pre: Preemptor, ties: TieBreak) -> list[Target]:
    """`GetTargets`: fair-sharing preemption when the preemptor carries strategies, else the
    classical search."""
    if pre.fair is None:
        return victims.find_targets(snap, pre, ties)
    search = Search(snap, pre, ties)
    try:
        return FairSearch(search, pre.fair).targets()
    finally:
        if search.counter is not None:
            search.counter.close()
