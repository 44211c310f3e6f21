"""The flavor's topology tree and what is free on each leaf, as Kueue's TAS snapshot sees it.

Modelled on Kueue v0.19.2 pkg/cache/scheduler (tas_topology_tree.go, tas_flavor.go,
tas_nodes_cache.go, tas_non_tas_pod_cache.go): only Ready, schedulable nodes that carry the
flavor's nodeLabels and every level label become leaves; with a hostname lowest level each
node is a leaf, otherwise nodes sharing a level-value path are summed into one leaf.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from harness.fit.resources import ResourceVector, add_into, from_quantities, sub_into
from harness.scenario.model import Flavor, Node, Topology, Usage

if TYPE_CHECKING:
    from harness.fit.leafcounts import LeafCounts, Shape

LeafKey = str | tuple[str, ...]


class Domain:
    """A topology domain plus the scratch counters of one placement run."""

    __slots__ = (
        "children",
        "key",
        "leaders",
        "leaf",
        "level",
        "parent",
        "pods",
        "pods_wl",
        "slices",
        "slices_wl",
        "values",
    )

    def __init__(self, values: tuple[str, ...], key: LeafKey, parent: Domain | None) -> None:
        self.values = values
        self.key = key
        self.level = len(values) - 1
        self.parent = parent
        self.children: list[Domain] = []
        self.leaf: Leaf | None = None
        self.pods = self.pods_wl = self.slices = self.slices_wl = self.leaders = 0

    def reset(self) -> None:
        self.pods = self.pods_wl = self.slices = self.slices_wl = self.leaders = 0

    def copy_counts(self) -> Domain:
        """A detached copy (Kueue's shallowCloneWithState) used for leader assignments."""
        clone = Domain.__new__(Domain)
        for slot in Domain.__slots__:
            setattr(clone, slot, getattr(self, slot))
        return clone

    def __repr__(self) -> str:
        return f"Domain({'/'.join(self.values)} pods={self.pods} slices={self.slices})"


@dataclass
class Leaf:
    """A lowest-level domain: its nodes, capacity and the usage already on it."""

    key: LeafKey
    domain: Domain
    nodes: list[Node] = field(default_factory=list)
    capacity: ResourceVector = field(default_factory=dict)
    non_tas: ResourceVector = field(default_factory=dict)
    tas: ResourceVector = field(default_factory=dict)

    def free(self, simulate_empty: bool = False) -> ResourceVector:
        out = dict(self.capacity)
        sub_into(out, self.non_tas)
        if not simulate_empty:
            sub_into(out, self.tas)
        return out


@dataclass
class Tree:
    topology: Topology
    leaves: dict[LeafKey, Leaf]
    per_level: list[dict[tuple[str, ...], Domain]]
    node_to_leaf: dict[str, LeafKey]
    # Why nodes are not leaves, and why leaves were excluded for the last pod set (--explain).
    dropped: dict[str, str] = field(default_factory=dict)
    excluded: dict[LeafKey, str] = field(default_factory=dict)
    # Leaves whose usage changed, in order (`touched_base` entries were dropped from the
    # front), and the per-leaf counts kept from them (harness.fit.leafcounts).
    touched: list[LeafKey] = field(default_factory=list)
    touched_base: int = 0
    counts_cache: dict[Shape, LeafCounts] = field(default_factory=dict)

    def touch(self, key: LeafKey) -> None:
        """A leaf's usage changed. The log is dropped once it outgrows the leaves: counts
        that saw less of it recount every leaf."""
        touched = self.touched
        touched.append(key)
        if len(touched) > 4 * len(self.leaves) + 64:
            self.touched_base += len(touched)
            touched.clear()

    @property
    def hostname_lowest(self) -> bool:
        return self.topology.lowest_is_hostname

    @cached_property
    def tainted(self) -> bool:
        """Whether any leaf's node has a taint (else no toleration check can exclude one)."""
        return any(node.taints for leaf in self.leaves.values() for node in leaf.nodes)

    def domains(self) -> Iterable[Domain]:
        for level in self.per_level:
            yield from level.values()


def why_not_in_flavor(node: Node, flavor: Flavor, topology: Topology) -> str | None:
    """None for a leaf node; else why Kueue's TAS cache leaves it out.

    Ready and schedulable first (node cache), then the flavor's nodeLabels and every level
    label present (utiltas.NodeMatchesFlavor).
    """
    if not node.ready:
        return "not Ready"
    if node.unschedulable:
        return "cordoned (unschedulable)"
    for key, value in flavor.node_labels.items():
        if node.labels.get(key) != value:
            return f"lacks the flavor's label {key}={value}"
    for level in topology.levels:
        if level not in node.labels:
            return f"lacks the level label {level}"
    return None


def build_tree(
    topology: Topology,
    flavor: Flavor,
    nodes: Iterable[Node],
    usage: Iterable[Usage],
    tas_usage: Mapping[LeafKey, ResourceVector],
) -> Tree:
    """Build the leaves (with capacity and usage) and their ancestors."""
    levels = topology.levels
    tree = Tree(topology, {}, [{} for _ in levels], {})
    hostname_lowest = tree.hostname_lowest
    for node in nodes:
        reason = why_not_in_flavor(node, flavor, topology)
        if reason is not None:
            tree.dropped[node.name] = reason
            continue
        values = tuple(map(node.labels.__getitem__, levels))  # every level label is there
        key: LeafKey = values[-1] if hostname_lowest else values
        leaf = tree.leaves.get(key)
        if leaf is None:
            leaf = Leaf(key, _attach(tree, values, key), [node], from_quantities(node.allocatable))
            leaf.domain.leaf = leaf
            tree.leaves[key] = leaf
        else:
            leaf.nodes.append(node)
            add_into(leaf.capacity, from_quantities(node.allocatable))
        tree.node_to_leaf[node.name] = key
    for entry in usage:
        leaf_key = tree.node_to_leaf.get(entry.node)
        if leaf_key is None:
            continue
        per_pod = from_quantities(entry.requests)
        per_pod["pods"] = per_pod.get("pods", 0) + 1
        add_into(tree.leaves[leaf_key].non_tas, {r: v * entry.count for r, v in per_pod.items()})
    for leaf_key, used in tas_usage.items():
        if leaf_key in tree.leaves:
            add_into(tree.leaves[leaf_key].tas, used)
    return tree


def _attach(tree: Tree, values: tuple[str, ...], key: LeafKey) -> Domain:
    """Create the leaf domain and any missing ancestors (parents keyed by their value path)."""
    parent = None
    for depth in range(1, len(values)):
        path = values[:depth]
        found = tree.per_level[depth - 1].get(path)
        if found is None:
            found = Domain(path, path, parent)
            tree.per_level[depth - 1][path] = found
            if parent is not None:
                parent.children.append(found)
        parent = found
    leaf = Domain(values, key, parent)
    tree.per_level[-1][values] = leaf
    if parent is not None:
        parent.children.append(leaf)
    return leaf
