"""Each ClusterQueue's and cohort's quota in one state of a scenario, as the report shows it
beside the maps (issue 29 item 9): per flavor and resource the nominal quota, the usage,
what is borrowed and what is lent, and under fair sharing the weight and share.

The arithmetic is Kueue v0.19.2's, through harness.fit.cohort.QuotaBook (rules §2:
pkg/cache/scheduler/resource_node.go): a ClusterQueue's usage is its admitted workloads'
requests; a cohort's usage is what its children use beyond their local quota (the part of
their quota they never lend); `borrowed` is usage beyond the subtree quota, as Kueue's
ClusterQueue status reports it (`flavorsUsage[].resources[].borrowed`, cache.go).

Kueue does not record who lends to whom: a cohort only knows how much its children borrow.
`lent` splits that among whoever has unused lendable quota there — the cohort's own nominal
and each child's lendable quota it does not use — in proportion to it (whole Kueue units,
largest remainder), so what a cohort's members lend adds up to what they borrow; the part
the cohort's own nominal meets is its `own_used`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from harness.fit import fairshare
from harness.fit.cohort import FlavorResource, QuotaBook
from harness.fit.cohort_tree import COHORT, CQ, Node
from harness.kueue.quota_requests import pod_set_units
from harness.results.outcome import Outcome
from harness.scenario.model import ClusterQueue, PodSet, Scenario, Workload

Usage = dict[str, dict[FlavorResource, int]]
"""ClusterQueue -> (flavor, resource) -> amount in Kueue units."""


@dataclass(frozen=True)
class QuotaRow:
    """One flavor-resource of a ClusterQueue or cohort, in Kueue units. `subtree`: own
    nominal plus what the children lend (equal to `nominal` for a ClusterQueue)."""

    flavor: str
    resource: str
    nominal: int
    subtree: int
    used: int
    borrowed: int
    lent: int
    own_used: int = 0
    """A cohort's: what its members (or its parent's other members) use of its own
    nominal quota, beyond their own."""


@dataclass(frozen=True)
class QuotaTable:
    """A ClusterQueue or a cohort (`kind` CQ or COHORT) at `depth` in its cohort tree (0: a
    root, or a ClusterQueue without cohort). `weight` and `share` are set only when the
    scenario has fair sharing; `share` is Kueue's rounded weighted share (the status's
    `fairSharing.weightedShare`), None for a weight of 0 that borrows (Kueue: MaxInt64)."""

    kind: str
    name: str
    depth: int
    rows: tuple[QuotaRow, ...]
    weight: Fraction | None = None
    share: int | None = None
    fair: bool = False


def usage_of(
    scenario: Scenario, state: Mapping[str, Outcome], deleted: Iterable[str] = ()
) -> tuple[Usage, list[str]]:
    """What each ClusterQueue's admitted workloads hold: per pod set, requests x count on its
    flavor, per resource its ClusterQueue has quota for. The scenario's `admitted:` entries
    count unless the state says otherwise or a step deleted them (`deleted`). Also returns
    the workloads whose flavor cannot be told (counted nowhere)."""
    usage: Usage = {}
    unknown: list[str] = []
    queues = {cq.name: cq for cq in scenario.cluster_queues}
    entries = {a.name: a for a in scenario.admitted}
    shapes = {w.name: (w.queue, w.pod_sets) for w in _workloads(scenario)}
    gone = set(deleted)
    names = [*state, *(n for n in entries if n not in state and n not in gone)]
    for name in names:
        outcome = state.get(name)
        if outcome is not None and not outcome.admitted:
            continue
        entry = entries.get(name)
        flavors = dict(outcome.flavors) if outcome else {}
        if entry is not None:
            queue, pod_sets = entry.queue, tuple(p.pod_set for p in entry.pod_sets)
            flavors = {p.pod_set.name: p.flavor for p in entry.pod_sets} | flavors
        elif name in shapes:
            queue, pod_sets = shapes[name]
        else:
            continue
        cq = queues.get(queue)
        if cq is None:
            continue
        placement = outcome.placement if outcome else {}
        for pod_set in pod_sets:
            held = _pod_set_usage(scenario, cq, pod_set, flavors.get(pod_set.name), placement)
            if held is None:
                unknown.append(name)
                continue
            mine = usage.setdefault(cq.name, {})
            for fr, amount in held.items():
                mine[fr] = mine.get(fr, 0) + amount
    return usage, sorted(set(unknown))


def deleted_by(scenario: Scenario, index: int) -> list[str]:
    """Workloads the steps up to state `index` deleted (0: after the submissions, i: after
    step i): an `admitted:` entry among them no longer holds quota, though the state's
    outcomes, which leave a deleted workload out, cannot say so."""
    steps = scenario.steps[: max(0, index)]
    return [str(s.target) for s in steps if s.action == "delete-workload"]


def _workloads(scenario: Scenario) -> list[Workload]:
    found = list(scenario.workloads)
    found += [s.target for s in scenario.steps if isinstance(s.target, Workload)]
    return found


def _pod_set_usage(
    scenario: Scenario,
    cq: ClusterQueue,
    pod_set: PodSet,
    chosen: str | None,
    placement: Mapping[str, Mapping[str, int]],
) -> dict[FlavorResource, int] | None:
    """Kueue's per-pod requests in its units times the count, per covered resource."""
    held: dict[FlavorResource, int] = {}
    for resource, per_pod in pod_set.requests.items():
        group = cq.group_of(resource)
        if group is None:
            continue
        names = [f.name for f in group.flavors]
        flavor = chosen if chosen in names else _placed_flavor(scenario, names, pod_set, placement)
        if flavor is None:
            return None
        held[(flavor, resource)] = pod_set_units(resource, per_pod, pod_set.count)
    return held


def _placed_flavor(
    scenario: Scenario,
    names: list[str],
    pod_set: PodSet,
    placement: Mapping[str, Mapping[str, int]],
) -> str | None:
    """The flavor when the outcome does not name it: the only one of the group, or the one
    whose nodeLabels the placed nodes carry."""
    if len(names) == 1:
        return names[0]
    nodes = {n.name: n for n in scenario.nodes}
    placed = [nodes[d] for d in placement.get(pod_set.name, {}) if d in nodes]
    for flavor in scenario.resource_flavors:
        labels = flavor.node_labels.items()
        if (
            flavor.name in names
            and placed
            and all(all(n.labels.get(k) == v for k, v in labels) for n in placed)
        ):
            return flavor.name
    return None


def quota_tables(
    scenario: Scenario, state: Mapping[str, Outcome], deleted: Iterable[str] = ()
) -> list[QuotaTable]:
    """Every cohort tree, parents before children, then the ClusterQueues without cohort."""
    book = QuotaBook.of(scenario.cluster_queues, scenario.cohorts)
    book.usage, _ = usage_of(scenario, state, deleted)
    frs = _all_frs(book)
    lent = lent_by(book, frs)
    fair = _fair_sharing(scenario)
    tables: list[QuotaTable] = []
    roots = [(COHORT, c) for c in book.tree.cohorts if (COHORT, c) not in book.tree.parent]
    roots += [(CQ, q) for q in book.queues if (CQ, q) not in book.tree.parent]
    for root in roots:
        _walk(book, root, 0, frs, lent, fair, tables)
    return tables


def _walk(
    book: QuotaBook,
    node: Node,
    depth: int,
    frs: list[FlavorResource],
    lent: tuple[Amounts, Amounts],
    fair: bool,
    out: list[QuotaTable],
) -> None:
    mine = [fr for fr in frs if book.subtree_quota(node, fr) or _has_quota(book, node, fr)]
    rows = tuple(
        QuotaRow(
            flavor=fr[0],
            resource=fr[1],
            nominal=book.node_nominal(node, fr),
            subtree=book.subtree_quota(node, fr),
            used=book.node_usage(node, fr),
            borrowed=_borrowed(book, node, fr),
            lent=lent[0].get(node, {}).get(fr, 0),
            own_used=lent[1].get(node, {}).get(fr, 0),
        )
        for fr in mine
    )
    weight = _weight(book, node) if fair else None
    share = dominant_share(book, node, weight) if weight is not None else None
    out.append(QuotaTable(node[0], node[1], depth, rows, weight, share, fair))
    for child in book.tree.children.get(node, []):
        _walk(book, child, depth + 1, frs, lent, fair, out)


def _has_quota(book: QuotaBook, node: Node, fr: FlavorResource) -> bool:
    """A flavor-resource the node lists, even with nominal 0 (a row worth showing)."""
    return book._quota(node, fr) is not None or any(
        _has_quota(book, child, fr) for child in book.tree.children.get(node, [])
    )


def _all_frs(book: QuotaBook) -> list[FlavorResource]:
    """Every flavor-resource any ClusterQueue or Cohort lists, in first-seen order."""
    found: dict[FlavorResource, None] = {}
    groups = [g for q in book.queues.values() for g in q.resource_groups]
    groups += [g for c in book.tree.cohorts.values() for g in c.resource_groups]
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                found[(flavor.name, quota.name)] = None
    return list(found)


def _borrowed(book: QuotaBook, node: Node, fr: FlavorResource) -> int:
    if node not in book.tree.parent:
        return 0
    return max(0, book.node_usage(node, fr) - book.subtree_quota(node, fr))


def _spare(book: QuotaBook, node: Node, fr: FlavorResource) -> int:
    """The node's lendable quota (subtree quota less local quota) that it does not use."""
    lendable = book.subtree_quota(node, fr) - book.node_local(node, fr)
    in_parent = max(0, book.node_usage(node, fr) - book.node_local(node, fr))
    return max(0, lendable - in_parent)


Amounts = dict[Node, dict[FlavorResource, int]]


def lent_by(book: QuotaBook, frs: Iterable[FlavorResource]) -> tuple[Amounts, Amounts]:
    """Per node and flavor-resource, what others in its cohort use of its quota: each
    cohort's demand (what its children borrow, plus what it lends up, less what it borrows)
    split over its own nominal and its children's spare lendable quota, top down. Also,
    per cohort, the part of that demand its own nominal quota meets."""
    out: Amounts = {}
    own: Amounts = {}
    roots = [(COHORT, c) for c in book.tree.cohorts if (COHORT, c) not in book.tree.parent]
    for fr in frs:
        for root in roots:
            _spread(book, root, fr, 0, (out, own))
    return out, own


def _spread(
    book: QuotaBook,
    node: Node,
    fr: FlavorResource,
    lends_up: int,
    into: tuple[Amounts, Amounts],
) -> None:
    children = book.tree.children.get(node, [])
    demand = sum(_borrowed(book, c, fr) for c in children) + lends_up - _borrowed(book, node, fr)
    suppliers = [(node, book.node_nominal(node, fr))]
    suppliers += [(c, _spare(book, c, fr)) for c in children]
    shares = split(max(0, demand), [w for _, w in suppliers])
    out, own = into
    if shares[0]:
        own.setdefault(node, {})[fr] = shares[0]
    for (supplier, _), amount in zip(suppliers[1:], shares[1:], strict=True):
        if amount:
            out.setdefault(supplier, {})[fr] = amount
        if supplier[0] == COHORT:
            _spread(book, supplier, fr, amount, into)


def split(total: int, weights: list[int]) -> list[int]:
    """`total` in whole units in proportion to `weights` (largest remainder; ties to the
    earlier weight), capped by the weights' sum."""
    whole = sum(weights)
    if whole <= 0:
        return [0] * len(weights)
    total = min(total, whole)
    exact = [Fraction(total * w, whole) for w in weights]
    parts = [math.floor(e) for e in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _fair_sharing(scenario: Scenario) -> bool:
    """`kueueConfig.fairSharing` is set (the fair-sharing branch adds `kueue_config`)."""
    config = getattr(scenario, "kueue_config", None)
    return getattr(config, "fair_sharing", None) is not None


def _weight(book: QuotaBook, node: Node) -> Fraction:
    holder = book.queues[node[1]] if node[0] == CQ else book.tree.cohorts[node[1]]
    weight = getattr(holder, "fair_weight", None)
    return Fraction(1) if weight is None else Fraction(weight)


def dominant_share(book: QuotaBook, node: Node, weight: Fraction) -> int | None:
    """Kueue's `dominantResourceShare` rounded (fair_sharing.go `roundedWeightedShare`): the
    fit model's unweighted ratio (harness.fit.fairshare.node_share) divided by the weight
    and rounded up. 0 without a parent or without borrowing; None when a weight of 0
    borrows (MaxInt64)."""
    ratio = fairshare.node_share(book, node).ratio
    if weight == 0:
        return None if ratio else 0
    return math.ceil(ratio / float(weight))
