"""The workloads holding quota (Kueue's scheduler cache) and the per-cycle snapshot of their
usage (rules §2, §3.2 step 2, §6: pkg/cache/scheduler/cache.go, snapshot.go).

`hold`/`release` change the cache; between cycles that is all there is. During a cycle
`add_usage` changes only the snapshot and is undone by `end_cycle`, and `remove`/`restore`
are what the victim search and the fits check do to it and undo themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.fit.cohort import FlavorResource, QuotaBook
from harness.fit.tas_step import TasTrees, TasUsage
from harness.fit.tree import LeafKey
from harness.scenario.model import Node, Scenario, Usage


@dataclass
class Holding:
    """A workload holding quota: who it is (for victim choice), and what it holds.

    `created` orders queue-order timestamps (file order); `reserved` is when its quota was
    reserved, in Kueue's one-second steps (rules §8); `frs` the flavor-resources its
    admission names (WorkloadUsesResources)."""

    name: str
    cq: str
    priority: int
    created: int
    reserved: int
    quota: dict[FlavorResource, int]
    frs: frozenset[FlavorResource]
    tas: TasUsage = field(default_factory=dict)
    flavors: dict[str, str] = field(default_factory=dict)
    placement: dict[str, dict[str, int]] = field(default_factory=dict)
    per_leaf: dict[str, dict[LeafKey, int]] = field(default_factory=dict)
    """Its topology assignment: pod set -> leaf -> pods."""


class Snapshot:
    """Quota and TAS usage of the cache, and this cycle's changes on top of them."""

    def __init__(self, scenario: Scenario, share: bool = True) -> None:
        self.scenario = scenario
        self.share = share
        self.book = QuotaBook.of(scenario.cluster_queues, scenario.cohorts)
        self.tas = TasTrees(scenario, scenario.nodes, scenario.usage, share)
        self.holding: dict[str, Holding] = {}
        self.workloads: dict[str, dict[str, Holding]] = {}
        self.inactive: set[str] = set()
        """Inactive ClusterQueues: their quota and usage stay in the cohort, but Kueue's
        snapshot leaves the queues out (pkg/cache/scheduler/snapshot.go
        skipInactiveCQReason), so their workloads are never preemption candidates."""
        self._quota_journal: list[tuple[str, dict[FlavorResource, int], int]] | None = None

    def candidates_in(self, cq: str) -> dict[str, Holding]:
        """The workloads of `cq` a preemptor may consider: none in an inactive one."""
        return {} if cq in self.inactive else self.workloads.get(cq, {})

    # -- the cache ---------------------------------------------------------------------------

    def hold(self, held: Holding) -> None:
        self.holding[held.name] = held
        self.book.add(held.cq, held.quota)
        self.tas.add_cache(held.tas, 1)

    def release(self, name: str) -> Holding | None:
        held = self.holding.pop(name, None)
        if held is not None:
            self.book.add(held.cq, held.quota, -1)
            self.tas.add_cache(held.tas, -1)
        return held

    def rebuild_tas(self, nodes: Iterable[Node], usage: Iterable[Usage]) -> None:
        """Nodes or their non-TAS pods changed: new trees with the cache's usage (usage on a
        node that is no longer a leaf is not counted, as Kueue's snapshot skips it)."""
        self.tas = TasTrees(self.scenario, nodes, usage, self.share)
        for held in self.holding.values():
            self.tas.add_cache(held.tas, 1)

    # -- one cycle ---------------------------------------------------------------------------

    def begin_cycle(self) -> None:
        self.workloads = {}
        for held in self.holding.values():
            self.workloads.setdefault(held.cq, {})[held.name] = held
        self._quota_journal = []
        self.tas.begin_cycle()

    def end_cycle(self) -> None:
        for cq, amounts, sign in reversed(self._quota_journal or []):
            self.book.add(cq, amounts, -sign)
        self._quota_journal = None
        self.tas.end_cycle()

    def add_usage(
        self, cq: str, quota: Mapping[FlavorResource, int], tas: TasUsage, sign: int = 1
    ) -> None:
        """`ClusterQueueSnapshot.AddUsage`: lasts until the end of the cycle."""
        self.book.add(cq, quota, sign)
        if self._quota_journal is not None:
            self._quota_journal.append((cq, dict(quota), sign))
        self.tas.add_usage(tas, sign)

    def remove(self, held: Holding) -> None:
        """`Snapshot.RemoveWorkload` of a victim candidate (undone by `restore`)."""
        self.book.add(held.cq, held.quota, -1)
        saved, self.tas.journal = self.tas.journal, None
        self.tas.add_usage(held.tas, -1)
        self.tas.journal = saved

    def restore(self, held: Holding) -> None:
        self.book.add(held.cq, held.quota)
        saved, self.tas.journal = self.tas.journal, None
        self.tas.add_usage(held.tas, 1)
        self.tas.journal = saved
