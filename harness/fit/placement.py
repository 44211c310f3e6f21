"""Kueue v0.19.2's TAS placement for one pod set or leader/worker group, in our own code.

Follows pkg/cache/scheduler/tas_flavor_snapshot.go findTopologyAssignment:
phase 1 counts how many pods (and slices) fit in every domain, bottom-up; phase 2a picks
the level and the domains (BestFit, or LeastFreeCapacity for unconstrained under
TASProfileMixed; preferred walks up a level when nothing fits); phase 2b walks down,
keeping the fewest domains at each level; the leaves with pods are the assignment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.errors import Nondeterministic, UnsupportedVersionError
from harness.fit.balanced import BalancedRules, balanced_domains
from harness.fit.leafcounts import leaf_counts
from harness.fit.request import PlacementRequest
from harness.fit.resources import MAX_INT32, ResourceVector, count_in, go_div, sub_into
from harness.fit.sorting import Algorithm
from harness.fit.stats import ExclusionStats, not_fit_message
from harness.fit.tree import Domain, Leaf, LeafKey, Tree
from harness.scenario.model import PodSet, Toleration


class PlacementFailed(Exception):
    """Kueue's reason string for a pod set that does not fit."""


@dataclass
class Assignment:
    """Pods per leaf for each pod set of the request (leader included)."""

    per_pod_set: dict[str, dict[LeafKey, int]] = field(default_factory=dict)


@dataclass
class _Run:
    tree: Tree
    request: PlacementRequest
    algo: Algorithm
    stats: ExclusionStats
    within: tuple[str, ...] | None = None
    within_by_prefix: bool = False

    def outside(self, values: tuple[str, ...]) -> bool:
        """A leaf outside the replacement domain `within` (fillLeafCounts): its ID is not the
        domain's nor starts with it plus "," (TopologyDomainID.BelongsTo); before v0.19.2
        (kueue#14452, `within_by_prefix`) not merely a string prefix of it
        (belongsToRequiredDomain, v0.18.2 tas_flavor_snapshot.go:1727-1733)."""
        if self.within is None:
            return False
        if self.within_by_prefix:
            return not ",".join(values).startswith(",".join(self.within))
        return values[: len(self.within)] != self.within


def place(
    tree: Tree,
    request: PlacementRequest,
    flavor_tolerations: tuple[Toleration, ...],
    assumed: Mapping[LeafKey, ResourceVector],
    algo: Algorithm,
    balanced: BalancedRules | None,
    observe: Callable[[Tree], None] | None = None,
    simulate_empty: bool = False,
    within: tuple[str, ...] | None = None,
    within_by_prefix: bool = False,
) -> Assignment:
    """Place the request or raise PlacementFailed with Kueue's message. `simulate_empty`:
    as if no TAS workload held any capacity (Kueue's WithSimulateEmpty). `within`: the level
    values of the one domain a node replacement may use (requiredReplacementDomain); leaves
    outside it hold no pods (fillLeafCounts, TopologyDomainID.BelongsTo; `within_by_prefix`:
    by string prefix, before v0.19.2). `balanced`: how TASBalancedPlacement runs
    (KueueRules.balanced), None when it is off."""
    run = _Run(tree, request, algo, ExclusionStats(), within, within_by_prefix)
    if request.level_index > request.slice_level_index:
        levels = tree.topology.levels
        raise PlacementFailed(
            f"podset slice topology {levels[request.slice_level_index]} is above the podset "
            f"topology {levels[request.level_index]}"
        )
    _fill_counts(run, flavor_tolerations, assumed, simulate_empty)
    if observe is not None:
        observe(tree)
    if balanced is not None and not request.required and not request.unconstrained:
        placed = _balanced(run, balanced)
        if placed is not None:
            return placed
    fit_level, chosen = _find_level(run, request.level_index)
    leaves = _descend(run, chosen, fit_level, False)
    return _assignment(run, leaves)


def _balanced(run: _Run, rules: BalancedRules) -> Assignment | None:
    """The balanced placement (phase 2a and 2b), or None to place by BestFit. v0.17 fails
    where v0.18+ falls back (tas_flavor_snapshot.go v0.17.1:880-883 vs v0.18.2:943-947).
    Before v0.19 the domains are walked in Go map order: it is run in two orders (by level
    values and reversed) and when the answers differ Kueue's is random: Nondeterministic."""
    orders: list[bool | None] = [None] if rules.ties_by_level_values else [False, True]
    answers: list[Assignment | str | None] = []
    for order in orders:
        chosen, fit_level, reason = balanced_domains(run.tree, run.request, run.algo, order, rules)
        if chosen is not None:
            answers.append(_assignment(run, _descend(run, chosen, fit_level, True)))
        else:
            answers.append(reason if reason and not rules.falls_back else None)
    if any(answer != answers[0] for answer in answers[1:]):
        described = " or ".join(_describe(answer) for answer in answers)
        raise Nondeterministic(
            f"balanced placement of pod set {run.request.workers.name} depends on the Go map "
            f"order Kueue walks tied domains in before v0.19 (kueue#12052): {described}"
        )
    if isinstance(answers[0], str):
        raise PlacementFailed(answers[0])
    return answers[0]


def _describe(answer: Assignment | str | None) -> str:
    if answer is None:
        return "BestFit"
    if isinstance(answer, str):
        return repr(answer)
    return "; ".join(
        f"{name} on "
        + ", ".join(
            f"{key if isinstance(key, str) else '/'.join(key)}={count}"
            for key, count in per_leaf.items()
        )
        for name, per_leaf in answer.per_pod_set.items()
    )


# ---- phase 1 ---------------------------------------------------------------------------------


def _feasible(run: _Run, flavor_tolerations: tuple[Toleration, ...]) -> list[Domain]:
    """Leaves the pod set may use; node checks apply only with a hostname lowest level."""
    tree, stats = run.tree, run.stats
    leaves = [leaf.domain for leaf in tree.leaves.values()]
    stats.total_nodes += len(leaves)
    if not tree.hostname_lowest or (not tree.tainted and not run.request.workers.node_selector):
        return leaves
    tolerations = run.request.workers.tolerations + flavor_tolerations
    out = []
    for leaf in tree.leaves.values():
        why = leaf_exclusion(leaf, run.request.workers, tolerations)
        if why is None:
            out.append(leaf.domain)
        elif why[0] == "taint":
            stats.exclude_taint(why[1])
            tree.excluded[leaf.key] = f"untolerated taint {why[1]}"
        else:
            stats.node_selector += 1
            tree.excluded[leaf.key] = "does not match the pod set's nodeSelector"
    return out


def leaf_exclusion(
    leaf: Leaf, pod_set: PodSet, tolerations: tuple[Toleration, ...]
) -> tuple[str, str] | None:
    """Why a pod set may not use a hostname-level leaf: ("taint", the taint) for an
    untolerated NoSchedule/NoExecute taint, ("selector", "") for its nodeSelector, or None."""
    node = leaf.nodes[0]
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            tol.tolerates(taint) for tol in tolerations
        ):
            return ("taint", taint.render())
    if any(node.labels.get(k) != v for k, v in pod_set.node_selector.items()):
        return ("selector", "")
    return None


def _before_v0_19(
    run: _Run, leaf: Leaf, keys: set[str], pods: int, limiting: str
) -> tuple[int, str]:
    """`CountInWithLimitingResource` before v0.19 (v0.18.2 pkg/resources/requests.go:198-201,
    v0.17.1 :186-189): it returns (0, resource) at the first requested resource the node's
    capacity map has no entry for, in Go map order, where v0.19 counts it 0 and breaks the
    tie by name. One such resource: it is the limiting one. Several: which one the message's
    exclusions name is random."""
    missing = sorted(r for r, v in run.request.worker_requests.items() if v and r not in keys)
    if run.algo.missing_resource_first and len(missing) > 1:
        run.stats.random_exclusion = (
            f"node(s) {leaf.key} have no capacity entry for {', '.join(missing)}: Kueue before "
            "v0.19 names the first of them in Go map order"
        )
    if run.algo.missing_resource_first and missing:
        return 0, missing[0]
    return pods, limiting


def _fill_counts(
    run: _Run,
    flavor_tolerations: tuple[Toleration, ...],
    assumed: Mapping[LeafKey, ResourceVector],
    simulate_empty: bool = False,
) -> None:
    tree = run.tree
    if _kept_counts(run, assumed, simulate_empty):
        return
    for domain in tree.per_level[-1].values():  # inner domains are all rewritten by _aggregate
        domain.pods = domain.pods_wl = domain.slices = domain.slices_wl = domain.leaders = 0
    tree.excluded.clear()
    request = run.request
    # The worker count without building each leaf's free vector (the common case): the
    # resources it asks a nonzero amount of, as count_in reads them.
    asked = [(r, v) for r, v in request.worker_requests.items() if v]
    quick = request.leader_requests is None and len(asked) == len(request.worker_requests)
    for domain in _feasible(run, flavor_tolerations):
        leaf = domain.leaf
        assert leaf is not None
        if run.outside(domain.values):
            # Checked after the node filters, as Kueue counts it: a tainted leaf outside
            # the domain is a taint exclusion, an untainted one a topologyDomain exclusion.
            run.stats.topology_domain += 1
            continue
        if quick:
            extra = assumed.get(leaf.key)
            pods, limiting = (MAX_INT32, "") if asked else (0, "")
            for r, v in asked:
                free = leaf.capacity.get(r, 0) - leaf.non_tas.get(r, 0)
                if not simulate_empty:
                    free -= leaf.tas.get(r, 0)
                if extra is not None:
                    free -= extra.get(r, 0)
                if free >= 0:
                    count = min(free // v, MAX_INT32)
                else:  # v0.17.1 (`unclamped`): Go's division, truncated toward zero
                    count = -(-free // v) if run.algo.unclamped else 0
                if count < pods or (count == pods and (not limiting or r < limiting)):
                    pods, limiting = count, r
            if run.algo.missing_resource_first:
                left = leaf.free(simulate_empty)
                sub_into(left, extra or {})
                pods, limiting = _before_v0_19(run, leaf, set(left), pods, limiting)
            domain.pods = domain.pods_wl = pods
            if pods == 0 and limiting:
                run.stats.exclude_resource(limiting)
                tree.excluded[leaf.key] = f"no room for one pod: {limiting}"
            continue
        remaining = leaf.free(simulate_empty)
        if leaf.key in assumed:
            sub_into(remaining, assumed[leaf.key])
        clamped = not run.algo.unclamped
        domain.pods, limiting = count_in(request.worker_requests, remaining, clamped)
        if run.algo.missing_resource_first:
            domain.pods, limiting = _before_v0_19(run, leaf, set(remaining), domain.pods, limiting)
        if domain.pods == 0 and limiting:
            run.stats.exclude_resource(limiting)
            run.tree.excluded[leaf.key] = f"no room for one pod: {limiting}"
        if request.leader_requests is None:
            domain.pods_wl = domain.pods  # nothing taken for a leader: the same count
            continue
        if count_in(request.leader_requests, remaining)[0] > 0:
            domain.leaders = 1
            sub_into(remaining, request.leader_requests)
        domain.pods_wl = count_in(request.worker_requests, remaining, clamped)[0]
        if run.algo.unclamped and any(
            v and r not in remaining for r, v in request.worker_requests.items()
        ):
            domain.pods_wl = 0  # CountIn returns 0 at a missing resource (missing_resource_first)
    _roll_up(run)


def _kept_counts(
    run: _Run, assumed: Mapping[LeafKey, ResourceVector], simulate_empty: bool
) -> bool:
    """Phase 1's leaf counts from the tree's kept counts of this request shape
    (harness.fit.leafcounts), where a leaf's count depends on that leaf alone; False when
    they must be counted here."""
    tree, request, algo = run.tree, run.request, run.algo
    if (
        request.leader_requests is not None
        or assumed
        or run.within is not None
        or algo.missing_resource_first
        or (tree.hostname_lowest and (tree.tainted or request.workers.node_selector))
    ):
        return False
    asked = tuple(request.worker_requests.items())
    if any(v == 0 for _, v in asked):
        return False
    counts = leaf_counts(tree, (asked, simulate_empty, algo.unclamped))
    run.stats.total_nodes += counts.leaves
    resources = run.stats.resources
    for r, n in counts.by_resource.items():
        resources[r] = resources.get(r, 0) + n
    tree.excluded.clear()
    tree.excluded.update(counts.excluded)
    if request.slice_size == 1 and request.slice_level_index == len(tree.per_level) - 1:
        # One pod a slice, counted at the leaves: every domain's slices are its pods, and
        # with no leader its counts with the leader are the same (_roll_up's sums).
        for domain, pods in zip(counts.domains, counts.counts, strict=True):
            domain.pods = domain.pods_wl = domain.slices = domain.slices_wl = pods
            domain.leaders = 0
        return True
    for domain, pods in zip(counts.domains[: counts.leaves], counts.counts, strict=False):
        domain.pods = domain.pods_wl = pods
        domain.slices = domain.slices_wl = domain.leaders = 0
    _roll_up(run)
    return True


def _roll_up(run: _Run) -> None:
    """roll_up_from every root, level by level from the bottom (leaves have no children)."""
    tree, request = run.tree, run.request
    lowest = len(tree.per_level) - 1
    size = request.slice_size
    if request.slice_level_index == lowest:
        for domain in tree.per_level[lowest].values():
            domain.slices, domain.slices_wl = (
                go_div(domain.pods, size),
                go_div(domain.pods_wl, size),
            )
    for level in range(lowest - 1, -1, -1):
        if request.leader is None:
            # No leader: every leaf's count with the leader is its count (both written by
            # _fill_counts), so each parent's is its sum too (_aggregate's penalties are 0).
            at_slice_level = level == request.slice_level_index
            for domain in tree.per_level[level].values():
                pods = slices = 0
                for child in domain.children:
                    pods += child.pods
                    slices += child.slices
                if at_slice_level:
                    slices = go_div(pods, size)
                domain.pods = domain.pods_wl = pods
                domain.slices = domain.slices_wl = slices
                domain.leaders = 0
            continue
        for domain in tree.per_level[level].values():
            _aggregate(domain, request, run.algo.leader_penalty_from_leader_domains)


def roll_up_from(
    domain: Domain, request: PlacementRequest, only_leader_domains: bool = True
) -> None:
    """Recompute a subtree's counts from its leaves (Kueue's fillInCountsHelper;
    `only_leader_domains` as in `_aggregate`)."""
    if not domain.children:
        if domain.level == request.slice_level_index:
            size = request.slice_size
            domain.slices, domain.slices_wl = (
                go_div(domain.pods, size),
                go_div(domain.pods_wl, size),
            )
        return
    for child in domain.children:
        roll_up_from(child, request, only_leader_domains)
    _aggregate(domain, request, only_leader_domains)


def _aggregate(domain: Domain, request: PlacementRequest, only_leader_domains: bool = True) -> None:
    """One inner domain's counts from its children's. `only_leader_domains` False (v0.17.1,
    Algorithm.leader_penalty_from_leader_domains): every child's leader penalty counts."""
    size, at_slice_level = request.slice_size, domain.level == request.slice_level_index
    pods = slices = leaders = 0
    min_pod_penalty = min_slice_penalty = MAX_INT32
    contributor = False
    for child in domain.children:
        pods += child.pods
        slices += child.slices
        if request.leader is None or child.leaders > 0 or not only_leader_domains:
            contributor = True
            min_pod_penalty = min(min_pod_penalty, child.pods - child.pods_wl)
            min_slice_penalty = min(min_slice_penalty, child.slices - child.slices_wl)
        leaders = max(leaders, child.leaders)
    domain.pods, domain.leaders = pods, leaders
    slices_wl = 0
    if contributor:
        domain.pods_wl = pods - min_pod_penalty
        slices_wl = slices - min_slice_penalty
    else:
        domain.pods_wl = 0
    if at_slice_level:
        slices, slices_wl = go_div(domain.pods, size), go_div(domain.pods_wl, size)
    domain.slices, domain.slices_wl = slices, slices_wl


# ---- phase 2a --------------------------------------------------------------------------------


def _fail(run: _Run, fit: int, total: int) -> PlacementFailed:
    name = run.tree.topology.name
    return PlacementFailed(not_fit_message(name, fit, total, run.request.slice_size, run.stats))


def _find_level(run: _Run, level: int) -> tuple[int, list[Domain]]:
    request, algo = run.request, run.algo
    domains = list(run.tree.per_level[level].values())
    if not domains:
        raise PlacementFailed(f"no topology domains at level: {run.tree.topology.levels[level]}")
    needed, leaders = request.count // request.slice_size, request.leader_count
    ordered: list[Domain] | None = None
    if algo.best_fit and leaders == 0:
        # The picks below without sorting every domain of the level (a host-level request
        # on 1,000 nodes sorted them all for each placement); sorted only to spread.
        top = algo.first_with_leader(domains)
        if top.slices_wl >= needed and top.leaders >= leaders:
            top = algo.best_fit_unsorted(domains, needed) or top
    else:
        ordered = algo.sorted_with_leader(domains)
        top = ordered[0]
        if algo.best_fit and top.slices_wl >= needed and top.leaders >= leaders:
            top = algo.best_fit_slices(ordered, needed, leaders)
    if not algo.best_fit:
        assert ordered is not None
        for candidate in ordered:
            capacity = candidate.slices
            if leaders > 0 and algo.leader_aware:  # v0.18.2 :1291-1295 reads sliceState only
                if candidate.leaders < leaders:
                    continue
                capacity = candidate.slices_wl
            if capacity >= needed:
                return level, [candidate]
    if top.slices_wl >= needed and top.leaders >= leaders:
        return level, [top]
    if request.required:
        raise _fail(run, top.slices, needed)
    if level > 0 and not request.unconstrained:
        return _find_level(run, level - 1)
    return level, _spread(run, ordered or algo.sorted_with_leader(domains), needed)


def _spread(run: _Run, ordered: list[Domain], needed: int) -> list[Domain]:
    """Several domains of one level: leaders first, then largest first, tight last pick."""
    algo, request = run.algo, run.request
    results: list[Domain] = []
    remaining, leaders_left = needed, request.leader_count
    ordered = algo.prioritize_leader(ordered, request.count, leaders_left, request.slice_size, True)
    index = 0
    while leaders_left > 0 and index < len(ordered) and ordered[index].leaders > 0:
        domain = ordered[index]
        if algo.best_fit and domain.slices_wl >= remaining:
            domain = algo.best_fit_slices(ordered[index:], remaining, leaders_left)
        results.append(domain)
        leaders_left -= domain.leaders
        remaining -= domain.slices_wl
        index += 1
    if leaders_left > 0:
        raise _fail(run, request.leader_count - leaders_left, needed)
    rest = algo.sorted(ordered[index:])
    index = 0
    while remaining > 0 and index < len(rest):
        domain = rest[index]
        if algo.best_fit and domain.slices >= remaining:
            domain = algo.best_fit_slices(rest[index:], remaining, 0)
        results.append(domain)
        remaining -= domain.slices
        index += 1
    if remaining > 0:
        raise _fail(run, needed - remaining, needed)
    return results


# ---- phase 2b --------------------------------------------------------------------------------


def _descend(run: _Run, chosen: list[Domain], fit_level: int, balanced: bool) -> list[Domain]:
    request, algo = run.request, run.algo
    lowest = len(run.tree.topology.levels) - 1
    current = algo.take_minimum(
        chosen, request.count, request.leader_count, request.slice_size, slices=True
    )
    level = fit_level
    while level < min(lowest, request.slice_level_index) and not balanced:
        children = [c for d in current for c in d.children]
        current = algo.take_minimum(
            algo.sorted(children),
            request.count,
            request.leader_count,
            request.slice_size,
            slices=True,
        )
        level += 1
    while level < lowest:
        size = request.slice_size if level < request.slice_level_index else 1
        nxt: list[Domain] = []
        for parent in current:
            children = algo.sorted(parent.children)
            if size > 1:
                # Kueue recounts slices of the (already sorted) children with this size,
                # code meant for inner slice layers that also runs under balanced placement.
                for child in children:
                    child.slices = go_div(child.pods, size)
                    child.slices_wl = go_div(child.pods_wl, size)
            nxt += algo.take_minimum(children, parent.pods, parent.leaders, size, slices=size > 1)
        current = nxt
        level += 1
    return current


def _assignment(run: _Run, leaves: list[Domain]) -> Assignment:
    request = run.request
    result = Assignment()
    if request.leader is not None:
        leader_domains = []
        for domain in leaves:
            if domain.leaders > 0:
                clone = domain.copy_counts()
                clone.pods = domain.leaders
                leader_domains.append(clone)
        result.per_pod_set[request.leader.name] = _per_leaf(leader_domains)
        leaves = [d for d in leaves if d.pods > 0]
    for domain in leaves:
        if domain.pods < 0:  # only v0.17.1 (Algorithm.unclamped) counts below 0
            raise UnsupportedVersionError(
                f"kueue: v0.17.1: pod set {request.workers.name} gets {domain.pods} pods on "
                f"{domain.key}: Kueue writes every nonzero count into the topology assignment "
                "(buildTopologyAssignmentForLevels, tas_flavor_snapshot.go:1453), which a real "
                "API server rejects (podCounts minimum 1) and kueue-sim's fake client does not"
            )
    result.per_pod_set[request.workers.name] = _per_leaf(leaves)
    return result


def _per_leaf(domains: list[Domain]) -> dict[LeafKey, int]:
    out: dict[LeafKey, int] = {}
    for domain in sorted(domains, key=lambda d: d.values):
        if domain.pods > 0:
            out[domain.key] = out.get(domain.key, 0) + domain.pods
    return out
