"""TASBalancedPlacement (alpha, off by default): spread preferred pod sets evenly.

Our reading of Kueue v0.19.2 pkg/cache/scheduler/tas_balanced_placement.go: for each group of
sibling domains at the preferred level, find the greedy-minimal number of domains (one level
down when slices sit lower), take the per-domain slice threshold that gives, prune domains
below it, keep the group with the highest threshold (then the fewest domains), choose the
exact domain set by dynamic programming and give each `threshold` slices plus extras.
Returns no domains when it cannot apply, with Kueue's reason when it found a threshold but
could not place at it; the caller falls back to BestFit (or, on v0.17, fails). With a
leader/worker group v0.17 caps the threshold by room beside a leader and prunes by it
(BalancedRules.leader_threshold_by_workers, issue 7494, changed by kueue#10948).

Before v0.19 (kueue#12052) the domain lists came in Go map order and only the greedy count
sorted them (v0.18.2 :243-245, :211-231, :81-146): `map_order` stands for one such order,
the domains by level values (False) or reversed (True); None is v0.19's sorted walk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.fit.sorting import Algorithm
from harness.fit.tree import Domain, Tree

if TYPE_CHECKING:
    from harness.fit.request import PlacementRequest

_BEST_FIT = Algorithm(best_fit=True)


@dataclass(frozen=True)
class BalancedRules:
    """TASBalancedPlacement is on; how this Kueue version runs it (KueueRules.balanced)."""

    falls_back: bool = True
    """v0.18+: a failed balanced placement falls back to BestFit (kueue#11136); v0.17 fails."""
    ties_by_level_values: bool = True
    """v0.19+: tied domains go by level values (kueue#12052); before, Go map order."""
    checks_fit_after_pruning: bool = True
    """v0.18+: a candidate that no longer fits once pruned is skipped; v0.17 kept it."""
    leader_threshold_by_workers: bool = True
    """v0.18+ (kueue#10948): a group's threshold is capped by the last worker domain's slices,
    retried with room beside a leader, and pruning keeps a domain's worker capacity; v0.17
    caps it by the room beside a leader and prunes every domain below that (issue 7494)."""


NO_OPTIMAL_SET = "TAS Balanced Placement: Cannot find optimal domain set to fit the request"
BELOW_THRESHOLD = "TAS Balanced Placement: Not enough slices to meet the threshold"
NOT_ALL_PLACED = "TAS Balanced Placement: Not all slices or leaders could be placed"
"""applyBalancedPlacementAlgorithm's reasons (tas_balanced_placement.go v0.19.2 :154-184,
v0.18.2 :152-181, v0.17.1 :157-186)."""


def balanced_domains(
    tree: Tree,
    request: PlacementRequest,
    algo: Algorithm,
    map_order: bool | None = None,
    rules: BalancedRules = BalancedRules(),
) -> tuple[list[Domain] | None, int, str]:
    """The domains at the fit level with their slices, the fit level, and "" ; or no domains,
    with the reason when a threshold was found but the placement failed ("" when balanced
    placement does not apply: no threshold above 0)."""
    chosen, threshold = _best_candidate(tree, request, algo, map_order, rules)
    if threshold <= 0 or chosen is None:
        return None, 0, ""
    needed = request.count // request.slice_size
    level = request.level_index
    if request.level_index < request.slice_level_index:
        picked = _optimal_set(
            chosen, needed, request.leader_count, request.slice_size, True, map_order
        )
        if picked is None:
            return None, 0, NO_OPTIMAL_SET
        chosen = [c for d in picked for c in _walk(d.children, map_order)]
        level += 1
    placed, reason = _place_balanced(
        chosen, needed, request.leader_count, request.slice_size, threshold, map_order
    )
    return (placed, level, "") if placed is not None else (None, 0, reason)


def _walk(domains: list[Domain], map_order: bool | None) -> list[Domain]:
    """A list Kueue builds from a Go map (or a children slice appended in map order): by
    level values, reversed for the other order; v0.19 (None) sorts where it matters."""
    return sorted(domains, key=lambda d: d.values, reverse=bool(map_order))


def _best_candidate(
    tree: Tree,
    request: PlacementRequest,
    algo: Algorithm,
    map_order: bool | None,
    rules: BalancedRules,
) -> tuple[list[Domain] | None, int]:
    """findBestDomainsForBalancedPlacement: the pruned candidate group and its threshold.
    v0.17 (`rules.leader_threshold_by_workers` False) caps the threshold by the last worker
    domain's slices beside a leader and does not retry (tas_balanced_placement.go
    v0.17.1:66-80, :264-273); its pruning works on the snapshot itself, which is the same here:
    sibling groups share no domain, and a v0.17 failure does not fall back to BestFit."""
    needed = request.count // request.slice_size
    leaders = request.leader_count
    by_workers = rules.leader_threshold_by_workers
    if request.level_index == 0:
        groups = [_walk(list(tree.per_level[0].values()), map_order)]
    else:
        parents = _walk(list(tree.per_level[request.level_index - 1].values()), map_order)
        groups = [_walk(p.children, map_order) for p in parents]
    best_threshold, best_count, best = 0, 0, None
    for siblings in groups:
        candidates = [_clone(d, None) for d in siblings]
        lower = _lower(candidates, request, map_order)
        fits, selected, last_with_leader, last = _greedy(lower, needed, leaders)
        if not fits:
            continue
        threshold = needed // selected
        if last_with_leader is not None:
            threshold = min(threshold, last_with_leader.slices_wl)
        if last is not None:
            threshold = min(threshold, last.slices if by_workers else last.slices_wl)
        reserved = threshold  # v0.17's threshold has it already: no retry
        if leaders > 0 and last is not None:
            reserved = min(threshold, last.slices_wl)
        if threshold < best_threshold:
            continue
        _prune(candidates, threshold, request, algo, by_workers)
        fits, count, _, _ = _greedy(candidates, needed, leaders)
        if not fits and reserved < threshold:
            if reserved <= 0 or reserved < best_threshold:
                continue
            threshold = reserved
            candidates = [_clone(d, None) for d in siblings]
            _prune(candidates, threshold, request, algo, by_workers)
            fits, count, _, _ = _greedy(candidates, needed, leaders)
        if not fits and rules.checks_fit_after_pruning:
            continue
        if threshold > best_threshold or (threshold == best_threshold and count < best_count):
            best_threshold, best_count, best = threshold, count, candidates
    return best, best_threshold


def _lower(
    domains: list[Domain], request: PlacementRequest, map_order: bool | None
) -> list[Domain]:
    if request.level_index < request.slice_level_index:
        return [c for d in domains for c in _walk(d.children, map_order)]
    return domains


def _clone(domain: Domain, parent: Domain | None) -> Domain:
    clone = domain.copy_counts()
    clone.parent = parent
    clone.children = [_clone(c, clone) for c in domain.children]
    return clone


def _greedy(
    domains: list[Domain], needed: int, leaders: int
) -> tuple[bool, int, Domain | None, Domain | None]:
    """How many domains a greedy pick needs (evaluateGreedyAssignment), always BestFit order."""
    selected, remaining, leaders_left = 0, needed, leaders
    last_with_leader = last = None
    index = 0
    if leaders > 0:
        ordered = _BEST_FIT.sorted_with_leader(domains)
        while leaders_left > 0 and index < len(ordered) and ordered[index].leaders > 0:
            selected += 1
            last_with_leader = ordered[index]
            leaders_left -= ordered[index].leaders
            remaining -= ordered[index].slices_wl
            index += 1
        rest = _BEST_FIT.sorted(ordered[index:])
    else:
        rest = _BEST_FIT.sorted(domains)
    if leaders_left > 0:
        return False, 0, None, None
    for domain in rest:
        if remaining <= 0 or domain.slices <= 0:
            break
        selected += 1
        last = domain
        remaining -= domain.slices
    if remaining > 0:
        return False, 0, None, None
    return True, selected, last_with_leader, last


def _clear(domain: Domain) -> None:
    domain.reset()
    for child in domain.children:
        _clear(child)


def _clear_leader(domain: Domain) -> None:
    domain.pods_wl = domain.slices_wl = domain.leaders = 0
    for child in domain.children:
        _clear_leader(child)


def _prune_one(domain: Domain, threshold: int, leader: bool, by_workers: bool) -> None:
    """pruneDomainNodeBelowThreshold (v0.18.2 :361-370): below the threshold in worker slices
    the domain is cleared; one that only cannot host the leader at it loses its leader
    capacity. v0.17 (`by_workers` False, v0.17.1 :319-333) clears every domain whose slices
    beside a leader are below the threshold."""
    if not by_workers:
        if domain.slices_wl < threshold:
            _clear(domain)
    elif domain.slices < threshold:
        _clear(domain)
    elif leader and domain.leaders > 0 and domain.slices_wl < threshold:
        _clear_leader(domain)


def _prune(
    domains: list[Domain],
    threshold: int,
    request: PlacementRequest,
    algo: Algorithm,
    by_workers: bool,
) -> None:
    """pruneDomainsBelowThreshold: the children, then each domain after rolling its counts
    up again (fillInCountsHelper: v0.17.1 takes every child's leader penalty,
    Algorithm.leader_penalty_from_leader_domains)."""
    from harness.fit.placement import roll_up_from

    leader = request.leader is not None
    for domain in domains:
        for child in domain.children:
            _prune_one(child, threshold, leader, by_workers)
    for domain in domains:
        roll_up_from(domain, request, algo.leader_penalty_from_leader_domains)
        _prune_one(domain, threshold, leader, by_workers)


def _entropy(domain: Domain) -> float:
    total = sum(c.pods for c in domain.children)
    if total == 0:
        return 0.0
    out = 0.0
    for child in domain.children:
        if child.pods > 0:
            share = child.pods / total
            out += -share * math.log2(share)
    return out


def _optimal_set(
    domains: list[Domain],
    needed: int,
    leaders: int,
    size: int,
    by_entropy: bool,
    map_order: bool | None,
) -> list[Domain] | None:
    """Fewest domains that fit, then the least spare pod capacity (selectOptimalDomainSetToFit).
    Equal sets: the first met in the walk, which v0.19 sorts (ties by level values) and v0.17
    and v0.18 take as given, the entropy sort leaving ties in place (v0.18.2 :211-231; Go's
    pdqsort is an insertion sort, stable, up to 12 elements)."""
    fits, optimal, _, _ = _greedy(domains, needed, leaders)
    if not fits:
        return None
    if map_order is None:
        if by_entropy:
            key = lambda d: (-d.leaders, -d.slices_wl, -_entropy(d), d.values)  # noqa: E731
            ordered = sorted(domains, key=key)
        else:
            ordered = sorted(domains, key=lambda d: d.values)
    elif by_entropy:
        ordered = sorted(domains, key=lambda d: (-d.leaders, -d.slices_wl, -_entropy(d)))
    else:
        ordered = list(domains)
    table: list[dict[int, dict[int, list[Domain]]]] = [{} for _ in range(optimal + 1)]
    table[0][leaders] = {needed * size: []}
    for domain in ordered:
        for i in range(optimal, 0, -1):
            for before_leader in sorted(table[i - 1]):
                for before_pods in sorted(table[i - 1][before_leader]):
                    if before_leader <= 0 and before_pods <= 0:
                        continue
                    placement = [*table[i - 1][before_leader][before_pods], domain]
                    if before_leader > 0 and domain.leaders > 0:
                        row = table[i].setdefault(before_leader - domain.leaders, {})
                        row.setdefault(before_pods - domain.pods_wl, placement)
                    if domain.slices > 0:
                        row = table[i].setdefault(before_leader, {})
                        row.setdefault(before_pods - domain.pods, placement)
    complete = table[optimal].get(0, {})
    left_over = [k for k in complete if k <= 0]
    return complete[max(left_over)] if left_over else None


def _place_balanced(
    domains: list[Domain],
    needed: int,
    leaders: int,
    size: int,
    threshold: int,
    map_order: bool | None,
) -> tuple[list[Domain] | None, str]:
    """placeSlicesOnDomainsBalanced: the domains with their slices, or Kueue's reason."""
    picked = _optimal_set(domains, needed, leaders, size, False, map_order)
    if picked is None:
        return None, NO_OPTIMAL_SET
    if needed < len(picked) * threshold:
        return None, BELOW_THRESHOLD
    picked = _BEST_FIT.sorted_with_leader(picked)
    extra, leaders_left = needed - len(picked) * threshold, leaders
    for domain in picked:
        if leaders_left > 0:
            take = min(domain.slices_wl - threshold, extra)
            domain.leaders = 1
            leaders_left -= 1
        elif extra > 0:
            take = min(domain.slices - threshold, extra)
            domain.leaders = 0
        else:
            domain.leaders, take = 0, 0
        domain.slices = domain.slices_wl = threshold + take
        domain.pods = domain.slices * size
        domain.pods_wl = domain.pods - domain.leaders
        extra -= take
    if extra > 0 or leaders_left > 0:
        return None, NOT_ALL_PLACED
    return picked, ""
