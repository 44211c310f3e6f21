"""What would make a pod set fit, each option checked by one fit-model run on a changed
scenario (harness/whatif/variants.py): free the fewest holders found, relax required to
preferred, the largest count that fits, another flavor.

The arithmetic of the ledger only proposes (which holders, which count to try first, which
flavor could hold it); an option is reported only when the model admitted the workload in
the changed scenario, with the placement it got there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.results.outcome import Outcome
from harness.scenario.model import Scenario, Workload
from harness.whatif import variants
from harness.whatif.ledger import (
    FlavorLedger,
    Holder,
    LeafHoldings,
    leaves_under,
    per_pod,
    pods_in_leaf,
    pods_per_domain,
)
from harness.whatif.variants import Seen
from harness.whatif.verdict import Verdict, judge, level_word

MAX_FREED = 8
"""Holders a freeing option may name; beyond that, freeing is not a useful answer."""


@dataclass
class Option:
    kind: str  # free | relax | count | flavor
    text: str
    pod_set: str | None = None
    free: tuple[Holder, ...] = ()
    count: int | None = None
    flavor: str | None = None
    spans: tuple[str, ...] = ()
    placement: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    preempts: tuple[str, ...] = ()
    """Workloads the model preempts to admit it this way."""
    largest: bool = True
    """A count option: False when the runs ran out before a larger count was ruled out."""

    def seen(self, seen: Seen) -> Option:
        """This option with where the model put the workload and whom it preempted."""
        return replace(self, placement=seen.outcome.placement, preempts=seen.preempts)


Check = Callable[[Scenario], Seen | None]


def _holders_text(holders: tuple[Holder, ...]) -> str:
    names = [h.text() for h in holders]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{joined} {'was' if len(names) == 1 else 'were'} not running"


def greedy_holders(ledger: FlavorLedger, v: Verdict, domain: tuple[str, ...]) -> list[Holder]:
    """Holders in the domain to free, most pods gained first, until the ledger says the pod
    set fits there ([] when it never does within MAX_FREED). A holder's gain is counted on
    the few leaves it holds (linear in the domain's size, not quadratic)."""
    leaves = leaves_under(ledger, domain)
    depth = len(domain) - 1 if domain else None
    on: dict[Holder, list[LeafHoldings]] = {}
    for leaf in leaves:
        for h in leaf.held:
            on.setdefault(h, []).append(leaf)
    chosen: list[Holder] = []
    now = {leaf.key: pods_in_leaf(leaf, v.pod_set, ledger.flavor)[0] for leaf in leaves}

    def have() -> int:
        return pods_per_domain(ledger, v.pod_set, depth, chosen, leaves).get(domain, 0)

    wanted = [r for r in per_pod(v.pod_set) if r != "pods"]
    while have() < v.count and len(chosen) < MAX_FREED:
        # Most pods gained; where none gains a pod alone (two owners' pods on one node), the
        # one freeing most of what the pod set asks, so the next can complete the node.
        best: tuple[int, int] = (0, 0)
        holder = None
        for h in sorted(on, key=lambda h: (h.name, h.index)):
            if h in chosen:
                continue
            gone = [*chosen, h]
            gain = sum(
                pods_in_leaf(leaf, v.pod_set, ledger.flavor, gone)[0] - now[leaf.key]
                for leaf in on[h]
            )
            units = sum(leaf.held[h].get(r, 0) for leaf in on[h] for r in wanted)
            if (gain, units) > best:
                best, holder = (gain, units), h
        if holder is None:
            return []
        chosen.append(holder)
        for leaf in on[holder]:
            now[leaf.key] = pods_in_leaf(leaf, v.pod_set, ledger.flavor, chosen)[0]
    return chosen if have() >= v.count else []


def _proposals(ledgers: Mapping[str, FlavorLedger], v: Verdict) -> list[list[Holder]]:
    """Holder sets to try for one verdict: in its best domain and the next best, smallest
    first."""
    if v.flavor is None:
        return []
    ledger = ledgers[v.flavor]
    depth = None if not v.domain else len(v.domain) - 1
    counts = pods_per_domain(ledger, v.pod_set, depth)
    ranked = sorted(counts, key=lambda d: (-counts[d], d))[:2]
    found = [greedy_holders(ledger, v, d) for d in ranked]
    return sorted((f for f in found if f), key=len)


def free_option(
    base: Scenario,
    name: str,
    ledgers: Mapping[str, FlavorLedger],
    verdicts: list[Verdict],
    check: Check,
    extra: Sequence[Holder],
) -> Option | None:
    """Free holders until the model admits the workload, then drop any it did not need.
    `extra`: holders of its quota (its ClusterQueue's admitted workloads), tried after."""
    proposal: list[Holder] = []
    for v in verdicts:
        found = _proposals(ledgers, v)
        if found:
            proposal += [h for h in found[0] if h not in proposal]
    seen = check(variants.without(base, proposal)) if proposal else None
    for holder in extra:
        if seen is not None or len(proposal) >= MAX_FREED:
            break
        if holder not in proposal:
            proposal.append(holder)
            seen = check(variants.without(base, proposal))
    if seen is None:
        return None
    for holder in reversed(list(proposal)):
        if len(proposal) == 1:
            break
        fewer = [h for h in proposal if h != holder]
        smaller = check(variants.without(base, fewer))
        if smaller is not None:
            proposal, seen = fewer, smaller
    chosen = tuple(proposal)
    return Option("free", _holders_text(chosen), free=chosen).seen(seen)


def pod_set_of(v: Verdict, many: bool) -> str:
    """Names the pod set where the workload has several."""
    return f'pod set "{v.pod_set.name}": ' if many else ""


def relax_option(
    base: Scenario,
    name: str,
    v: Verdict,
    ledgers: Mapping[str, FlavorLedger],
    check: Check,
    many: bool,
) -> Option | None:
    if v.mode != "required":
        return None
    seen = check(variants.relaxed(base, name, v.pod_set.name))
    if seen is None:
        return None
    spread = seen.outcome.placement.get(v.pod_set.name, {})
    flavor = seen.outcome.flavors.get(v.pod_set.name) or v.flavor
    spans = spans_of(ledgers.get(flavor or ""), v.level, spread)
    word = level_word(v.level)
    text = f"{pod_set_of(v, many)}topology were preferred"
    if spans:
        text += f" (spans {word}s {', '.join(spans)})" if len(spans) > 1 else f" (one {word})"
    return Option("relax", text, v.pod_set.name, spans=tuple(spans)).seen(seen)


def spans_of(
    ledger: FlavorLedger | None, level: str | None, spread: Mapping[str, int]
) -> list[str]:
    """The domains at `level` a placement (lowest-level name -> pods) uses, most pods first."""
    if ledger is None or level is None or level not in ledger.topology.levels:
        return []
    depth = ledger.topology.levels.index(level)
    where = {leaf.values[-1]: leaf.values[depth] for leaf in ledger.leaves.values()}
    pods: dict[str, int] = {}
    for lowest, n in spread.items():
        if lowest in where:
            pods[where[lowest]] = pods.get(where[lowest], 0) + n
    return sorted(pods, key=lambda d: (-pods[d], d))


def count_option(base: Scenario, name: str, v: Verdict, check: Check, many: bool) -> Option | None:
    """The largest count the model admits below the asked one: the ledger's count first, then
    a binary search (about log2(count) runs); counts step by the slice size."""
    tr = v.pod_set.topology
    step = tr.slice_size if tr is not None and tr.slice_size else 1
    top = (v.count - 1) // step
    if top < 1:
        return None
    seen: dict[int, Seen | None] = {}

    def ok(k: int) -> bool:
        if k not in seen:
            seen[k] = check(variants.with_count(base, name, v.pod_set.name, k * step))
        return seen[k] is not None

    good, bad = 0, top + 1
    hint = min(max(v.fits // step, 1), top)
    try:
        if ok(hint):
            good = hint
            if hint + 1 <= top and not ok(hint + 1):
                bad = hint + 1
        else:
            bad = hint
        while bad - good > 1:
            mid = (good + bad) // 2
            if ok(mid):
                good = mid
            else:
                bad = mid
    except variants.OutOfRuns:
        pass  # the largest count checked so far stands, said to be a lower bound
    found = seen.get(good)
    if good == 0 or found is None:
        return None
    count, largest = good * step, bad - good <= 1
    more = "" if largest else "; larger not checked"
    text = f"{pod_set_of(v, many)}count were {count} (not {v.count}{more})"
    option = Option("count", text, v.pod_set.name, count=count, largest=largest)
    return option.seen(found)


def flavor_options(
    base: Scenario,
    w: Workload,
    v: Verdict,
    ledgers: Mapping[str, FlavorLedger],
    check: Check,
) -> list[Option]:
    """Another ResourceFlavor of the ClusterQueue's resource group tried first, or one it does
    not list (with the quota of the flavor it tried): only flavors whose free capacity, by the
    ledger, holds the pod set are run."""
    if v.flavor is None:
        return []
    cq = base.cluster_queue(w.queue)
    index = next(
        (i for i, g in enumerate(cq.resource_groups) if any(f.name == v.flavor for f in g.flavors)),
        None,
    )
    if index is None:
        return []
    group = cq.resource_groups[index]
    listed = [f.name for f in group.flavors]
    out: list[Option] = []
    for flavor, ledger in ledgers.items():
        if flavor == v.flavor or (listed and flavor == listed[0]):
            continue
        alone = judge(v.pod_set, [ledger], whole_flavor=v.mode != "required")
        if alone.fits < v.count:
            continue
        changed = variants.with_flavor_first(base, cq.name, index, flavor, v.flavor)
        seen = check(changed)
        if seen is None or seen.outcome.flavors.get(v.pod_set.name) != flavor:
            continue
        text = (
            f"ClusterQueue {cq.name} tried flavor {flavor} first"
            if flavor in listed
            else f"ClusterQueue {cq.name} also offered flavor {flavor} (with {v.flavor}'s quota)"
        )
        out.append(Option("flavor", text, v.pod_set.name, flavor=flavor).seen(seen))
        if len(out) == 2:
            break
    return out


def quota_holders(
    scenario: Scenario,
    w: Workload,
    final: Mapping[str, Outcome],
    shown: Mapping[str, str] | None = None,
) -> list[Holder]:
    """Admitted workloads of the same ClusterQueue, largest first: what holds its quota."""
    submitted = variants.submitted_workloads(scenario)
    queues = {x.name: x.queue for x in submitted}
    queues.update({a.name: a.queue for a in scenario.admitted})
    shapes = {x.name: x.pod_sets for x in submitted}
    shapes.update({a.name: tuple(p.pod_set for p in a.pod_sets) for a in scenario.admitted})
    mine = [
        n
        for n, o in final.items()
        if o.admitted and n != w.name and queues.get(n) == w.queue and n in shapes
    ]
    wanted = {r for p in w.pod_sets for r in p.requests}

    def size(n: str) -> float:
        return float(sum(p.requests.get(r, 0) * p.count for p in shapes[n] for r in wanted))

    ranked = sorted(mine, key=lambda n: (-size(n), n))
    return [Holder("workload", n, shown=(shown or {}).get(n, "")) for n in ranked]
