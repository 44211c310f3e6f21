"""What a map shows, as plain data: the cluster after each step, and who holds which GPUs.

A placement names lowest-level domains (node names when that level is the hostname); pods
placed on a wider domain (a rack-leaf topology) are drawn on its nodes in order, marked as
chosen for the drawing only, because kube-scheduler picks the node inside the domain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from harness.results.outcome import Outcome
from harness.scenario.model import (
    HOSTNAME,
    Node,
    PodSet,
    Scenario,
    TaintChange,
    Toleration,
    Usage,
    Workload,
)

CELL_PREFERENCE = ("nvidia.com/gpu",)
"""Resource drawn as cells when present; else any `*gpu` resource, then cpu, then pods."""


@dataclass(frozen=True)
class World:
    """Nodes and foreign usage at one moment (after the submissions, or after a step)."""

    nodes: tuple[Node, ...]
    usage: tuple[Usage, ...]


@dataclass(frozen=True)
class Run:
    """Consecutive cells of one node held by one owner. `owner` is a workload name, or the
    usage's name for pods outside Kueue (`foreign`); `in_domain`: Kueue assigned the pods to
    a wider domain, and this node is only where the drawing puts them; `domain`: the
    placement key the pods came from."""

    owner: str
    amount: Fraction
    pods: int
    foreign: bool = False
    in_domain: bool = False
    domain: str = ""


@dataclass(frozen=True)
class NodeView:
    name: str
    path: tuple[str, ...]
    capacity: Fraction
    runs: tuple[Run, ...] = ()
    unready: bool = False
    cordoned: bool = False
    taints: tuple[str, ...] = ()

    @property
    def used(self) -> Fraction:
        return sum((r.amount for r in self.runs), Fraction(0))

    @property
    def free(self) -> Fraction:
        return max(Fraction(0), self.capacity - self.used)

    @property
    def usable(self) -> bool:
        """Kueue's TAS counts the node (ready, not cordoned, no taint the flavor refuses)."""
        return not (self.unready or self.cordoned or self.taints)


@dataclass(frozen=True)
class MapView:
    """One flavor's nodes, grouped by `levels` (its topology above the nodes)."""

    flavor: str
    levels: tuple[str, ...]
    resource: str
    nodes: tuple[NodeView, ...]


def worlds(scenario: Scenario) -> list[World]:
    """The world after the submissions (index 0) and after each step (index i)."""
    current = World(scenario.nodes, scenario.usage)
    out = [current]
    for step in scenario.steps:
        current = _apply(current, step.action, step.target)
        out.append(current)
    return out


def _apply(world: World, action: str, target: object) -> World:
    nodes, usage = world.nodes, world.usage
    if action == "add-node" and isinstance(target, Node):
        nodes = (*nodes, target)
    elif action == "delete-node":
        nodes = tuple(n for n in nodes if n.name != target)
        usage = tuple(u for u in usage if u.node != target)
    elif action in ("cordon", "uncordon"):
        flag = action == "cordon"
        nodes = tuple(replace(n, unschedulable=flag) if n.name == target else n for n in nodes)
    elif action in ("node-not-ready", "node-ready"):
        flag = action == "node-ready"
        nodes = tuple(replace(n, ready=flag) if n.name == target else n for n in nodes)
    elif action in ("taint-node", "untaint-node") and isinstance(target, TaintChange):
        nodes = tuple(_retainted(n, action, target) if n.name == target.node else n
                      for n in nodes)  # fmt: skip
    elif action == "add-usage" and isinstance(target, Usage):
        usage = (*usage, target)
    elif action == "delete-usage":
        usage = tuple(u for u in usage if u.name != target)
    return World(nodes, usage)


def _retainted(node: Node, action: str, change: TaintChange) -> Node:
    """A taint is unique by key and effect: removed by them, added after them."""
    kept = tuple(t for t in node.taints
                 if (t.key, t.effect) != (change.taint.key, change.taint.effect))  # fmt: skip
    return replace(node, taints=(*kept, change.taint) if action == "taint-node" else kept)


def cell_resource(scenario: Scenario) -> str:
    """The resource a map draws one cell per unit of: the GPUs, when nodes have any."""
    names = sorted({r for n in scenario.nodes for r in n.allocatable})
    for step in scenario.steps:
        if isinstance(step.target, Node):
            names = sorted({*names, *step.target.allocatable})
    for wanted in CELL_PREFERENCE:
        if wanted in names:
            return wanted
    gpus = [r for r in names if r.endswith("gpu")]
    if gpus:
        return gpus[0]
    return "cpu" if "cpu" in names else "pods"


def pod_sets(scenario: Scenario) -> dict[str, dict[str, PodSet]]:
    """Workload name -> pod set name -> pod set, for submitted, admitted and step workloads."""
    found: dict[str, dict[str, PodSet]] = {}
    for workload in scenario.workloads:
        found[workload.name] = {p.name: p for p in workload.pod_sets}
    for admitted in scenario.admitted:
        found[admitted.name] = {p.pod_set.name: p.pod_set for p in admitted.pod_sets}
    for step in scenario.steps:
        if isinstance(step.target, Workload):
            found[step.target.name] = {p.name: p for p in step.target.pod_sets}
    return found


def occupancy(
    scenario: Scenario, world: World, outcomes: Mapping[str, Outcome], resource: str
) -> dict[str, list[Run]]:
    """Node name -> what holds its cells: foreign usage first, then admitted workloads."""
    held: dict[str, list[Run]] = {n.name: [] for n in world.nodes}
    for usage in world.usage:
        if usage.node in held:
            amount = usage.requests.get(resource, Fraction(0)) * usage.count
            held[usage.node].append(Run(usage.name or "busy", amount, usage.count, foreign=True))
    shapes = pod_sets(scenario)
    for name, outcome in outcomes.items():
        if not outcome.admitted:
            continue
        for pod_set, per_domain in outcome.placement.items():
            request = shapes.get(name, {}).get(pod_set)
            per_pod = request.requests.get(resource, Fraction(0)) if request else Fraction(0)
            flavor = outcome.flavors.get(pod_set)
            for domain, pods in sorted(per_domain.items()):
                _place(scenario, world, held, resource, name, flavor, domain, pods, per_pod)
    return held


def _place(
    scenario: Scenario,
    world: World,
    held: dict[str, list[Run]],
    resource: str,
    owner: str,
    flavor: str | None,
    domain: str,
    pods: int,
    per_pod: Fraction,
) -> None:
    if domain in held:
        held[domain].append(Run(owner, per_pod * pods, pods, domain=domain))
        return
    members = _domain_nodes(scenario, world, flavor, domain)
    for index, node in enumerate(members):
        free = node.allocatable.get(resource, Fraction(0)) - sum(
            (r.amount for r in held[node.name]), Fraction(0)
        )
        last = index == len(members) - 1
        fits = pods if last or per_pod == 0 else min(pods, max(0, int(free // per_pod)))
        if fits:
            held[node.name].append(Run(owner, per_pod * fits, fits, in_domain=True, domain=domain))
            pods -= fits
        if not pods:
            return


def _domain_nodes(scenario: Scenario, world: World, flavor: str | None, domain: str) -> list[Node]:
    """The nodes of a lowest-level domain that is not a hostname (a rack-leaf topology)."""
    leaves = []
    for candidate in scenario.resource_flavors:
        if flavor is not None and candidate.name != flavor:
            continue
        topology = scenario.topology_of(candidate)
        if topology is not None and not topology.lowest_is_hostname:
            leaves.append(topology.levels[-1])
    return [n for n in world.nodes if any(n.labels.get(level) == domain for level in leaves)]


def map_views(
    scenario: Scenario, world: World, held: Mapping[str, Sequence[Run]], resource: str
) -> list[MapView]:
    """One map per ResourceFlavor, over the nodes carrying its nodeLabels; a flavor without
    TAS is drawn as one flat group."""
    views = []
    for flavor in scenario.resource_flavors:
        topology = scenario.topology_of(flavor)
        levels = topology.levels if topology else ()
        grouping = levels[:-1] if levels and levels[-1] == HOSTNAME else levels
        members = [
            n
            for n in world.nodes
            if all(n.labels.get(k) == v for k, v in flavor.node_labels.items())
        ]
        nodes = tuple(
            NodeView(
                name=n.name,
                path=tuple(n.labels.get(level, "(none)") for level in grouping),
                capacity=n.allocatable.get(resource, Fraction(0)),
                runs=tuple(held.get(n.name, ())),
                unready=not n.ready,
                cordoned=n.unschedulable,
                taints=_refused_taints(n, flavor.tolerations),
            )
            for n in members
        )
        views.append(MapView(flavor.name, grouping, resource, nodes))
    return views


def _refused_taints(node: Node, tolerations: Sequence[Toleration]) -> tuple[str, ...]:
    """Taints that keep pods off the node unless the workload tolerates them itself."""
    return tuple(
        t.render()
        for t in node.taints
        if t.effect in ("NoSchedule", "NoExecute") and not any(x.tolerates(t) for x in tolerations)
    )
