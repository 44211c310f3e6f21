"""Who holds what on each lowest-level domain of a flavor, and how many pods of a pod set fit
per domain at a level: the arithmetic behind an explanation's verdict.

Built from a settled state (the nodes and usage after the last step, the admitted workloads'
placements) with the fit model's own tree builder and counting (`build_tree`, `count_in`,
`leaf_exclusion`), so a verdict's "fits 3 of 4 pods" is the number Kueue's message gives.
The verdict only describes; every option it suggests is checked by running the model again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from harness.fit.placement import leaf_exclusion
from harness.fit.resources import ResourceVector, add_into, count_in, from_quantities, sub_into
from harness.fit.tree import Leaf, LeafKey, Tree, build_tree
from harness.results.outcome import Outcome
from harness.scenario.model import Flavor, Node, PodSet, Resources, Scenario, Topology, Usage


@dataclass(frozen=True)
class Holder:
    """Something holding capacity: a usage entry (pods outside Kueue) or an admitted workload.
    A usage entry need not have a name: `index` (its place in the usage list) tells entries
    apart, and `ref` is the entry itself."""

    kind: str  # "usage" | "workload"
    name: str
    index: int = -1
    ref: object = field(default=None, compare=False, hash=False)
    shown: str = field(default="", compare=False, hash=False)
    """The name the user knows (a snapshot's workload as namespace/name), if not `name`."""

    def text(self) -> str:
        return f'{self.kind} "{self.shown or self.name}"'


@dataclass
class LeafHoldings:
    """One leaf of the fit model's tree (`leaf`: its nodes and capacity) and who holds what
    on it."""

    leaf: Leaf
    held: dict[Holder, ResourceVector] = field(default_factory=dict)

    @property
    def key(self) -> LeafKey:
        return self.leaf.key

    @property
    def values(self) -> tuple[str, ...]:
        return self.leaf.domain.values

    @property
    def capacity(self) -> ResourceVector:
        return self.leaf.capacity

    def free(self, without: Collection[Holder] = ()) -> ResourceVector:
        out = dict(self.capacity)
        for holder, vector in self.held.items():
            if holder not in without:
                sub_into(out, vector)
        return out

    @property
    def name(self) -> str:
        return self.key if isinstance(self.key, str) else "/".join(self.key)


@dataclass
class FlavorLedger:
    """One TAS flavor: its leaves with their holders, and the nodes left out (and why)."""

    flavor: Flavor
    topology: Topology
    leaves: dict[LeafKey, LeafHoldings]
    dropped: dict[str, tuple[str, tuple[str, ...]]]
    """Node -> why the flavor's TAS leaves it out, and its level values."""


def build_ledgers(
    scenario: Scenario,
    nodes: Iterable[Node],
    usage: Iterable[Usage],
    outcomes: Mapping[str, Outcome],
    shapes: Mapping[str, Mapping[str, PodSet]],
    leave_out: str | None = None,
    shown: Mapping[str, str] | None = None,
) -> dict[str, FlavorLedger]:
    """Every TAS flavor's ledger in one state. `leave_out`: a workload whose own pods are not
    counted (to ask what it would have found without itself); `shown`: workload names as the
    user knows them."""
    nodes, usage = list(nodes), list(usage)
    out: dict[str, FlavorLedger] = {}
    for flavor in scenario.resource_flavors:
        topology = scenario.topology_of(flavor)
        if topology is None:
            continue
        tree = build_tree(topology, flavor, nodes, [], {})
        by_name = {n.name: n for n in nodes}
        dropped = {
            name: (why, tuple(by_name[name].labels.get(level, "") for level in topology.levels))
            for name, why in tree.dropped.items()
        }
        ledger = FlavorLedger(flavor, topology, _leaves(tree), dropped)
        for index, entry in enumerate(usage):
            key = tree.node_to_leaf.get(entry.node)
            if key is not None:
                holder = Holder("usage", entry.name or f"pods on {entry.node}", index, entry)
                _hold(ledger.leaves[key], holder, entry.requests, entry.count)
        for name, outcome in outcomes.items():
            if outcome.admitted and name != leave_out:
                holder = Holder("workload", name, shown=(shown or {}).get(name, ""))
                _hold_workload(ledger, tree, holder, outcome, shapes.get(name, {}))
        out[flavor.name] = ledger
    return out


def _leaves(tree: Tree) -> dict[LeafKey, LeafHoldings]:
    return {key: LeafHoldings(leaf) for key, leaf in tree.leaves.items()}


def _hold(leaf: LeafHoldings, holder: Holder, requests: Resources, pods: int) -> None:
    vector = {r: v * pods for r, v in from_quantities(requests).items()}
    vector["pods"] = vector.get("pods", 0) + pods
    add_into(leaf.held.setdefault(holder, {}), vector)


def _hold_workload(
    ledger: FlavorLedger,
    tree: Tree,
    holder: Holder,
    outcome: Outcome,
    shapes: Mapping[str, PodSet],
) -> None:
    """An admitted workload's pods on this flavor's leaves. A hostname-level leaf is a node,
    which Kueue's TAS cache shares between the flavors on it (TASHandleOverlappingFlavors);
    a wider leaf counts only pods admitted on this flavor."""
    for pod_set, per_domain in outcome.placement.items():
        shape = shapes.get(pod_set)
        if shape is None:
            continue
        flavor = outcome.flavors.get(pod_set)
        for domain, pods in per_domain.items():
            if tree.hostname_lowest:
                key = tree.node_to_leaf.get(domain)
                if key is not None:
                    _hold(ledger.leaves[key], holder, shape.requests, pods)
                continue
            if flavor is not None and flavor != ledger.flavor.name:
                continue
            for leaf in ledger.leaves.values():
                if leaf.values[-1] == domain:
                    _hold(leaf, holder, shape.requests, pods)
                    break


def per_pod(pod_set: PodSet) -> ResourceVector:
    vector = from_quantities(pod_set.requests)
    vector["pods"] = vector.get("pods", 0) + 1
    return vector


def excluded(leaf: LeafHoldings, pod_set: PodSet, flavor: Flavor) -> str | None:
    """Why the pod set may not use this leaf at all (an untolerated taint, its nodeSelector)."""
    if not isinstance(leaf.key, str):
        return None  # Kueue checks taints and selectors only on hostname-level leaves
    why = leaf_exclusion(leaf.leaf, pod_set, pod_set.tolerations + flavor.tolerations)
    if why is None:
        return None
    return f"taint {why[1]} not tolerated" if why[0] == "taint" else "nodeSelector does not match"


def pods_in_leaf(
    leaf: LeafHoldings, pod_set: PodSet, flavor: Flavor, without: Collection[Holder] = ()
) -> tuple[int, str]:
    """Pods of the pod set that fit on the leaf, and the resource that limits them."""
    if excluded(leaf, pod_set, flavor) is not None:
        return 0, ""
    return count_in(per_pod(pod_set), leaf.free(without))


def pods_per_domain(
    ledger: FlavorLedger,
    pod_set: PodSet,
    depth: int | None,
    without: Collection[Holder] = (),
    leaves: Iterable[LeafHoldings] | None = None,
) -> dict[tuple[str, ...], int]:
    """Pods that fit in each domain at `depth` (index into the levels; None: the whole
    flavor, keyed ()), counted in whole slices when the pod set asks for slices; `leaves`:
    only these (default: all)."""
    tr = pod_set.topology
    levels = ledger.topology.levels
    slice_size = tr.slice_size if tr is not None and tr.slice_size else 1
    slice_depth = levels.index(tr.slice_level) if tr and tr.slice_level in levels else None
    per_slice_domain: dict[tuple[str, ...], int] = {}
    for leaf in ledger.leaves.values() if leaves is None else leaves:
        pods, _ = pods_in_leaf(leaf, pod_set, ledger.flavor, without)
        key = leaf.values[: slice_depth + 1] if slice_depth is not None else leaf.values
        per_slice_domain[key] = per_slice_domain.get(key, 0) + pods
    out: dict[tuple[str, ...], int] = {}
    for key, pods in per_slice_domain.items():
        whole = (pods // slice_size) * slice_size
        target = key[: depth + 1] if depth is not None else ()
        out[target] = out.get(target, 0) + whole
    return out


def leaves_under(ledger: FlavorLedger, domain: tuple[str, ...]) -> list[LeafHoldings]:
    return [leaf for leaf in ledger.leaves.values() if leaf.values[: len(domain)] == domain]
