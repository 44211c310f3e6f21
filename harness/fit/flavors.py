"""Kueue v0.19.2's flavor assignment across resource groups and flavors, before topology
(rules §4.1-4.4, §4.7: pkg/scheduler/flavorassigner/flavorassigner.go assignFlavors,
findFlavorForPodSets, checkFlavorForPodSets, fitsResourceQuota, isPreferred,
shouldTryNextFlavor).

Preemption is not searched here: a flavor short of unused quota where Kueue would ask its
preemption oracle is given `no_candidates`, which is what the oracle answers for a
ClusterQueue whose preemption policies are all Never. Callers refuse other policies until
the victim search exists. Scan progress (rules §4.5): `start` gives, per resource group, the
flavor to start at; `Assignment.tried` the last flavor looked at (-1: the last one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.fit.cohort import FlavorResource, QuotaBook
from harness.quantity import format_kueue_units, kueue_units
from harness.scenario import ClusterQueue, Flavor, PodSet, ResourceGroup, Scenario, Workload

NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
"""Kueue's preemptionMode, worst first."""


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


def is_preferred(a: Mode, b: Mode | None) -> bool:
    """`isPreferred` without a fungibility preference."""
    if a.preemption == NO_FIT:
        return False
    if b is None or b.preemption == NO_FIT:
        return True
    if (a.preemption == NO_CANDIDATES) != (b.preemption == NO_CANDIDATES):
        return b.preemption == NO_CANDIDATES
    if a.preemption != b.preemption:
        return a.preemption > b.preemption
    return a.borrow < b.borrow


def worst(a: Mode, b: Mode) -> Mode:
    """The representative of two modes: the one not preferred."""
    return b if is_preferred(a, b) else a


def fnv1a64(text: str) -> int:
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) % 2**64
    return value


def resource_order(names: list[str]) -> list[str]:
    """Kueue keeps a workload's requests in FNV-1a-64 order of the name, ties by name."""
    return sorted(names, key=lambda n: (fnv1a64(n), n))


@dataclass
class Assignment:
    """Per pod set: resource -> flavor, the visible mode and the reasons it is not Fit;
    `usage` is the quota the assignment takes; `borrowing` whether any fr borrows."""

    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    modes: dict[str, Mode] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    tried: dict[int, int] = field(default_factory=dict)

    @property
    def mode(self) -> Mode:
        out = Mode(FIT)
        for mode in self.modes.values():
            out = worst(out, mode)
        return out

    @property
    def borrowing(self) -> bool:
        return any(m.borrow > 0 for m in self.modes.values())

    def message(self, order: list[str]) -> str:
        """Kueue's pending message: pod sets not Fit, in order (rules §4.7)."""
        return "; ".join(
            f"couldn't assign flavors to pod set {name}: {', '.join(sorted(self.reasons[name]))}"
            for name in order
            if name in self.reasons and self.modes.get(name, Mode(NO_FIT)).visible != "Fit"
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
    return all(scenario.resource_flavor(n).topology_name is not None for n in names)


def flavor_problem(
    scenario: Scenario, cq: ClusterQueue, group: ResourceGroup, flavor: Flavor, pod_set: PodSet
) -> str | None:
    """`checkFlavorForPodSets` for one pod set: the first reason the flavor is ruled out."""
    tas = requests_tas(cq, scenario, pod_set)
    topology = scenario.topology_of(flavor)
    if tas and topology is None:
        if any(r in pod_set.requests for r in group.covered):
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
    elif tas and topology is not None:
        tr = pod_set.topology
        wanted = [lv for lv in (tr.level, tr.slice_level) if lv] if tr else []
        if any(level not in topology.levels for level in wanted):
            return f'Flavor "{flavor.name}" does not contain the requested level'
    elif topology is not None:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    for taint in flavor.node_taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in (*pod_set.tolerations, *flavor.tolerations)):
            return f"untolerated taint {taint.render()} in flavor {flavor.name}"
    labels = flavor.node_labels
    if any(k in labels and labels[k] != v for k, v in pod_set.node_selector.items()):
        return f"flavor {flavor.name} doesn't match node affinity"
    return None


def fits_resource_quota(
    book: QuotaBook, cq: ClusterQueue, fr: FlavorResource, assumed: int, value: int
) -> tuple[Mode, str | None]:
    """`fitsResourceQuota` for one fr, without the preemption oracle (see the module)."""
    name, flavor = fr[1], fr[0]
    total = assumed + value
    cap = book.potential(cq.name, fr)
    if total > cap:
        return Mode(NO_FIT), (
            f"insufficient quota for {name} in flavor {flavor}, previously considered podsets "
            f"requests ({format_kueue_units(name, assumed)}) + current podset request "
            f"({format_kueue_units(name, value)}) > maximum capacity "
            f"({format_kueue_units(name, cap)})"
        )
    borrow = book.borrow_height(cq.name, fr, total)
    available = book.available(cq.name, fr)
    if total <= available:
        return Mode(FIT, borrow), None
    reason = (
        f"insufficient unused quota for {name} in flavor {flavor}, "
        f"{format_kueue_units(name, total - available)} more needed"
    )
    considered = book.nominal(cq.name, fr) >= total or cq.preemption.borrow_within_cohort != "Never"
    return Mode(NO_CANDIDATES if considered else NO_FIT, borrow), reason


def should_try_next(cq: ClusterQueue, mode: Mode) -> bool:
    if mode.preemption in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.preemption in (PREEMPT, RECLAIM) and (
        cq.fungibility.when_can_preempt == "TryNextFlavor"
    ):
        return True
    return mode.borrow > 0 and cq.fungibility.when_can_borrow == "TryNextFlavor"


def group_requests(cq: ClusterQueue, members: list[PodSet]) -> dict[str, int]:
    """What a pod set group asks of the ClusterQueue, in Kueue's units."""
    covers_pods = cq.group_of("pods") is not None
    total: dict[str, int] = {}
    for ps in members:
        for name, quantity in ps.requests.items():
            total[name] = total.get(name, 0) + kueue_units(name, quantity) * ps.count
        if covers_pods:
            total["pods"] = total.get("pods", 0) + ps.count
    return total


def assign_flavors(
    scenario: Scenario,
    book: QuotaBook,
    workload: Workload,
    start: Mapping[int, int] | None = None,
) -> Assignment:
    """Kueue's `assignFlavors` up to (not including) the TAS step."""
    cq = scenario.cluster_queue(workload.queue)
    out = Assignment()
    groups: dict[str, list[PodSet]] = {}
    for ps in workload.pod_sets:
        key = ps.topology.group if ps.topology and ps.topology.group else f"\0{ps.name}"
        groups.setdefault(key, []).append(ps)
    for members in groups.values():
        requests = group_requests(cq, members)
        chosen: dict[int, tuple[str, Mode]] = {}
        for resource in resource_order(list(requests)):
            value = requests[resource]
            group = cq.group_of(resource)
            if group is None:
                if value > 0:
                    return _fail(out, members, [f"resource {resource} unavailable in ClusterQueue"])
                continue
            index = cq.resource_groups.index(group)
            if index in chosen:
                continue
            first = (start or {}).get(index, 0)
            found = _choose(scenario, book, cq, group, members, requests, out.usage, first)
            out.tried[index] = found[-1]
            flavor, mode, reasons, _ = found
            if flavor is None:
                return _fail(out, members, reasons)
            chosen[index] = (flavor, mode)
            for ps in members:
                out.flavors.setdefault(ps.name, {}).update(
                    {r: flavor for r in group.covered if r in requests}
                )
                out.modes[ps.name] = worst(out.modes.get(ps.name, Mode(FIT)), mode)
                if reasons:
                    out.reasons.setdefault(ps.name, []).extend(reasons)
            for r in group.covered:
                if r in requests:
                    fr = (flavor, r)
                    out.usage[fr] = out.usage.get(fr, 0) + requests[r]
        for ps in members:
            out.modes.setdefault(ps.name, Mode(FIT))
    return out


def _choose(
    scenario: Scenario,
    book: QuotaBook,
    cq: ClusterQueue,
    group: ResourceGroup,
    members: list[PodSet],
    requests: Mapping[str, int],
    assumed: Mapping[FlavorResource, int],
    first: int = 0,
) -> tuple[str | None, Mode, list[str], int]:
    """`findFlavorForPodSets`: the chosen flavor (None when no flavor can hold the group),
    its mode, every reason seen on the way, and the index of the last flavor looked at
    (-1 when that was the group's last flavor)."""
    reasons: list[str] = []
    best: tuple[str, Mode] | None = None
    looked = first
    for looked in range(first, len(group.flavors)):
        fq = group.flavors[looked]
        flavor = scenario.resource_flavor(fq.name)
        problem = next(
            (p for ps in members if (p := flavor_problem(scenario, cq, group, flavor, ps))),
            None,
        )
        if problem is not None:
            reasons.append(problem)
            continue
        mode = Mode(FIT)
        for resource in resource_order([r for r in group.covered if r in requests]):
            fr = (fq.name, resource)
            got, reason = fits_resource_quota(book, cq, fr, assumed.get(fr, 0), requests[resource])
            mode = worst(mode, got)
            if reason:
                reasons.append(reason)
        if not should_try_next(cq, mode):
            best = (fq.name, mode)
            break
        if is_preferred(mode, best[1] if best else None):
            best = (fq.name, mode)
    tried = -1 if looked == len(group.flavors) - 1 else looked
    if best is None:
        return None, Mode(NO_FIT), reasons, tried
    return best[0], best[1], [] if best[1].preemption == FIT else reasons, tried


def _fail(out: Assignment, members: list[PodSet], reasons: list[str]) -> Assignment:
    """A resource group found no flavor: its reasons alone, and assignment stops."""
    out.reasons = {ps.name: list(reasons) for ps in members}
    out.modes = {**out.modes, **{ps.name: Mode(NO_FIT) for ps in members}}
    return out
