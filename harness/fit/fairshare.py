"""Kueue v0.19.2's fair sharing: a ClusterQueue's dominant resource share and the order in
which a scheduling cycle takes its heads when `kueueConfig.fairSharing` is set
(pkg/cache/scheduler/fair_sharing.go dominantResourceShare, CompareDRS;
pkg/scheduler/fair_sharing_iterator.go).

Cohorts are flat here (a cohort is the root of its ClusterQueues): the share of a
ClusterQueue is what it borrows beyond its nominal quota, per resource summed over flavors,
over what the cohort can lend of that resource (x1000), divided by its weight.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from harness.fit.cohort import FlavorResource, QuotaBook

DEFAULT_WEIGHT = 1.0
T = TypeVar("T")


@dataclass(frozen=True)
class Share:
    """`DRS`: the unweighted ratio of the dominant resource, the weight, and the fr borrowed."""

    ratio: float = 0.0
    weight: float = DEFAULT_WEIGHT
    borrowed: frozenset[FlavorResource] = frozenset()

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    def weighted(self) -> float:
        """`PreciseWeightedShare`: 0 when nothing is borrowed, +inf on a weight of 0."""
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        """`IsBorrowingOn`: it borrows an fr the workload requests."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE = Share(ratio=-1.0)
"""`NegativeDRS`: below every share, the start of a search for the highest."""


def compare(a: Share, b: Share) -> int:
    """`CompareDRS`: -1, 0 or 1; borrowing on a weight of 0 ranks above everything else."""
    if a.zero_weight_borrows() and b.zero_weight_borrows():
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows():
        return 1
    if b.zero_weight_borrows():
        return -1
    x, y = a.weighted(), b.weighted()
    return (x > y) - (x < y)


def weight_of(book: QuotaBook, cq: str) -> float:
    weight = book.queues[cq].fair_weight
    return DEFAULT_WEIGHT if weight is None else float(weight)


def _cohort_frs(book: QuotaBook, members: list[str]) -> set[FlavorResource]:
    return {
        (f.name, q.name)
        for member in members
        for g in book.queues[member].resource_groups
        for f in g.flavors
        for q in f.resources
    }


def share(book: QuotaBook, cq: str, extra: Mapping[FlavorResource, int] | None = None) -> Share:
    """`dominantResourceShare` of a ClusterQueue with `extra` usage added; 0 outside a
    cohort. Lendable per resource: what the cohort root holds of it, over all flavors
    (`calculateLendable`: the root's potentialAvailable)."""
    weight = weight_of(book, cq)
    members = book.members(cq)
    if not members:
        return Share(weight=weight)
    extra = extra or {}
    borrowed: dict[str, int] = {}
    frs: list[FlavorResource] = []
    for g in book.queues[cq].resource_groups:
        for f in g.flavors:
            for q in f.resources:
                fr = (f.name, q.name)
                over = extra.get(fr, 0) + book.used(cq, fr) - book.nominal(cq, fr)
                if over > 0:
                    borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
                    frs.append(fr)
    if not borrowed:
        return Share(weight=weight)
    lendable: dict[str, int] = {}
    for fr in _cohort_frs(book, members):
        lendable[fr[1]] = lendable.get(fr[1], 0) + sum(book.lendable(m, fr) for m in members)
    ratio = 0.0
    for resource in sorted(borrowed):
        if lendable.get(resource, 0) > 0:
            ratio = max(ratio, borrowed[resource] * 1000.0 / lendable[resource])
    return Share(ratio=ratio, weight=weight, borrowed=frozenset(frs))


@dataclass(frozen=True)
class Head:
    """What the tournament reads of a nominated head."""

    cq: str
    usage: Mapping[FlavorResource, int]
    priority: int
    created: int


def winner(book: QuotaBook, heads: list[Head]) -> Head:
    """`runTournament` over the heads of one flat cohort: not borrowing on what it requests
    first (FairSharingPrioritizeNonBorrowing, on by default), then the lowest share with the
    head's usage added, then the higher priority (PrioritySortingWithinCohort), then the
    earlier queue time."""

    def key(h: Head) -> tuple[bool, Share, int, int]:
        s = share(book, h.cq, h.usage)
        return (s.borrowing_on(h.usage), s, -h.priority, h.created)

    best, best_key = heads[0], key(heads[0])
    for h in heads[1:]:
        k = key(h)
        if _less(k, best_key):
            best, best_key = h, k
    return best


def _less(a: tuple[bool, Share, int, int], b: tuple[bool, Share, int, int]) -> bool:
    if a[0] != b[0]:
        return not a[0]
    if (c := compare(a[1], b[1])) != 0:
        return c < 0
    return (a[2], a[3]) < (b[2], b[3])


def root_of(book: QuotaBook, cq: str) -> str:
    """The root a ClusterQueue's heads compete under: its cohort, or itself."""
    members = book.members(cq)
    return "cohort of " + ", ".join(sorted(members)) if members else f"ClusterQueue {cq}"


def iterate(
    book: QuotaBook,
    entries: list[T],
    head: Callable[[T], Head],
    pick: Callable[[list[str]], str],
) -> Iterator[T]:
    """`fairSharingIterator`: Kueue takes a ClusterQueue in Go map order (`pick` chooses the
    root among those left), then the tournament winner of its root. Shares are computed at
    each step, so an entry processed earlier in the cycle counts in the next one's."""
    left = list(entries)
    while left:
        roots = list(dict.fromkeys(root_of(book, head(e).cq) for e in left))
        chosen = pick(roots) if len(roots) > 1 else roots[0]
        mine = [e for e in left if root_of(book, head(e).cq) == chosen]
        heads = [head(e) for e in mine]
        best = winner(book, heads)
        entry = mine[heads.index(best)]
        left.remove(entry)
        yield entry
