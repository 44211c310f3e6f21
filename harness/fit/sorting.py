"""Domain orderings and greedy picks of Kueue's two TAS profiles: BestFit and LeastFreeCapacity.

BestFit (required, preferred, and everything when TASProfileMixed is off) ranks domains with
the most free slices first and trims the last pick to the tightest domain that still fits;
LeastFreeCapacity (unconstrained under TASProfileMixed) ranks the least free first and never
trims. Ties: fewer pods first, then the level-value path (KEP-2724; tas_flavor_snapshot.go).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.fit.resources import MAX_INT32
from harness.fit.tree import Domain


@dataclass(frozen=True)
class Algorithm:
    best_fit: bool
    missing_resource_first: bool = False
    """Before v0.19 (KueueRules.count_in_reads_missing_as_zero False): a node's count stops
    at the first requested resource its capacity map has no entry for, in Go map order."""
    unclamped: bool = False
    """v0.17.1 (KueueRules.count_clamped_at_zero False): a negative free capacity gives a
    negative count (Go's division, truncated toward zero), summed into the parents."""
    leader_aware: bool = True
    """v0.19.1 (kueue#13766, KueueRules.leader_aware_best_fit): the best-fit pick skips
    domains without room for the leader (tas_flavor_snapshot.go:1314), the leader's domain
    is moved first where its penalty still leaves room for the workers
    (`prioritizeLeaderDomain`, :1533, called at :1401 and :1576), and a domain the leader
    and some workers take keeps that many workers as its count (:1523). Before (v0.18.2
    findBestFitDomainBy :1248-1263, consumeWithLeadersGeneric :1410-1465; v0.17.1 :1188,
    :1323, the same code), the pick ignores the leader, the order is the sort's, and that
    domain's count stays as it was."""
    leader_penalty_from_leader_domains: bool = True
    """v0.18 (kueue#10948, fillInCountsHelper `leaderRequired`, v0.18.2
    tas_flavor_snapshot.go:1774-1778): a parent's count with the leader subtracts the
    smallest leader penalty among the children that can hold the leader, and is 0 when none
    can. v0.17.1 (:1680-1681) takes the smallest penalty over all children, 0 wherever a
    child cannot hold the leader (its count with the leader is its count)."""

    # ---- orderings ----------------------------------------------------------------------
    def sorted_with_leader(self, domains: list[Domain]) -> list[Domain]:
        sign = -1 if self.best_fit else 1
        return sorted(domains, key=lambda d: (-d.leaders, sign * d.slices_wl, d.pods_wl, d.values))

    def first_with_leader(self, domains: list[Domain]) -> Domain:
        """`sorted_with_leader(domains)[0]` without sorting them all (the level-value paths
        of one level differ, so the order is total)."""
        sign = -1 if self.best_fit else 1
        return min(domains, key=lambda d: (-d.leaders, sign * d.slices_wl, d.pods_wl, d.values))

    def best_fit_unsorted(self, domains: list[Domain], needed: int) -> Domain | None:
        """`best_fit_slices(sorted_with_leader(domains), needed, 0)` without sorting: the
        first in that order of those with the fewest slices that still hold `needed`; None
        where none does (best_fit_slices then gives the first domain of the order)."""
        sign = -1 if self.best_fit else 1
        fitting = [d for d in domains if needed <= d.slices < MAX_INT32]
        if not fitting:
            return None
        return min(
            fitting, key=lambda d: (d.slices, -d.leaders, sign * d.slices_wl, d.pods_wl, d.values)
        )

    def sorted(self, domains: list[Domain]) -> list[Domain]:
        sign = -1 if self.best_fit else 1
        return sorted(domains, key=lambda d: (sign * d.slices, d.pods, d.values))

    # ---- best-fit picks -----------------------------------------------------------------
    def best_fit_slices(self, domains: list[Domain], needed: int, leaders: int) -> Domain:
        skip = leaders if self.leader_aware else 0
        if leaders > 0:
            return _best_fit(domains, needed, skip, lambda d: d.slices_wl)
        return _best_fit(domains, needed, skip, lambda d: d.slices)

    def best_fit_pods(self, domains: list[Domain], needed: int, leaders: int) -> Domain:
        skip = leaders if self.leader_aware else 0
        if leaders > 0:
            return _best_fit(domains, needed, skip, lambda d: d.pods_wl)
        return _best_fit(domains, needed, skip, lambda d: d.pods)

    # ---- leader priority ------------------------------------------------------------------
    def prioritize_leader(
        self, domains: list[Domain], count: int, leaders: int, size: int, slices: bool
    ) -> list[Domain]:
        """Move to the front the first leader-capable domain whose leader penalty fits the slack
        (v0.19.1 on; before, the order is left as it is: `leader_aware`)."""
        if leaders == 0 or len(domains) < 2 or not self.leader_aware:
            return domains
        required = count // size if slices else count
        available = sum(d.slices if slices else d.pods for d in domains)
        for index, domain in enumerate(domains):
            if domain.leaders < leaders:
                continue
            penalty = domain.slices - domain.slices_wl if slices else domain.pods - domain.pods_wl
            if available - penalty < required:
                continue
            if index == 0:
                return domains
            return [domain, *domains[:index], *domains[index + 1 :]]
        return domains

    # ---- trimming the chosen domains to the request -------------------------------------------
    def take_minimum(
        self, domains: list[Domain], count: int, leaders: int, size: int, slices: bool
    ) -> list[Domain]:
        """Kueue's updateCountsToMinimumGeneric: keep domains until the request is covered.

        Rewrites each kept domain's pod (and slice) count to what it receives. Returns [] where
        Kueue logs "code assumptions violated" (the domains cannot hold the request).
        """
        domains = self.prioritize_leader(domains, count, leaders, size, slices)
        result: list[Domain] = []
        state = [count // size if slices else count, leaders]
        for index, domain in enumerate(domains):
            if state[1] > 0:
                picked, done = self._consume_with_leaders(
                    domain, domains[index:], state, size, slices
                )
                result.append(picked)
                if done:
                    return result
                continue
            remaining = state[0]
            if slices:
                if self.best_fit and domain.slices >= remaining:
                    domain = self.best_fit_slices(domains[index:], remaining, 0)
                domain.leaders = 0
                result.append(domain)
                if domain.slices >= remaining:
                    domain.pods, domain.slices = remaining * size, remaining
                    return result
                domain.pods = domain.slices * size
                state[0] -= domain.slices
                continue
            if self.best_fit and domain.pods >= remaining:
                domain = self.best_fit_pods(domains[index:], remaining, 0)
            domain.leaders = 0
            result.append(domain)
            if domain.pods >= remaining:
                domain.pods = remaining
                return result
            state[0] -= domain.pods
        return []

    def _consume_with_leaders(
        self, domain: Domain, rest: list[Domain], state: list[int], size: int, slices: bool
    ) -> tuple[Domain, bool]:
        remaining, leaders = state

        def with_leader(d: Domain) -> int:
            return d.slices_wl if slices else d.pods_wl

        if self.best_fit and with_leader(domain) >= remaining and domain.leaders >= leaders:
            pick = self.best_fit_slices if slices else self.best_fit_pods
            domain = pick(rest, remaining, leaders)
        if with_leader(domain) >= remaining and domain.leaders >= leaders:
            _set_primary(domain, slices, remaining)
            domain.leaders = leaders
            domain.pods = remaining * (size if slices else 1)
            return domain, True
        if not self.leader_aware:
            return self._consume_before_v0_19_1(domain, state, size, slices), False
        capacity = min(with_leader(domain), remaining)
        if slices:
            domain.slices_wl = capacity
        else:
            domain.pods_wl = capacity
        domain.leaders = min(domain.leaders, leaders)
        _set_primary(domain, slices, capacity)
        domain.pods = capacity * (size if slices else 1)
        state[1] -= domain.leaders
        state[0] -= capacity
        return domain, False

    @staticmethod
    def _consume_before_v0_19_1(
        domain: Domain, state: list[int], size: int, slices: bool
    ) -> Domain:
        """v0.18.2 consumeWithLeadersGeneric when the domain does not complete the request
        (tas_flavor_snapshot.go:1441-1464, v0.17.1 :1354-1377): slices are clamped and then
        subtracted, and the slice count itself is left; pods are subtracted first and then
        clamped to what is left (so the leader count clamps to 0 once the last leader is
        counted), and the domain's pod count is left as it was."""
        if slices:
            domain.slices_wl = min(domain.slices_wl, state[0])
            domain.leaders = min(domain.leaders, state[1])
            domain.pods = domain.slices_wl * size
            state[1] -= domain.leaders
            state[0] -= domain.slices_wl
            return domain
        state[0] -= domain.pods_wl
        state[1] -= domain.leaders
        domain.pods_wl = min(domain.pods_wl, state[0])
        domain.leaders = min(domain.leaders, state[1])
        return domain


def _set_primary(domain: Domain, slices: bool, value: int) -> None:
    if slices:
        domain.slices = value
    else:
        domain.pods = value


def _best_fit(
    domains: list[Domain], needed: int, leaders: int, count: Callable[[Domain], int]
) -> Domain:
    """The first domain with the smallest count that still covers `needed`, else the first."""
    best, best_count = domains[0], MAX_INT32
    for domain in domains:
        if domain.leaders < leaders:
            continue
        value = count(domain)
        if needed <= value < best_count:
            best, best_count = domain, value
    return best
