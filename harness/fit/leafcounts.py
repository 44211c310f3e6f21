"""Phase 1's pod count per leaf for one request shape, kept between placements.

A replay places the same few shapes thousands of times on a tree of which only a few
leaves change in between; recounting every node for every placement (Kueue's
fillLeafCounts, placement.py `_fill_counts`) was most of its time. A `LeafCounts` keeps
each leaf's count of one shape and recounts only the leaves whose usage changed since it
last looked (`Tree.touched`, appended by TasTrees.add): the numbers of the full count,
computed less often. Used only where the count is per leaf alone: no leader, every
requested resource nonzero, no node filters, no replacement domain, no usage assumed by
the workload's earlier pod sets, and Kueue v0.19+ (missing resources count 0).
"""

from __future__ import annotations

from harness.fit.resources import MAX_INT32
from harness.fit.tree import Domain, Leaf, LeafKey, Tree

Shape = tuple[tuple[tuple[str, int], ...], bool, bool]
"""(resource, per-pod amount) asked, simulate_empty, unclamped (Algorithm.unclamped)."""


class LeafCounts:
    """Every leaf's pod count for one shape, the zero ones' limiting resource and message,
    and every inner domain's sum of them (its count when there is no leader)."""

    def __init__(self, tree: Tree, shape: Shape) -> None:
        self.asked, self.simulate_empty, self.unclamped = shape
        self.leaves = len(tree.leaves)
        self.domains: list[Domain] = [leaf.domain for leaf in tree.leaves.values()]
        self.domains += [d for level in tree.per_level[:-1] for d in level.values()]
        self.index = {key: i for i, key in enumerate(tree.leaves)}
        position = {id(d): i for i, d in enumerate(self.domains)}
        self.ancestors: list[list[int]] = []
        for leaf in tree.leaves.values():
            up, parent = [], leaf.domain.parent
            while parent is not None:
                up.append(position[id(parent)])
                parent = parent.parent
            self.ancestors.append(up)
        self.counts = [0] * len(self.domains)
        """Leaves first (tree.leaves order), then the inner domains: pods in each."""
        self.limiting: dict[LeafKey, str] = {}
        self.excluded: dict[LeafKey, str] = {}
        self.by_resource: dict[str, int] = {}
        self.seen = -1
        self.refresh(tree)

    def refresh(self, tree: Tree) -> None:
        """Recount the leaves changed since the last look (all of them after a long while)."""
        start = self.seen - tree.touched_base
        end = tree.touched_base + len(tree.touched)
        if self.seen < 0 or start < 0 or len(tree.touched) - start > self.leaves:
            keys = list(tree.leaves)
        else:
            keys = list(dict.fromkeys(tree.touched[start:]))
        leaves = tree.leaves
        for key in keys:
            self._count(key, leaves[key])
        self.seen = end

    def _count(self, key: LeafKey, leaf: Leaf) -> None:
        capacity, non_tas, tas = leaf.capacity, leaf.non_tas, leaf.tas
        pods, limiting = (MAX_INT32, "") if self.asked else (0, "")
        for r, v in self.asked:
            free = capacity.get(r, 0) - non_tas.get(r, 0)
            if not self.simulate_empty:
                free -= tas.get(r, 0)
            if free >= 0:
                count = min(free // v, MAX_INT32)
            else:  # v0.17.1 (`unclamped`): Go's division, truncated toward zero
                count = -(-free // v) if self.unclamped else 0
            if count < pods or (count == pods and (not limiting or r < limiting)):
                pods, limiting = count, r
        i = self.index[key]
        counts = self.counts
        delta = pods - counts[i]
        if delta:
            counts[i] = pods
            for a in self.ancestors[i]:
                counts[a] += delta
        old = self.limiting.pop(key, None)
        if old is not None:
            left = self.by_resource[old] - 1
            if left:
                self.by_resource[old] = left
            else:
                del self.by_resource[old]
            del self.excluded[key]
        if pods == 0 and limiting:
            self.limiting[key] = limiting
            self.by_resource[limiting] = self.by_resource.get(limiting, 0) + 1
            self.excluded[key] = f"no room for one pod: {limiting}"


def leaf_counts(tree: Tree, shape: Shape) -> LeafCounts:
    """The tree's current counts of `shape`, recounting only what changed."""
    counts = tree.counts_cache.get(shape)
    if counts is None:
        counts = tree.counts_cache[shape] = LeafCounts(tree, shape)
    else:
        counts.refresh(tree)
    return counts
