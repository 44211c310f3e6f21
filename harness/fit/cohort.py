"""Kueue v0.19.2's quota arithmetic for ClusterQueues in cohort trees (rules §2:
pkg/cache/scheduler/resource_node.go, clusterqueue_snapshot.go, cohort_snapshot.go;
classical/hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits). A flat cohort is the
tree of one implicit root whose children are ClusterQueues.

Every node (ClusterQueue or Cohort) has, per fr, a subtree quota (its own nominal plus what
its children lend: their subtree quota minus their local quota) and a usage (a queue's
workloads; a cohort's children's usage beyond their local quota). Kueue keeps cohort usage
up to date incrementally (addUsage/removeUsage); recomputing it from the children gives the
same numbers for non-negative usage, so the book stores queue usage only.

A flavor-resource ("fr") is (flavor name, resource name); amounts are integers in Kueue's
units (harness.k8s.quantity.kueue_units). A node without quota for an fr has nominal 0.
Quotas are Kueue's Amounts (harness.fit.amount, v0.18+): one at or above the int64 limit is
Unlimited, and sums and differences of quotas follow Amount.Add / Amount.Sub.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.fit.amount import add, quota_amount, sub
from harness.fit.cohort_tree import COHORT, CQ, CohortTree, Node
from harness.scenario.model import ClusterQueue, Cohort, ResourceGroup, ResourceQuota

FlavorResource = tuple[str, str]
"""(flavor, resource)."""


def _quotas_of(groups: Iterable[ResourceGroup]) -> Iterable[tuple[FlavorResource, ResourceQuota]]:
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                yield (flavor.name, quota.name), quota


@dataclass
class QuotaBook:
    """Every node's quota per fr and the usage of the workloads holding quota."""

    queues: Mapping[str, ClusterQueue]
    cohorts: Iterable[Cohort] = ()
    usage: dict[str, dict[FlavorResource, int]] = field(default_factory=dict)
    tree: CohortTree = field(init=False)
    _quotas: dict[tuple[Node, FlavorResource], ResourceQuota] = field(
        init=False, default_factory=dict
    )
    _subtree: dict[tuple[Node, FlavorResource], int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.tree = CohortTree.of(self.queues.values(), self.cohorts)
        for cq in self.queues.values():
            for fr, quota in _quotas_of(cq.resource_groups):
                self._quotas[((CQ, cq.name), fr)] = quota
        for cohort in self.tree.cohorts.values():
            for fr, quota in _quotas_of(cohort.resource_groups):
                self._quotas[((COHORT, cohort.name), fr)] = quota

    @classmethod
    def of(cls, queues: Iterable[ClusterQueue], cohorts: Iterable[Cohort] = ()) -> QuotaBook:
        return cls({cq.name: cq for cq in queues}, tuple(cohorts))

    def add(self, cq: str, amounts: Mapping[FlavorResource, int], sign: int = 1) -> None:
        """Add (sign 1) or remove (sign -1) a workload's usage."""
        mine = self.usage.setdefault(cq, {})
        for fr, value in amounts.items():
            mine[fr] = mine.get(fr, 0) + sign * value

    def used(self, cq: str, fr: FlavorResource) -> int:
        return self.usage.get(cq, {}).get(fr, 0)

    # -- one node ----------------------------------------------------------------------------

    def _quota(self, node: Node, fr: FlavorResource) -> ResourceQuota | None:
        return self._quotas.get((node, fr))

    def _limit(self, node: Node, fr: FlavorResource, which: str) -> int | None:
        quota = self._quota(node, fr)
        value = None if quota is None else getattr(quota, which)
        return None if value is None else quota_amount(fr[1], value)

    def node_nominal(self, node: Node, fr: FlavorResource) -> int:
        quota = self._quota(node, fr)
        return 0 if quota is None else quota_amount(fr[1], quota.nominal)

    def subtree_quota(self, node: Node, fr: FlavorResource) -> int:
        """`SubtreeQuota`: own nominal plus what each child lends (static: cached)."""
        key = (node, fr)
        if key not in self._subtree:
            total = self.node_nominal(node, fr)
            for child in self.tree.children.get(node, []):
                total = add(total, sub(self.subtree_quota(child, fr), self.node_local(child, fr)))
            self._subtree[key] = total
        return self._subtree[key]

    def node_local(self, node: Node, fr: FlavorResource) -> int:
        """`localQuota`: subtree quota minus lendingLimit when one is set, else 0."""
        lending = self._limit(node, fr, "lending_limit")
        if lending is None:
            return 0
        return max(0, sub(self.subtree_quota(node, fr), lending))

    def node_usage(self, node: Node, fr: FlavorResource) -> int:
        """A queue's usage; a cohort's children's usage beyond their local quota."""
        if node[0] == CQ:
            return self.used(node[1], fr)
        total = 0
        for child in self.tree.children.get(node, []):
            total = add(total, max(0, sub(self.node_usage(child, fr), self.node_local(child, fr))))
        return total

    def local_available(self, node: Node, fr: FlavorResource) -> int:
        """`LocalAvailable`: the unused part of the node's local quota."""
        return max(0, sub(self.node_local(node, fr), self.node_usage(node, fr)))

    def _available(self, node: Node, fr: FlavorResource) -> int:
        """`available` (resource_node.go), not clamped: negative when in debt."""
        parent = self.tree.parent.get(node)
        if parent is None:
            return sub(self.subtree_quota(node, fr), self.node_usage(node, fr))
        from_parent = self._available(parent, fr)
        limit = self._limit(node, fr, "borrowing_limit")
        if limit is not None:
            local = self.node_local(node, fr)
            stored = sub(self.subtree_quota(node, fr), local)
            used_in_parent = max(0, sub(self.node_usage(node, fr), local))
            from_parent = min(add(sub(stored, used_in_parent), limit), from_parent)
        return add(self.local_available(node, fr), from_parent)

    def _potential(self, node: Node, fr: FlavorResource) -> int:
        parent = self.tree.parent.get(node)
        if parent is None:
            return self.subtree_quota(node, fr)
        total = add(self.node_local(node, fr), self._potential(parent, fr))
        limit = self._limit(node, fr, "borrowing_limit")
        return total if limit is None else min(total, add(self.subtree_quota(node, fr), limit))

    def node_borrowing_with(self, node: Node, fr: FlavorResource, value: int) -> bool:
        """`CohortSnapshot.BorrowingWith`: usage plus value beyond the subtree quota."""
        return self.subtree_quota(node, fr) < add(self.node_usage(node, fr), value)

    def node_within_nominal(self, node: Node, frs: Iterable[FlavorResource]) -> bool:
        """`IsWithinNominalInResources`: usage at most the subtree quota for every fr."""
        return all(self.node_usage(node, fr) <= self.subtree_quota(node, fr) for fr in frs)

    def quantities_fit(
        self, node: Node, requests: Mapping[FlavorResource, int]
    ) -> tuple[bool, dict[FlavorResource, int]]:
        """`QuantitiesFitInQuota`: whether every request fits in the node's subtree quota,
        and what is left of each request after the node's unused local quota."""
        fits = all(
            self.subtree_quota(node, fr) >= add(self.node_usage(node, fr), v)
            for fr, v in requests.items()
        )
        remaining = {
            fr: max(0, sub(v, self.local_available(node, fr))) for fr, v in requests.items()
        }
        return fits, remaining

    # -- a ClusterQueue ----------------------------------------------------------------------

    def nominal(self, cq: str, fr: FlavorResource) -> int:
        return self.node_nominal((CQ, cq), fr)

    def borrowing_limit(self, cq: str, fr: FlavorResource) -> int | None:
        return self._limit((CQ, cq), fr, "borrowing_limit")

    def local(self, cq: str, fr: FlavorResource) -> int:
        """Quota never lent: nominal - lendingLimit when a lendingLimit is set, else 0."""
        return self.node_local((CQ, cq), fr)

    def lendable(self, cq: str, fr: FlavorResource) -> int:
        return sub(self.nominal(cq, fr), self.local(cq, fr))

    def has_cohort(self, cq: str) -> bool:
        return (CQ, cq) in self.tree.parent

    def members(self, cq: str) -> list[str]:
        """The ClusterQueues of the cohort tree of `cq` (itself included; Kueue flushes a
        root cohort's whole subtree); empty without a cohort."""
        if not self.has_cohort(cq):
            return []
        return self.tree.queues_under(self.tree.root((CQ, cq)))

    def available(self, cq: str, fr: FlavorResource) -> int:
        """`ClusterQueueSnapshot.Available`: what a new workload may still take of fr."""
        return max(0, self._available((CQ, cq), fr))

    def potential(self, cq: str, fr: FlavorResource) -> int:
        """`PotentialAvailable`: the most fr the ClusterQueue could hold with nothing else
        running (the "maximum capacity" of Kueue's insufficient-quota message)."""
        return self._potential((CQ, cq), fr)

    def borrowing_with(self, cq: str, fr: FlavorResource, value: int) -> bool:
        """Whether holding `value` more of fr takes the ClusterQueue beyond its nominal."""
        return self.nominal(cq, fr) < add(self.used(cq, fr), value)

    def lowest_fitting_subtree(self, cq: str, fr: FlavorResource, value: int) -> tuple[int, bool]:
        """`FindHeightOfLowestSubtreeThatFits`: the height of the lowest cohort whose
        subtree holds `value` more of fr (the root's when none does), and whether that
        cohort is below the root ("may reclaim in hierarchy")."""
        node = (CQ, cq)
        if not self.borrowing_with(cq, fr, value) or not self.has_cohort(cq):
            return 0, self.has_cohort(cq)
        remaining = sub(value, self.local_available(node, fr))
        for ancestor in self.tree.ancestors(node):
            if not self.node_borrowing_with(ancestor, fr, remaining):
                return self.tree.height(ancestor), ancestor in self.tree.parent
            remaining = sub(remaining, self.local_available(ancestor, fr))
        return self.tree.height(self.tree.root(node)), False

    def borrow_height(self, cq: str, fr: FlavorResource, value: int) -> int:
        """Rules §2.4: how far up the tree holding `value` more of fr borrows."""
        return self.lowest_fitting_subtree(cq, fr, value)[0]

    def within_nominal(self, cq: str, frs: Iterable[FlavorResource]) -> bool:
        """`IsWithinNominalInResources`: usage at most nominal for every fr."""
        return all(self.used(cq, fr) <= self.nominal(cq, fr) for fr in frs)

    def under_nominal(self, cq: str, frs: Iterable[FlavorResource]) -> bool:
        """Usage strictly below nominal for every fr
        (`queueUnderNominalInResourcesNeedingPreemption`)."""
        return all(self.used(cq, fr) < self.nominal(cq, fr) for fr in frs)
