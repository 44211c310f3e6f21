"""Kueue v0.19.2's quota arithmetic for ClusterQueues in flat cohorts (rules §2:
pkg/cache/scheduler/resource_node.go, clusterqueue_snapshot.go, cohort_snapshot.go).

A flavor-resource ("fr") is (flavor name, resource name); amounts are integers in Kueue's
units (harness.k8s.quantity.kueue_units). A ClusterQueue without quota for an fr has nominal 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.k8s.quantity import kueue_units
from harness.scenario.model import ClusterQueue, ResourceQuota

FlavorResource = tuple[str, str]
"""(flavor, resource)."""


@dataclass
class QuotaBook:
    """Every ClusterQueue's quota per fr and the usage of the workloads holding quota."""

    queues: Mapping[str, ClusterQueue]
    usage: dict[str, dict[FlavorResource, int]] = field(default_factory=dict)
    _quotas: dict[tuple[str, FlavorResource], ResourceQuota] = field(
        init=False, default_factory=dict
    )
    _members: dict[str, list[str]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        for cq in self.queues.values():
            for group in cq.resource_groups:
                for flavor in group.flavors:
                    for quota in flavor.resources:
                        self._quotas[(cq.name, (flavor.name, quota.name))] = quota
        for name, cq in self.queues.items():
            cohort = cq.cohort
            self._members[name] = [
                n for n, q in self.queues.items() if cohort and q.cohort == cohort
            ]

    @classmethod
    def of(cls, queues: Iterable[ClusterQueue]) -> QuotaBook:
        return cls({cq.name: cq for cq in queues})

    def add(self, cq: str, amounts: Mapping[FlavorResource, int], sign: int = 1) -> None:
        """Add (sign 1) or remove (sign -1) a workload's usage."""
        mine = self.usage.setdefault(cq, {})
        for fr, value in amounts.items():
            mine[fr] = mine.get(fr, 0) + sign * value

    def used(self, cq: str, fr: FlavorResource) -> int:
        return self.usage.get(cq, {}).get(fr, 0)

    def _quota(self, cq: str, fr: FlavorResource) -> ResourceQuota | None:
        return self._quotas.get((cq, fr))

    def nominal(self, cq: str, fr: FlavorResource) -> int:
        quota = self._quota(cq, fr)
        return 0 if quota is None else kueue_units(fr[1], quota.nominal)

    def borrowing_limit(self, cq: str, fr: FlavorResource) -> int | None:
        quota = self._quota(cq, fr)
        if quota is None or quota.borrowing_limit is None:
            return None
        return kueue_units(fr[1], quota.borrowing_limit)

    def local(self, cq: str, fr: FlavorResource) -> int:
        """Quota never lent: nominal - lendingLimit when a lendingLimit is set, else 0."""
        quota = self._quota(cq, fr)
        if quota is None or quota.lending_limit is None:
            return 0
        return max(0, self.nominal(cq, fr) - kueue_units(fr[1], quota.lending_limit))

    def lendable(self, cq: str, fr: FlavorResource) -> int:
        return self.nominal(cq, fr) - self.local(cq, fr)

    def members(self, cq: str) -> list[str]:
        """The ClusterQueues of the cohort of `cq` (itself included); empty without a cohort."""
        return self._members[cq]

    def subtree(self, cq: str, fr: FlavorResource) -> int:
        """What the cohort of `cq` can lend of fr: the sum of its members' lendable quota."""
        return sum(self.lendable(m, fr) for m in self.members(cq))

    def cohort_used(self, cq: str, fr: FlavorResource) -> int:
        """What the members of the cohort of `cq` use beyond their local quota."""
        return sum(max(0, self.used(m, fr) - self.local(m, fr)) for m in self.members(cq))

    def available(self, cq: str, fr: FlavorResource) -> int:
        """`ClusterQueueSnapshot.Available`: what a new workload may still take of fr."""
        if not self.queues[cq].cohort:
            return max(0, self.nominal(cq, fr) - self.used(cq, fr))
        local_available = max(0, self.local(cq, fr) - self.used(cq, fr))
        parent = self.subtree(cq, fr) - self.cohort_used(cq, fr)
        limit = self.borrowing_limit(cq, fr)
        if limit is not None:
            own_lent = max(0, self.used(cq, fr) - self.local(cq, fr))
            parent = min(parent, self.lendable(cq, fr) - own_lent + limit)
        return max(0, local_available + parent)

    def potential(self, cq: str, fr: FlavorResource) -> int:
        """`PotentialAvailable`: the most fr the ClusterQueue could hold with nothing else
        running (the "maximum capacity" of Kueue's insufficient-quota message)."""
        if not self.queues[cq].cohort:
            return self.nominal(cq, fr)
        total = self.local(cq, fr) + self.subtree(cq, fr)
        limit = self.borrowing_limit(cq, fr)
        return total if limit is None else min(total, self.nominal(cq, fr) + limit)

    def borrowing_with(self, cq: str, fr: FlavorResource, value: int) -> bool:
        """Whether holding `value` more of fr takes the ClusterQueue beyond its nominal."""
        return self.nominal(cq, fr) < self.used(cq, fr) + value

    def borrow_height(self, cq: str, fr: FlavorResource, value: int) -> int:
        """Rules §2.4: 1 exactly when the ClusterQueue (in a cohort) would exceed nominal."""
        return int(bool(self.queues[cq].cohort) and self.borrowing_with(cq, fr, value))

    def within_nominal(self, cq: str, frs: Iterable[FlavorResource]) -> bool:
        """`IsWithinNominalInResources`: usage at most nominal for every fr."""
        return all(self.used(cq, fr) <= self.nominal(cq, fr) for fr in frs)

    def under_nominal(self, cq: str, frs: Iterable[FlavorResource]) -> bool:
        """Usage strictly below nominal for every fr
        (`queueUnderNominalInResourcesNeedingPreemption`)."""
        return all(self.used(cq, fr) < self.nominal(cq, fr) for fr in frs)

    def fits_in_nominal(self, cq: str, requests: Mapping[FlavorResource, int]) -> bool:
        """`QuantitiesFitInQuota` for a ClusterQueue: every request fits within nominal."""
        return all(self.used(cq, fr) + v <= self.nominal(cq, fr) for fr, v in requests.items())
