"""Kueue v0.19.2's flavor assignment across resource groups and flavors, before topology
(rules §4.1-4.5, §4.7: pkg/scheduler/flavorassigner/flavorassigner.go assignFlavors,
findFlavorForPodSets, checkFlavorForPodSets, fitsResourceQuota, isPreferred,
shouldTryNextFlavor).

Where Kueue asks its preemption oracle (a flavor short of unused quota that preemption might
free), `assign_flavors` calls the `oracle` it is given (harness.fit.victims); without one the
answer is "no candidates", exact for ClusterQueues whose policies are all Never. Scan
progress (rules §4.5): `Assignment.tried` records, per pod set and resource, the last flavor
looked at (-1: the group's last); `start` is where the next scan of each begins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.errors import Nondeterministic
from harness.fit.amount import add, format_amount, sub
from harness.fit.cohort import FlavorResource, QuotaBook
from harness.fit.request import pod_set_groups
from harness.fit.resource_transform import counted, pod_quota
from harness.k8s.quantity import format_kueue_units
from harness.kueue.quota_requests import pod_set_units
from harness.scenario.model import ClusterQueue, Flavor, PodSet, ResourceGroup, Scenario, Workload

NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
"""Kueue's preemptionMode, worst first."""

ScanKey = tuple[int, str]
"""(slot, resource). Kueue appends one record per pod set in assignment order (groups in
order of first appearance) and looks a group's start up at the slot numbered like the
group's first pod set index, for the resource being assigned: where groups reorder pod
sets, or a group's first pod set lacks that resource, the lookup misses and the scan starts
at the first flavor again (workload.go: NextFlavorToTryForPodSetResource)."""


@dataclass(frozen=True, order=True)
class Mode:
    """Granular mode: preemption mode and borrowing height (rules §4.4)."""

    preemption: int
    borrow: int = 0

    @property
    def visible(self) -> str:
        if self.preemption == NO_FIT:
            return "NoFit"
        return "Fit" if self.preemption == FIT else "Preempt"


Oracle = Callable[[FlavorResource, int], Mode]
"""Kueue's SimulatePreemption for one fr and amount: NO_CANDIDATES, PREEMPT or RECLAIM, with
the borrowing height after removing the victims found."""


def is_preferred(a: Mode, b: Mode | None, preference: str | None = None) -> bool:
    """`isPreferred`: a flavor without preemption candidates ranks below any viable one;
    then the ClusterQueue's flavorFungibility.preference orders the preemption mode and the
    borrowing height (BorrowingOverPreemption, the default: mode first)."""
    if a.preemption == NO_FIT:
        return False
    if b is None or b.preemption == NO_FIT:
        return True
    if (a.preemption == NO_CANDIDATES) != (b.preemption == NO_CANDIDATES):
        return b.preemption == NO_CANDIDATES
    if preference == "PreemptionOverBorrowing" and a.borrow != b.borrow:
        return a.borrow < b.borrow
    if a.preemption != b.preemption:
        return a.preemption > b.preemption
    return a.borrow < b.borrow


def worst(a: Mode, b: Mode, preference: str | None = None) -> Mode:
    """The representative of two modes: the one not preferred."""
    return b if is_preferred(a, b, preference) else a


def fnv1a64(text: str) -> int:
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) % 2**64
    return value


def resource_order(names: list[str]) -> list[str]:
    """Kueue keeps a workload's requests in FNV-1a-64 order of the name, ties by name."""
    return sorted(names, key=lambda n: (fnv1a64(n), n))


@dataclass
class Attempt:
    """One flavor looked at for a pod set group (for --explain): its mode and reasons."""

    flavor: str
    mode: Mode
    reasons: list[str]


@dataclass
class Assignment:
    """Per pod set: resource -> flavor, resource -> granular mode, and the reasons it is not
    Fit; `error` a pod set whose assignment failed outright; `usage` the quota it takes."""

    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    resource_modes: dict[str, dict[str, Mode]] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    error: tuple[str, str] | None = None
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    tried: dict[ScanKey, int] = field(default_factory=dict)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    borrow: int = 0
    forced: Mode | None = None
    """The mode the TAS step set last (Kueue caches it as the representative mode)."""
    before_tas: bool = False
    """`assignFlavors` returned before the TAS step: a pod set asks for resources yet got no
    flavor and no failure (all skipped as undeclared: IgnoreUndeclared, or zero). The groups
    after it get no assignment at all (`resource_modes` lacks them)."""

    def pod_set_mode(self, name: str) -> Mode:
        """`PodSetAssignment.RepresentativeMode`: Fit without reasons (whatever its flavors
        say), NoFit on error or without flavors, else the worst of its resources."""
        if self.error is not None and self.error[0] == name:
            return Mode(NO_FIT)
        if not self.reasons.get(name):
            return Mode(FIT)
        modes = self.resource_modes.get(name)
        if not modes:
            return Mode(NO_FIT)
        out = Mode(FIT)
        for mode in modes.values():
            out = worst(out, mode)
        return out

    @property
    def mode(self) -> Mode:
        """`Assignment.RepresentativeMode`: the cached one, else the worst pod set."""
        if self.forced is not None:
            return self.forced
        out = Mode(FIT)
        for name in self.resource_modes:
            out = worst(out, self.pod_set_mode(name))
        return out

    def fail(self, pod_set: str, error: str, recompute: bool = True) -> None:
        """`psError`: the pod set's assignment failed; the representative mode is recomputed
        (`recompute`, from v0.18; before, the mode cached by then stands)."""
        if self.error is None:
            self.error = (pod_set, error)
        if recompute:
            self.forced = None

    @property
    def modes(self) -> dict[str, Mode]:
        return {name: self.pod_set_mode(name) for name in self.resource_modes}

    @property
    def borrowing(self) -> bool:
        return self.borrow > 0

    def set_mode(self, pod_set: str, preemption: int) -> None:
        """`updateMode`: every resource of the pod set gets this mode, and so does the
        assignment (the TAS step)."""
        modes = self.resource_modes.get(pod_set, {})
        for resource, mode in modes.items():
            modes[resource] = Mode(preemption, mode.borrow)
        self.forced = Mode(preemption)

    def needs_preemption(self) -> set[FlavorResource]:
        """`flavorResourcesNeedPreemption`: every fr whose visible mode is Preempt."""
        return {
            (self.flavors[ps][r], r)
            for ps, modes in self.resource_modes.items()
            for r, mode in modes.items()
            if mode.visible == "Preempt"
        }

    def message(self, order: list[str]) -> str:
        """Kueue's pending message: pod sets with reasons, in order (rules §4.7)."""
        if self.error is not None:
            return f"failed to assign flavors to pod set {self.error[0]}: {self.error[1]}"
        return "; ".join(
            f"couldn't assign flavors to pod set {name}: {', '.join(sorted(self.reasons[name]))}"
            for name in order
            if self.reasons.get(name)
        )

    def pod_set_flavor(self, name: str) -> str:
        """The flavors of a pod set, one per resource group, joined by ','."""
        return ",".join(dict.fromkeys(self.flavors.get(name, {}).values()))


def requests_tas(cq: ClusterQueue, scenario: Scenario, pod_set: PodSet) -> bool:
    """A pod set requests TAS with a topology request, or when every flavor of its
    ClusterQueue has a topology (`IsTASOnly`)."""
    if pod_set.topology is not None:
        return True
    names = [f.name for g in cq.resource_groups for f in g.flavors]
    return all(is_tas_flavor(scenario, n) for n in names)


def is_tas_flavor(scenario: Scenario, name: str) -> bool:
    """A ResourceFlavor with a topology; one no ResourceFlavor is named after is not
    (`updateFlavorMetadata` tracks only existing flavors, pkg/cache/scheduler/clusterqueue.go)."""
    flavor = next((f for f in scenario.resource_flavors if f.name == name), None)
    return flavor is not None and flavor.topology_name is not None


def flavor_problem(
    scenario: Scenario, cq: ClusterQueue, group: ResourceGroup, flavor: Flavor, pod_set: PodSet
) -> str | None:
    """`checkFlavorForPodSets` for one pod set: the first reason the flavor is ruled out."""
    tas = requests_tas(cq, scenario, pod_set)
    topology = scenario.topology_of(flavor)
    if tas and topology is None:
        # the pod's own requests, not its quota view (hasOverlapWithPodRequestedResources):
        # a flavor without a topology may hold a transformation's quota-only outputs
        if any(r in pod_set.requests for r in group.covered):
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
    elif tas and topology is not None:
        tr = pod_set.topology
        wanted = [lv for lv in (tr.level, tr.slice_level) if lv] if tr else []
        if any(level not in topology.levels for level in wanted):
            return f'Flavor "{flavor.name}" does not contain the requested level'
    elif not tas and topology is not None:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    for taint in flavor.node_taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in (*pod_set.tolerations, *flavor.tolerations)):
            # Kueue formats the corev1.Taint value with %s: Go prints the struct's fields
            # (TimeAdded is a nil pointer), not Taint.ToString (checked with k8s.io/api v0.36.2).
            shown = f"{{{taint.key} {taint.value} {taint.effect} <nil>}}"
            return f"untolerated taint {shown} in flavor {flavor.name}"
    labels = flavor.node_labels
    if any(k in labels and labels[k] != v for k, v in pod_set.node_selector.items()):
        return f"flavor {flavor.name} doesn't match node affinity"
    return None


def fits_resource_quota(
    book: QuotaBook,
    cq: ClusterQueue,
    fr: FlavorResource,
    assumed: int,
    value: int,
    oracle: Oracle | None = None,
    fair_sharing: bool = False,
) -> tuple[Mode, str | None]:
    """`fitsResourceQuota` for one fr; the oracle answers where preemption may help
    (`canPreemptWhileBorrowing`: also beyond nominal with fair sharing and reclaim)."""
    name, flavor = fr[1], fr[0]
    total = add(assumed, value)
    cap = book.potential(cq.name, fr)
    if total > cap:
        return Mode(NO_FIT), (
            f"insufficient quota for {name} in flavor {flavor}, previously considered podsets "
            f"requests ({format_amount(name, assumed)}) + current podset request "
            f"({format_kueue_units(name, value)}) > maximum capacity "
            f"({format_amount(name, cap)})"
        )
    borrow, may_reclaim = book.lowest_fitting_subtree(cq.name, fr, total)
    available = book.available(cq.name, fr)
    if total <= available:
        return Mode(FIT, borrow), None
    reason = (
        f"insufficient unused quota for {name} in flavor {flavor}, "
        f"{format_amount(name, sub(total, available))} more needed"
    )
    considered = (
        book.nominal(cq.name, fr) >= total
        or may_reclaim  # a cohort below the root holds it: reclaim in the hierarchy
        or cq.preemption.borrow_within_cohort != "Never"
        or (fair_sharing and cq.preemption.reclaim_within_cohort != "Never")
    )
    if not considered:
        return Mode(NO_FIT, borrow), reason
    if oracle is None:
        return Mode(NO_CANDIDATES, borrow), reason
    return oracle(fr, total), reason


def should_try_next(cq: ClusterQueue, mode: Mode) -> bool:
    if mode.preemption in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.preemption in (PREEMPT, RECLAIM) and (
        cq.fungibility.when_can_preempt == "TryNextFlavor"
    ):
        return True
    return mode.borrow > 0 and cq.fungibility.when_can_borrow == "TryNextFlavor"


def pod_set_requests(scenario: Scenario, cq: ClusterQueue, pod_set: PodSet) -> dict[str, int]:
    """What a pod set asks of the ClusterQueue, in Kueue's units (`pods` when covered): its
    quota view (resource_transform), per pod in Kueue's units, times the count."""
    total = {
        name: pod_set_units(name, q, pod_set.count)
        for name, q in pod_quota(scenario, pod_set).items()
        if counted(scenario, cq, name)
    }
    if cq.group_of("pods") is not None:
        total["pods"] = pod_set.count
    return total


@dataclass
class _Search:
    """What one flavor search needs besides the flavors themselves."""

    scenario: Scenario
    book: QuotaBook
    cq: ClusterQueue
    oracle: Oracle | None
    pinned: Mapping[str, Mapping[str, str]] | None
    past_no_fit: bool = True
    """KueueRules.quota_reasons_past_no_fit: False before v0.19."""
    fair_sharing: bool = False


def assign_flavors(
    scenario: Scenario,
    book: QuotaBook,
    workload: Workload,
    start: Mapping[ScanKey, int] | None = None,
    oracle: Oracle | None = None,
    pinned: Mapping[str, Mapping[str, str]] | None = None,
    past_no_fit: bool = True,
    grouped_borrows: bool = True,
    start_in_order: bool = True,
    fair_sharing: bool = False,
) -> Assignment:
    """Kueue's `assignFlavors` up to (not including) the TAS step. `pinned` is the
    nomination mapping of a same-cycle recompute (rules §3.4 step 1). `grouped_borrows`
    False (before v0.19.1, kueue#13859; KueueRules.grouped_pod_set_borrows_flavor): a group
    member requesting nothing keeps no flavor (v0.18.2 flavorassigner.go:714, v0.17.1 :673
    filter the group's flavors by its own requests). `start_in_order` False (before v0.19;
    KueueRules.scan_start_in_request_order): a resource group's scan starts at the furthest
    record of the resources it covers."""
    cq = scenario.cluster_queue(workload.queue)
    search = _Search(scenario, book, cq, oracle, pinned, past_no_fit, fair_sharing)
    out = Assignment()
    slot = 0
    for indices in pod_set_groups(workload.pod_sets):
        members = [workload.pod_sets[i] for i in indices]
        own = {ps.name: pod_set_requests(scenario, cq, ps) for ps in members}
        requests: dict[str, int] = {}
        for values in own.values():
            for r, v in values.items():
                requests[r] = requests.get(r, 0) + v
        chosen: dict[str, tuple[str, Mode]] = {}
        looked_at: dict[int, int] = {}
        reasons: list[str] = []
        failed: list[str] | None = None
        failures: list[list[str]] = []  # before v0.19: every failing source, see below
        failed_groups: set[int] = set()
        for resource in resource_order(list(requests)):
            if failed is not None:
                if start_in_order:
                    break
                failures.append(failed)
                failed = None
            group = cq.group_of(resource)
            if group is None:
                if requests[resource] != 0:  # a negative one too (no floor before v0.19)
                    failed = [f"resource {resource} unavailable in ClusterQueue"]
                continue
            index = cq.resource_groups.index(group)
            if resource in chosen or index in failed_groups:
                continue
            first = (start or {}).get((indices[0], resource), 0)
            if not start_in_order:
                first = max(
                    (start or {}).get((indices[0], r), 0) for r in requests if r in group.covered
                )
            found = _choose(search, group, members, requests, out.usage, first, out.attempts)
            flavor, modes, group_reasons, looked = found
            if flavor is None:
                failed = group_reasons
                failed_groups.add(index)
                continue
            looked_at[index] = looked
            reasons += group_reasons
            for r, mode in modes.items():
                chosen[r] = (flavor, mode)
        if failed is not None:
            failures.append(failed)
        failed = _first_failure(scenario, failures)
        for ps in members:
            out.reasons[ps.name] = list(failed if failed is not None else reasons)
            mine = {r: chosen[r] for r in own[ps.name] if r in chosen}
            # Its requests as Kueue holds them (`Requests.Len()`): resources IgnoreUndeclared
            # skips count too, so a pod set asking only for those is not one "requesting
            # nothing" that borrows its group's TAS flavor (resolvePodSetFlavors).
            asks = bool(own[ps.name]) or bool(pod_quota(scenario, ps))
            if failed is not None:
                mine = {}
            elif not asks and ps.topology is not None and ps.topology.group and grouped_borrows:
                mine = _tas_only(scenario, chosen)
            out.flavors[ps.name] = {r: f for r, (f, _) in mine.items()}
            out.resource_modes[ps.name] = {r: m for r, (_, m) in mine.items()}
            for r, (f, m) in mine.items():
                out.usage[(f, r)] = out.usage.get((f, r), 0) + own[ps.name].get(r, 0)
                out.borrow = max(out.borrow, m.borrow)
                group = cq.group_of(r)
                assert group is not None
                out.tried[(slot, r)] = looked_at[cq.resource_groups.index(group)]
            slot += 1
            # atLeastOnePodsAssignmentFailed without an error (flavorassigner.go)
            if failed is None and not mine and asks:
                out.before_tas = True
        if failed is not None or out.before_tas:
            return out
    return out


def _tas_only(
    scenario: Scenario, chosen: Mapping[str, tuple[str, Mode]]
) -> dict[str, tuple[str, Mode]]:
    """A group member requesting nothing keeps its group's TAS flavors (resolvePodSetFlavors)."""
    return {
        r: (f, m)
        for r, (f, m) in chosen.items()
        if scenario.resource_flavor(f).topology_name is not None
    }


def _choose(
    search: _Search,
    group: ResourceGroup,
    members: list[PodSet],
    requests: Mapping[str, int],
    assumed: Mapping[FlavorResource, int],
    first: int,
    attempts: dict[str, list[Attempt]],
) -> tuple[str | None, dict[str, Mode], list[str], int]:
    """`findFlavorForPodSets`: the chosen flavor (None when no flavor can hold the group),
    the mode of each of its resources, every reason seen on the way (none when it fits), and
    the index of the last flavor looked at (-1 when that was the group's last flavor)."""
    scenario, cq = search.scenario, search.cq
    reasons: list[str] = []
    best: tuple[str, Mode, dict[str, Mode]] | None = None
    looked = first
    resources = resource_order([r for r in group.covered if r in requests])
    for looked in range(first, len(group.flavors)):
        fq = group.flavors[looked]
        if search.pinned is not None and not any(
            search.pinned.get(ps.name, {}).get(resources[0]) == fq.name for ps in members
        ):
            reasons.append(
                f"skipping flavor {fq.name} as it is not found in the nomination mapping "
                f"for resource {resources[0]}"
            )
            continue
        flavor = scenario.resource_flavor(fq.name)
        problem = next(
            (p for ps in members if (p := flavor_problem(scenario, cq, group, flavor, ps))),
            None,
        )
        if problem is not None:
            reasons.append(problem)
            _attempted(attempts, members, Attempt(fq.name, Mode(NO_FIT), [problem]))
            continue
        mode = Mode(FIT)
        per_resource: dict[str, Mode] = {}
        mine: list[str] = []
        for resource in resources:
            fr = (fq.name, resource)
            got, reason = fits_resource_quota(
                search.book,
                cq,
                fr,
                assumed.get(fr, 0),
                requests[resource],
                search.oracle,
                search.fair_sharing,
            )
            mode = worst(mode, got, cq.fungibility.preference)
            per_resource[resource] = got
            if reason:
                mine.append(reason)
        if not search.past_no_fit:
            _refuse_map_order(scenario, fq.name, per_resource, mine)
        reasons += mine
        _attempted(attempts, members, Attempt(fq.name, mode, sorted(mine)))
        if not should_try_next(cq, mode):
            best = (fq.name, mode, per_resource)
            break
        if is_preferred(mode, best[1] if best else None, cq.fungibility.preference):
            best = (fq.name, mode, per_resource)
    tried = -1 if looked == len(group.flavors) - 1 else looked
    if best is None:
        return None, {}, reasons, tried
    return best[0], best[2], [] if best[1].preemption == FIT else reasons, tried


def _first_failure(scenario: Scenario, failures: list[list[str]]) -> list[str] | None:
    """The reasons of the failing resource Kueue stops at: the first in request order from
    v0.19 (the only one collected then); before v0.19 the loop ranges over the requests map
    (v0.18.2 flavorassigner.go:679-704, v0.17.1 :645-670) and breaks at the first resource
    whose group finds no flavor or that no group covers, in Go map order: random when
    several fail with different reasons."""
    distinct = {tuple(f) for f in failures}
    if len(distinct) > 1:
        raise Nondeterministic(
            f"{scenario.path}: Kueue before v0.19 stops its flavor assignment at the first "
            "failing resource in Go map order, and several fail: "
            + " | ".join(sorted("; ".join(f) for f in distinct))
        )
    return failures[0] if failures else None


def _refuse_map_order(
    scenario: Scenario, flavor: str, per_resource: Mapping[str, Mode], reasons: list[str]
) -> None:
    """Before v0.19 the quota loop stops at the first NoFit resource in Go map order
    (KueueRules.quota_reasons_past_no_fit): with a NoFit resource and another one short,
    the message's reasons are random."""
    if len(reasons) >= 2 and any(m.preemption == NO_FIT for m in per_resource.values()):
        raise Nondeterministic(
            f"{scenario.path}: Kueue before v0.19 names in its message only the resources of "
            f"flavor {flavor} it looked at, in Go map order, before the first one that cannot "
            f"fit: {', '.join(sorted(reasons))}"
        )


def _attempted(attempts: dict[str, list[Attempt]], members: list[PodSet], attempt: Attempt) -> None:
    for ps in members:
        attempts.setdefault(ps.name, []).append(attempt)
