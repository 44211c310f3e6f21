"""Changed copies of a scenario, and one fit-model run that says whether a workload is then
admitted: the check behind every "would fit if".

A variant changes only what it names (a usage entry or workload gone, one pod set's mode,
count or flavor list); everything else, the steps included, stays, so the answer is the
model's own for that world. Runs are counted against a budget: an explanation costs at most
`Budget.limit` fit-model runs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from harness.errors import HarnessError
from harness.fit import fit
from harness.results.outcome import Outcome
from harness.scenario.model import (
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    ResourceGroup,
    Scenario,
    Step,
    TopologyRequest,
    Usage,
    Workload,
)
from harness.whatif.ledger import Holder


class OutOfRuns(Exception):
    """The explanation spent its fit-model runs; the options found so far stand."""


@dataclass(frozen=True)
class Seen:
    """The workload admitted in a variant: its outcome, and the workloads the variant
    preempted that the real state did not."""

    outcome: Outcome
    preempts: tuple[str, ...] = ()


@dataclass
class Budget:
    """Fit-model runs an explanation may spend; `share` gives one option a smaller part of
    them (every run counts against both)."""

    limit: int
    used: int = 0
    preempted: frozenset[str] = frozenset()
    """Workloads already preempted in the real state (not news in a variant)."""
    parent: Budget | None = None

    def share(self, limit: int) -> Budget:
        return Budget(limit, 0, self.preempted, self)

    def _spend(self) -> None:
        if self.used >= self.limit:
            raise OutOfRuns
        if self.parent is not None:
            self.parent._spend()
        self.used += 1

    def admits(self, scenario: Scenario, name: str) -> Seen | None:
        """What the variant does with the workload once settled (after the last step) when it
        admits it; None when it does not, or the model cannot answer the variant (a tie
        Kueue breaks at random, ...)."""
        self._spend()
        try:
            result = fit(scenario)
        except HarnessError:
            return None
        final = result.steps[-1] if result.steps else result.outcomes
        outcome = final.get(name)
        if outcome is None or not outcome.admitted:
            return None
        news = {n for n, o in final.items() if o.preempted} - self.preempted - {name}
        return Seen(outcome, tuple(sorted(news)))


def quiet(scenario: Scenario) -> Scenario:
    """The scenario without expectations (a variant's answer is not compared with them)."""
    steps = tuple(replace(s, expect=None) for s in scenario.steps)
    return replace(scenario, expect=None, steps=steps)


def without(scenario: Scenario, holders: Collection[Holder]) -> Scenario:
    """The scenario without these usage entries and workloads (and the steps about them)."""
    gone_usage = [h.ref for h in holders if h.kind == "usage"]
    gone = {h.name for h in holders if h.kind == "workload"}

    def kept(step: Step) -> bool:
        target = step.target
        if isinstance(target, Usage):
            return not any(target is u for u in gone_usage)
        if isinstance(target, Workload):
            return target.name not in gone
        return not (isinstance(target, str) and target in gone)

    return replace(
        scenario,
        usage=tuple(u for u in scenario.usage if not any(u is g for g in gone_usage)),
        workloads=tuple(w for w in scenario.workloads if w.name not in gone),
        admitted=tuple(a for a in scenario.admitted if a.name not in gone),
        steps=tuple(s for s in scenario.steps if kept(s)),
    )


def with_pod_set(
    scenario: Scenario, workload: str, pod_set: str, change: Callable[[PodSet], PodSet]
) -> Scenario:
    """The scenario with one pod set of one workload (submitted or in a submit step) changed."""

    def changed(w: Workload) -> Workload:
        if w.name != workload:
            return w
        return replace(w, pod_sets=tuple(change(p) if p.name == pod_set else p for p in w.pod_sets))

    steps = tuple(
        replace(s, target=changed(s.target)) if isinstance(s.target, Workload) else s
        for s in scenario.steps
    )
    return replace(scenario, workloads=tuple(map(changed, scenario.workloads)), steps=steps)


def with_mode(scenario: Scenario, workload: str, pod_set: str, mode: str) -> Scenario:
    """The pod set's topology mode changed (same level), with every pod set of its group:
    Kueue's webhook wants a group's members to ask the same."""
    members = {pod_set}
    for w in submitted_workloads(scenario):
        if w.name != workload:
            continue
        mine = [p.topology.group for p in w.pod_sets if p.name == pod_set and p.topology]
        group = mine[0] if mine else None
        if group is not None:
            members |= {p.name for p in w.pod_sets if p.topology and p.topology.group == group}
    out = scenario
    for name in sorted(members):
        out = with_pod_set(out, workload, name, lambda p: _moded(p, mode))
    return out


def _moded(p: PodSet, mode: str) -> PodSet:
    return replace(p, topology=replace(p.topology or TopologyRequest(), mode=mode))


def relaxed(scenario: Scenario, workload: str, pod_set: str) -> Scenario:
    """The pod set's required topology made preferred."""
    return with_mode(scenario, workload, pod_set, "preferred")


def required(scenario: Scenario, workload: str, pod_set: str) -> Scenario:
    """The pod set's preferred topology made required."""
    return with_mode(scenario, workload, pod_set, "required")


def submitted_workloads(scenario: Scenario) -> list[Workload]:
    """The workloads the scenario submits (at the start and in `submit` steps)."""
    steps = [s.target for s in scenario.steps if isinstance(s.target, Workload)]
    return [*scenario.workloads, *steps]


def with_count(scenario: Scenario, workload: str, pod_set: str, count: int) -> Scenario:
    return with_pod_set(scenario, workload, pod_set, lambda p: replace(p, count=count))


def with_flavor_first(
    scenario: Scenario, queue: str, group_index: int, flavor: str, quota_of: str
) -> Scenario:
    """The ClusterQueue's resource group with `flavor` tried first; a flavor it did not list
    is added with the quota `quota_of` has there."""
    cq = scenario.cluster_queue(queue)
    group = cq.resource_groups[group_index]
    listed = {f.name: f for f in group.flavors}
    first = listed.get(flavor) or FlavorQuotas(flavor, listed[quota_of].resources)
    flavors = (first, *(f for f in group.flavors if f.name != flavor))
    groups = list(cq.resource_groups)
    groups[group_index] = ResourceGroup(group.covered, flavors)
    changed: ClusterQueue = replace(cq, resource_groups=tuple(groups))
    queues = tuple(changed if c.name == queue else c for c in scenario.cluster_queues)
    return replace(scenario, cluster_queues=queues)
