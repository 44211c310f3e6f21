"""Every TAS flavor's topology tree as Kueue's scheduling snapshot sees it, and the TAS step
of a workload across flavors (rules §4.6: pkg/cache/scheduler/snapshot.go Snapshot,
clusterqueue_snapshot.go FindTopologyAssignmentsForWorkload, tas_flavor_snapshot.go
FindTopologyAssignmentsForFlavor and Fits).

The trees are built once and then changed by deltas: usage added or removed on a leaf. Kueue
builds a hostname-level flavor's snapshot from the TAS usage of every flavor on that node
(TASHandleOverlappingFlavors), but a change made during a cycle reaches only the flavor it
was made on; `add_cache` is the first kind (between cycles), `add` the second. Before v0.18
(`share` off) each flavor counts only its own usage (KueueRules.overlapping_flavors_share_usage).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from harness.fit.placement import PlacementFailed, leaf_exclusion, place
from harness.fit.request import placed_pods, placement_request, pod_set_groups, with_pod
from harness.fit.resources import MAX_INT32, ResourceVector, add_into, count_in, from_quantities
from harness.fit.tree import LeafKey, Tree, build_tree
from harness.fit.versions import RULES, KueueRules
from harness.kueue.versions import DEFAULT_KUEUE
from harness.scenario.model import Node, PodSet, Scenario, Usage

TasUsage = dict[str, dict[LeafKey, ResourceVector]]
"""Flavor -> leaf -> usage (the per-pod requests times the pods, plus `pods`)."""


@dataclass(frozen=True)
class TasRequest:
    """One pod set placed by TAS on one flavor (`TASPodSetRequests`)."""

    pod_set: PodSet
    flavor: str


@dataclass
class TasResult:
    """Pods per leaf for every pod set placed, and the failures (pod set, reason, flavor):
    at most one group fails per flavor, as placement on a flavor stops at the first."""

    per_leaf: dict[str, dict[LeafKey, int]] = field(default_factory=dict)
    failures: list[tuple[str, str, str]] = field(default_factory=list)


class TasTrees:
    """The trees of every TAS flavor, their usage, and a journal of this cycle's changes."""

    def __init__(
        self, scenario: Scenario, nodes: Iterable[Node], usage: Iterable[Usage], share: bool = True
    ) -> None:
        self.scenario = scenario
        self.share = share
        self.trees: dict[str, Tree] = {}
        nodes, usage = list(nodes), list(usage)
        for flavor in scenario.resource_flavors:
            topology = scenario.topology_of(flavor)
            if topology is not None:
                self.trees[flavor.name] = build_tree(topology, flavor, nodes, usage, {})
        self.sharing: dict[LeafKey, list[str]] = {}
        for name, tree in self.trees.items():
            if tree.hostname_lowest and share:
                for key in tree.leaves:
                    self.sharing.setdefault(key, []).append(name)
        self.free: dict[str, ResourceVector] = {}
        for name, tree in self.trees.items():
            total: ResourceVector = {}
            for leaf in tree.leaves.values():
                for r, v in leaf.free().items():
                    if v > 0:
                        total[r] = total.get(r, 0) + v
            self.free[name] = total
        self.journal: list[tuple[str, LeafKey, ResourceVector, int]] | None = None
        self.counters: dict[str, list[PodCounter]] = {}

    def add(self, flavor: str, key: LeafKey, vector: Mapping[str, int], sign: int = 1) -> None:
        """Usage on one flavor's leaf, as the scheduling snapshot changes it in a cycle."""
        tree = self.trees.get(flavor)
        leaf = tree.leaves.get(key) if tree is not None else None
        if leaf is None:
            return
        free, capacity, non_tas, tas = self.free[flavor], leaf.capacity, leaf.non_tas, leaf.tas
        for r, v in vector.items():
            used = tas.get(r, 0)
            before = capacity.get(r, 0) - non_tas.get(r, 0) - used
            tas[r] = used + sign * v
            after = before - sign * v
            if before != after and (before > 0 or after > 0):
                free[r] = free.get(r, 0) + max(0, after) - max(0, before)
        assert tree is not None
        tree.touch(key)
        if self.journal is not None:
            self.journal.append((flavor, key, dict(vector), sign))
        if flavor in self.counters:
            for counter in self.counters[flavor]:
                counter.update(key)

    def add_usage(self, usage: Mapping[str, Mapping[LeafKey, ResourceVector]], sign: int) -> None:
        for flavor, per_leaf in usage.items():
            for key, vector in per_leaf.items():
                self.add(flavor, key, vector, sign)

    def add_cache(self, usage: Mapping[str, Mapping[LeafKey, ResourceVector]], sign: int) -> None:
        """A workload starts or stops holding TAS capacity in Kueue's cache: the next
        snapshot of its flavor, and of every hostname-level flavor on those nodes when they
        share usage, sees it."""
        saved, self.journal = self.journal, None
        for flavor, per_leaf in usage.items():
            for key, vector in per_leaf.items():
                for other in self.sharing.get(key, [flavor]):
                    self.add(other, key, vector, sign)
        self.journal = saved

    def begin_cycle(self) -> None:
        self.journal = []

    def end_cycle(self) -> None:
        """Forget this cycle's snapshot changes."""
        journal, self.journal = self.journal or [], None
        for flavor, key, vector, sign in reversed(journal):
            self.add(flavor, key, vector, -sign)

    def surely_short(self, requests: Iterable[TasRequest]) -> bool:
        """A necessary condition of placement: all free capacity of a flavor, summed over its
        leaves, holds the pods asked of it (so a placement need not be run to say no)."""
        wanted: dict[str, ResourceVector] = {}
        for tr in requests:
            per_pod = with_pod(from_quantities(tr.pod_set.requests))
            add_into(
                wanted.setdefault(tr.flavor, {}),
                {r: v * placed_pods(tr.pod_set) for r, v in per_pod.items()},
            )
        for flavor, vector in wanted.items():
            free = self.free.get(flavor, {})
            if any(v > free.get(r, 0) for r, v in vector.items()):
                return True
        return False

    def domains_fit(self, usage: Iterable[tuple[str, LeafKey, ResourceVector, int]]) -> bool:
        """`TASFlavorSnapshot.Fits`: each (flavor, leaf, per-pod request, pods) still has room
        for that many pods; the per-pod request has no `pods`, and an empty one never fits."""
        for flavor, key, per_pod, count in usage:
            tree = self.trees.get(flavor)
            leaf = tree.leaves.get(key) if tree is not None else None
            if leaf is None or count_in(per_pod, leaf.free())[0] < count:
                return False
        return True


class PodCounter:
    """Phase 1 of a placement kept current while the victim search changes leaves: pods of
    one request per leaf, summed per domain of the requested level. For one pod set without
    leader or slices (and TASBalancedPlacement off) this decides the placement exactly: it
    fits iff a domain of a required level, or the whole flavor otherwise, holds its pods
    (placement.py: `_find_level` takes the domain with the most; `_spread` the rest)."""

    def __init__(self, trees: TasTrees, request: TasRequest) -> None:
        tree = trees.trees[request.flavor]
        self.trees, self.flavor, self.tree = trees, request.flavor, tree
        self.wanted = placement_request(tree.topology, [request.pod_set])
        flavor = trees.scenario.resource_flavor(request.flavor)
        tolerations = request.pod_set.tolerations + flavor.tolerations
        self.level = self.wanted.level_index if self.wanted.required else -1
        self.domain: dict[LeafKey, tuple[str, ...]] = {}
        checked = tree.hostname_lowest and (tree.tainted or bool(request.pod_set.node_selector))
        for key, leaf in tree.leaves.items():
            if checked and leaf_exclusion(leaf, request.pod_set, tolerations):
                continue
            self.domain[key] = leaf.domain.values[: self.level + 1]
        self.counts: dict[LeafKey, int] = {}
        self.sums: dict[tuple[str, ...], int] = {}
        for key in self.domain:
            self.counts[key] = 0
            self.update(key)
        trees.counters.setdefault(request.flavor, []).append(self)

    @staticmethod
    def exact_for(trees: TasTrees, requests: tuple[TasRequest, ...]) -> bool:
        if len(requests) != 1 or trees.scenario.feature_gates.get("TASBalancedPlacement", False):
            return False
        tr = requests[0].pod_set.topology
        return tr is None or (tr.group is None and (tr.slice_size or 1) == 1 and not tr.slice_level)

    def update(self, key: LeafKey) -> None:
        domain = self.domain.get(key)
        if domain is None:
            return
        leaf = self.tree.leaves[key]
        pods = MAX_INT32
        for r, v in self.wanted.worker_requests.items():
            if v:  # as count_in: a zero request never limits, a negative remainder is 0
                free = leaf.capacity.get(r, 0) - leaf.non_tas.get(r, 0) - leaf.tas.get(r, 0)
                pods = min(pods, max(0, free // v))
        self.sums[domain] = self.sums.get(domain, 0) + pods - self.counts[key]
        self.counts[key] = pods

    def fits(self) -> bool:
        if self.level < 0:
            return sum(self.sums.values()) >= self.wanted.count
        return max(self.sums.values(), default=0) >= self.wanted.count

    def close(self) -> None:
        self.trees.counters[self.flavor].remove(self)


def place_workload(
    trees: TasTrees,
    requests: list[TasRequest],
    simulate_empty: bool = False,
    rules: KueueRules = RULES[DEFAULT_KUEUE],
    observe: Callable[[str, Tree], None] | None = None,
) -> TasResult:
    """`FindTopologyAssignmentsForWorkload`: flavors in name order; on each, pod set groups
    in order, each placed with the earlier ones' usage assumed (shared across hostname-level
    flavors when they share usage); a flavor stops at its first failing group. `observe`
    (--explain-domains): each group's workers pod set and the tree with its counts filled."""
    scenario, out = trees.scenario, TasResult()
    shared: dict[LeafKey, ResourceVector] = {}
    for flavor_name in sorted({tr.flavor for tr in requests}):
        tree = trees.trees[flavor_name]
        flavor = scenario.resource_flavor(flavor_name)
        assumed = shared if tree.hostname_lowest and trees.share else {}
        pod_sets = [r.pod_set for r in requests if r.flavor == flavor_name]
        for indices in pod_set_groups(pod_sets):
            members = [pod_sets[i] for i in indices]
            request = placement_request(tree.topology, members)
            mixed = scenario.feature_gates.get("TASProfileMixed", True)
            balanced = rules.balanced(scenario)
            algo = rules.counting(best_fit=not (request.unconstrained and mixed))
            name = request.workers.name
            try:
                result = place(
                    tree,
                    request,
                    flavor.tolerations,
                    assumed,
                    algo,
                    balanced,
                    (lambda t: observe(name, t)) if observe else None,  # noqa: B023
                    simulate_empty=simulate_empty,
                )
            except PlacementFailed as failed:
                out.failures += [(ps.name, str(failed), flavor_name) for ps in members]
                break
            for ps in members:
                per_leaf = dict(result.per_pod_set.get(ps.name, {}))
                out.per_leaf[ps.name] = per_leaf
                per_pod = from_quantities(ps.requests)
                if rules.assumed_usage_counts_pods:
                    per_pod = with_pod(per_pod)
                for key, count in per_leaf.items():
                    add_into(
                        assumed.setdefault(key, {}), {r: v * count for r, v in per_pod.items()}
                    )
    return out


PerPod = Callable[[TasRequest], ResourceVector]
"""What one pod of a placed pod set holds on its node (resource_transform.tas_view)."""


def _pod_spec(tr: TasRequest) -> ResourceVector:
    return from_quantities(tr.pod_set.requests)


def usage_of(
    requests: list[TasRequest],
    per_leaf: Mapping[str, Mapping[LeafKey, int]],
    slots: int = 1,
    view: PerPod | None = None,
) -> TasUsage:
    """What placed pod sets hold: per flavor and leaf, per-pod requests times pods, plus
    `slots` pod slots per pod (KueueRules.pod_slots_held); `view`: the per-pod requests
    when they are not the pod spec's."""
    out: TasUsage = {}
    for tr in requests:
        per_pod = dict((view or _pod_spec)(tr))
        per_pod["pods"] = per_pod.get("pods", 0) + slots
        for key, count in per_leaf.get(tr.pod_set.name, {}).items():
            target = out.setdefault(tr.flavor, {}).setdefault(key, {})
            add_into(target, {r: v * count for r, v in per_pod.items()})
    return out


def fits_check(
    requests: list[TasRequest],
    per_leaf: Mapping[str, Mapping[LeafKey, int]],
    slots: int = 1,
    view: PerPod | None = None,
) -> list[tuple[str, LeafKey, ResourceVector, int]]:
    """The domain requests `TASFlavorSnapshot.Fits` checks: one per pod set and leaf; the
    per-pod request holds a pod slot only where an admitted pod holds two (`slots`)."""
    extra = {"pods": 1} if slots > 1 else {}
    return [
        (tr.flavor, key, (view or _pod_spec)(tr) | extra, count)
        for tr in requests
        for key, count in per_leaf.get(tr.pod_set.name, {}).items()
    ]


def lowest_values(per_leaf: Mapping[LeafKey, int]) -> dict[str, int]:
    """Pods per lowest-level value, as an outcome's placement names them."""
    out: dict[str, int] = {}
    for key, count in per_leaf.items():
        label = key if isinstance(key, str) else key[-1]
        out[label] = out.get(label, 0) + count
    return out
