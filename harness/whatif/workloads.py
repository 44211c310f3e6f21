"""`--explain`: for each workload left pending, a verdict per pod set and the options that
would make it fit; for each admitted pod set that missed its `preferred` domain, the domains
it got and what would have fit in one.

Cost: one fit-model run for the state, then at most RUNS_PENDING runs per pending workload
and RUNS_SPREAD per spread pod set, each on a changed copy of the scenario.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from harness.html.world import World, pod_sets, worlds
from harness.results.outcome import Outcome
from harness.scenario.model import PodSet, Scenario, Workload
from harness.whatif import variants
from harness.whatif.ledger import FlavorLedger, Holder, build_ledgers
from harness.whatif.nodes import tolerate_option, uncordon_option
from harness.whatif.options import (
    Option,
    count_option,
    flavor_options,
    free_option,
    quota_holders,
    relax_option,
    spans_of,
)
from harness.whatif.verdict import Verdict, candidate_ledgers, judge, mode_and_level

RUNS_PENDING = 16
"""Fit-model runs per pending workload: freeing (greedy plus pruning, up to ~6), relaxing
(1 per pod set), the largest count (~log2(count)), tolerating taints and uncordoning (1
each), another flavor (up to 2). The options found when it runs out stand."""
RUNS_SPREAD = 8
FREE_RUNS = 6
"""Of those, freeing may spend: its proposal, quota holders added one by one, pruning."""
COUNT_RUNS = 6
"""And the count search (about log2(count) runs; a count found when they run out is shown
as a lower bound)."""


@dataclass
class Explanation:
    workload: str
    state: str  # pending | rejected | spread
    message: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    runs: int = 0
    limit: int = 0
    queue: str = ""
    quota_held_by: list[Holder] = field(default_factory=list)
    """Where Kueue's message is about quota: its ClusterQueue's admitted workloads."""


def explain(
    scenario: Scenario,
    final: Mapping[str, Outcome],
    names: Sequence[str] | None = None,
    shown: Mapping[str, str] | None = None,
) -> dict[str, Explanation]:
    """Explanations of the named submitted workloads (default: all) in their final state;
    `shown`: workload names as the user knows them (a snapshot's namespace/name)."""
    shown = shown or {}
    base = variants.quiet(scenario)
    world = worlds(scenario)[-1]
    shapes = pod_sets(scenario)
    mine = {w.name: w for w in variants.submitted_workloads(scenario)}
    ledgers = build_ledgers(scenario, world.nodes, world.usage, final, shapes, shown=shown)
    out: dict[str, Explanation] = {}
    for name in names if names is not None else list(mine):
        w, outcome = mine.get(name), final.get(name)
        if w is None or outcome is None:
            continue
        if outcome.rejected:
            out[name] = Explanation(name, "rejected", outcome.message)
        elif not outcome.admitted:
            out[name] = _pending(base, w, outcome, ledgers, final, shown)
        else:
            spread = _spread(base, w, outcome, world, final, shapes, shown)
            if spread is not None:
                out[name] = spread
    return out


def _pending(
    base: Scenario,
    w: Workload,
    outcome: Outcome,
    ledgers: Mapping[str, FlavorLedger],
    final: Mapping[str, Outcome],
    shown: Mapping[str, str],
) -> Explanation:
    verdicts = []
    for p in w.pod_sets:
        mode, _ = mode_and_level(p)
        verdicts.append(judge(p, candidate_ledgers(base, w, p, ledgers), mode != "required"))
    budget = variants.Budget(RUNS_PENDING, preempted=_preempted(final))
    # Kueue's quota messages all say "quota" ("insufficient quota", "... unused quota").
    quota = quota_holders(base, w, final, shown) if "quota" in outcome.message else []
    options = all_options(base, w, ledgers, verdicts, budget, quota=quota)
    return Explanation(
        w.name,
        "pending",
        outcome.message,
        verdicts,
        options,
        budget.used,
        budget.limit,
        w.queue,
        quota,
    )


def _spread(
    base: Scenario,
    w: Workload,
    outcome: Outcome,
    world: World,
    final: Mapping[str, Outcome],
    shapes: Mapping[str, Mapping[str, PodSet]],
    shown: Mapping[str, str],
) -> Explanation | None:
    """Admitted pod sets whose `preferred` level it could not keep to one domain; the
    verdict counts what each domain would hold without the workload's own pods."""
    spread_sets = []
    ledgers: dict[str, FlavorLedger] | None = None
    for p in w.pod_sets:
        mode, level = mode_and_level(p)
        if mode != "preferred" or level is None:
            continue
        if ledgers is None:
            ledgers = build_ledgers(
                base, world.nodes, world.usage, final, shapes, leave_out=w.name, shown=shown
            )
        v = judge(p, candidate_ledgers(base, w, p, ledgers), whole_flavor=False)
        flavor = outcome.flavors.get(p.name) or v.flavor or ""
        v.spans = spans_of(ledgers.get(flavor), level, outcome.placement.get(p.name, {}))
        if len(v.spans) > 1:
            spread_sets.append(v)
    if not spread_sets or ledgers is None:
        return None
    budget = variants.Budget(RUNS_SPREAD, preempted=_preempted(final))
    options: list[Option] = []
    for v in spread_sets:
        one = variants.required(base, w.name, v.pod_set.name)
        options += all_options(one, w, ledgers, [v], budget, relax=False)
    return Explanation(w.name, "spread", "", spread_sets, options, budget.used, budget.limit)


def all_options(
    base: Scenario,
    w: Workload,
    ledgers: Mapping[str, FlavorLedger],
    verdicts: list[Verdict],
    budget: variants.Budget,
    relax: bool = True,
    quota: Sequence[Holder] = (),
) -> list[Option]:
    """Every option found within the budget, in the order: free, relax, count, tolerate,
    uncordon, flavor. `quota`: what holds its ClusterQueue's quota, freed after what holds
    its nodes (where Kueue's message says quota is short)."""

    def check_with(share: variants.Budget) -> Callable[[Scenario], variants.Seen | None]:
        return lambda changed: share.admits(changed, w.name)

    check = check_with(budget)
    short = [v for v in verdicts if v.fits < v.count] or verdicts
    many = len(w.pod_sets) > 1
    searches: list[Callable[[], Option | list[Option] | None]] = []
    freeing = check_with(budget.share(FREE_RUNS))
    searches.append(lambda: free_option(base, w.name, ledgers, short, freeing, quota))
    for v in short:
        if relax:
            searches.append(partial(relax_option, base, w.name, v, ledgers, check, many))
        counting = check_with(budget.share(COUNT_RUNS))
        searches.append(partial(count_option, base, w.name, v, counting, many))
    for v in short[:1]:
        searches.append(partial(tolerate_option, base, w.name, v, ledgers, check, many))
        searches.append(partial(uncordon_option, base, v, ledgers, check))
        searches.append(partial(flavor_options, base, w, v, ledgers, check))
    found: list[Option] = []
    for search in searches:
        try:
            result = search()
        except variants.OutOfRuns:
            continue  # this search's share (or the whole budget) is spent; what was found stands
        found += result if isinstance(result, list) else [result] if result else []
    return found


def _preempted(final: Mapping[str, Outcome]) -> frozenset[str]:
    return frozenset(n for n, o in final.items() if o.preempted)
