"""Kueue v0.19.2's fair sharing: a ClusterQueue's dominant resource share and the order in
which a scheduling cycle takes its heads when `kueueConfig.fairSharing` is set
(pkg/cache/scheduler/fair_sharing.go dominantResourceShare, CompareDRS;
pkg/scheduler/fair_sharing_iterator.go).

Shares are per node of a cohort tree (a ClusterQueue or a Cohort): what the node's subtree
uses beyond its subtree quota, per resource summed over flavors, over what its parent could
lend of that resource (x1000), divided by the node's weight. A flat cohort is the tree of one
root.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from harness.fit.cohort import FlavorResource, QuotaBook
from harness.fit.cohort_tree import CQ, Node

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


def node_weight(book: QuotaBook, node: Node) -> float:
    """`fairWeight`: a ClusterQueue's or a Cohort's `fairSharing.weight`, default 1."""
    if node[0] == CQ:
        weight = book.queues[node[1]].fair_weight
    else:
        cohort = book.tree.cohorts.get(node[1])
        weight = None if cohort is None else cohort.fair_weight
    return DEFAULT_WEIGHT if weight is None else float(weight)


def _subtree_frs(book: QuotaBook, node: Node) -> set[FlavorResource]:
    """The keys of a node's `SubtreeQuota`: the frs of its own quota and its subtree's."""
    if node[0] == CQ:
        groups = book.queues[node[1]].resource_groups
    else:
        cohort = book.tree.cohorts.get(node[1])
        groups = () if cohort is None else cohort.resource_groups
    frs = {(f.name, q.name) for g in groups for f in g.flavors for q in f.resources}
    for child in book.tree.children.get(node, []):
        frs |= _subtree_frs(book, child)
    return frs


def node_share(book: QuotaBook, node: Node) -> Share:
    """`dominantResourceShare` of a ClusterQueue or Cohort (pkg/cache/scheduler/
    fair_sharing.go): 0 without a parent. Per fr of its subtree quota, borrowed = usage -
    subtree quota when > 0, summed per resource; over what its parent can lend of that
    resource (`calculateLendable`: potentialAvailable of the parent for every fr of the
    root's subtree quota), x1000; the largest ratio."""
    weight = node_weight(book, node)
    parent = book.tree.parent.get(node)
    if parent is None:
        return Share(weight=weight)
    borrowed: dict[str, int] = {}
    frs: list[FlavorResource] = []
    for fr in sorted(_subtree_frs(book, node)):
        over = book.node_usage(node, fr) - book.subtree_quota(node, fr)
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
            frs.append(fr)
    if not borrowed:
        return Share(weight=weight)
    lendable: dict[str, int] = {}
    for fr in _subtree_frs(book, book.tree.root(node)):
        lendable[fr[1]] = lendable.get(fr[1], 0) + book._potential(parent, fr)
    ratio = 0.0
    for resource in sorted(borrowed):
        if lendable.get(resource, 0) > 0:
            ratio = max(ratio, borrowed[resource] * 1000.0 / lendable[resource])
    return Share(ratio=ratio, weight=weight, borrowed=frozenset(frs))


def share(book: QuotaBook, cq: str, extra: Mapping[FlavorResource, int] | None = None) -> Share:
    """`dominantResourceShare` of a ClusterQueue with `extra` usage added (0 outside a
    cohort)."""
    return path_shares(book, cq, extra)[0]


def path_shares(
    book: QuotaBook, cq: str, extra: Mapping[FlavorResource, int] | None = None
) -> list[Share]:
    """The shares of a ClusterQueue and of each of its ancestors below the root, with
    `extra` usage added to the queue (`SimulateUsageAddition` bubbles it up)."""
    if extra:
        book.add(cq, extra)
    try:
        node: Node = (CQ, cq)
        out = [node_share(book, node)]
        for ancestor in book.tree.ancestors(node):
            if ancestor in book.tree.parent:
                out.append(node_share(book, ancestor))
        return out
    finally:
        if extra:
            book.add(cq, extra, -1)


@dataclass(frozen=True)
class Head:
    """What the tournament reads of a nominated head."""

    cq: str
    usage: Mapping[FlavorResource, int]
    priority: int
    created: int


_Key = tuple[bool, Share, int, int]


def winner(book: QuotaBook, heads: list[Head]) -> Head:
    """`runTournament` over a cohort tree: each cohort's winner is the best of its child
    cohorts' winners and its queues' heads, compared by the share of the child of that
    cohort on the head's path (its queue or a cohort), with the head's usage added
    (`computeDRS`): not borrowing on what it requests first (FairSharingPrioritizeNonBorrowing,
    on by default), then the lower share, then the higher priority
    (PrioritySortingWithinCohort), then the earlier queue time."""
    if not book.has_cohort(heads[0].cq):
        return heads[0]
    at: dict[int, dict[Node, _Key]] = {}
    for i, h in enumerate(heads):
        node: Node = (CQ, h.cq)
        keys: dict[Node, _Key] = {}
        shares = path_shares(book, h.cq, h.usage)
        for parent, s in zip(book.tree.ancestors(node), shares, strict=True):
            keys[parent] = (s.borrowing_on(h.usage), s, -h.priority, h.created)
        at[i] = keys
    by_cq = {h.cq: i for i, h in enumerate(heads)}

    def tournament(cohort: Node) -> int | None:
        found: list[int] = []
        for child in book.tree.child_cohorts(cohort):
            if (w := tournament(child)) is not None:
                found.append(w)
        for child in book.tree.child_queues(cohort):
            if child[1] in by_cq:
                found.append(by_cq[child[1]])
        if not found:
            return None
        best = found[0]
        for i in found[1:]:
            if _less(at[i][cohort], at[best][cohort]):
                best = i
        return best

    root = book.tree.root((CQ, heads[0].cq))
    best = tournament(root)
    return heads[0] if best is None else heads[best]


def _less(a: _Key, b: _Key) -> bool:
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
