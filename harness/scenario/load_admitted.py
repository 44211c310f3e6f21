"""Contract v2's `admitted`: Kueue workloads already admitted when the scenario starts, each
pod set with the flavor it was admitted on and, for a TAS flavor, its placement.

Refused, one line each: a flavor the workload's ClusterQueue does not offer; a placement on a
node outside the flavor (its nodeLabels, or a level of its Topology missing); counts that do
not add up to the pod set's count; a placement for a flavor without TAS, or none for a TAS
flavor; and pods beyond a node's allocatable with the `usage` already on it (as the kubelet
refuses them). Admitted workloads above nominal quota are accepted: Kueue accepts such
writes (docs/dev/kueue-v0.19.2-rules-v2.md §2.3). An entry's `admissionChecks` (its check
states, Pending or Ready) are read by harness.scenario.load_checks.admitted_states.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.kueue.admitted_flavors import parts
from harness.scenario import load_checks
from harness.scenario.keypath import KeyPath, kind, yaml_text
from harness.scenario.load_queues import World
from harness.scenario.model import (
    AdmittedPodSet,
    AdmittedWorkload,
    Flavor,
    Node,
    PodSet,
    Usage,
    Workload,
)
from harness.scenario.usage_ledger import UsageLedger

POD_SET_KEYS = ("flavor", "placement")
"""What an admitted pod set has beyond a workload's pod set."""


def admitted(
    at: KeyPath,
    world: World,
    nodes: Sequence[Node],
    ledger: UsageLedger,
    read_workload: Callable[[KeyPath], Workload],
) -> tuple[AdmittedWorkload, ...]:
    """Every `admitted` entry, in file order; its pods join the ledger of node capacity."""
    if world.shorthand is not None:
        at.fail("needs the version-2 lists (topologies, resourceFlavors, clusterQueues)")
    by_domain: dict[str, dict[str, list[Node]]] = {}  # per flavor, built once: see _placement
    return tuple(
        _entry(item, world, nodes, ledger, read_workload, by_domain) for item in at.items()
    )


def _entry(
    at: KeyPath,
    world: World,
    nodes: Sequence[Node],
    ledger: UsageLedger,
    read_workload: Callable[[KeyPath], Workload],
    by_domain: dict[str, dict[str, list[Node]]],
) -> AdmittedWorkload:
    extra: list[dict[str, KeyPath]] = []
    value = at.value
    if isinstance(value, dict) and isinstance(value.get("podSets"), list):
        pod_sets_at = at.child("podSets", value["podSets"])
        stripped = []
        for ps_at in pod_sets_at.items():
            ps = ps_at.value
            keys = {
                k: ps_at.child(k, ps[k]) for k in POD_SET_KEYS if isinstance(ps, dict) and k in ps
            }
            extra.append(keys)
            stripped.append(
                {k: v for k, v in ps.items() if k not in POD_SET_KEYS}
                if isinstance(ps, dict)
                else ps
            )
        value = {**value, "podSets": stripped}
    checks_at = None
    if isinstance(value, dict) and "admissionChecks" in value:
        checks_at = at.child("admissionChecks", value["admissionChecks"])
        value = {k: v for k, v in value.items() if k != "admissionChecks"}
    workload = read_workload(KeyPath(at.file, at.path, value, at.error))
    pod_sets = []
    for index, (pod_set, keys) in enumerate(zip(workload.pod_sets, extra, strict=True)):
        ps_at = at.child("podSets", None).child(index, None)
        if "flavor" not in keys:
            ps_at.fail("missing required key 'flavor' (the flavor it was admitted on)")
        flavor_name = keys["flavor"].string()
        names = parts(flavor_name) or (flavor_name,)
        for name in names:
            if name not in world.offered(workload):
                keys["flavor"].fail(
                    f"{yaml_text(name)} is not a flavor of ClusterQueue {workload.queue}"
                    f" (its flavors: {', '.join(world.offered(workload))})"
                )
            if not any(f.name == name for f in world.flavors):
                # its ClusterQueue lists a flavor that does not exist
                keys["flavor"].fail(f"no ResourceFlavor named {yaml_text(name)} in resourceFlavors")
        if len(names) > 1:
            _several_flavors(keys["flavor"], names, pod_set, world, workload.queue)
        flavor = next(f for f in world.flavors if f.name == names[0])
        placement = _placement(ps_at, keys.get("placement"), flavor, world, nodes, by_domain)
        for node, count in (placement or {}).items():
            where = keys["placement"].child(node, count)
            ledger.add_admitted(Usage(node=node, requests=pod_set.requests, count=count), where)
        if placement is not None and sum(placement.values()) != pod_set.count:
            keys["placement"].fail(
                f"places {sum(placement.values())} pods, the pod set has count {pod_set.count}"
            )
        pod_sets.append(AdmittedPodSet(pod_set, flavor_name, placement))
    return AdmittedWorkload(
        name=workload.name,
        queue=workload.queue,
        pod_sets=tuple(pod_sets),
        priority_class=workload.priority_class,
        check_states=(
            load_checks.admitted_states(
                checks_at,
                next(q for q in world.queues if q.name == workload.queue),
                {f for p in pod_sets for f in parts(p.flavor)},
            )
            if checks_at is not None
            else None
        ),
        local_queue=workload.local_queue,
        namespace=workload.namespace,
    )


def _several_flavors(
    at: KeyPath, names: tuple[str, ...], pod_set: PodSet, world: World, queue: str
) -> None:
    """One flavor per resource group, in the ClusterQueue's group order, for the groups
    covering what the pod set requests; none with a topology (a TAS pod set has one flavor
    in contract v2)."""
    cq = next(q for q in world.queues if q.name == queue)
    groups = [g for g in cq.resource_groups if any(r in g.covered for r in pod_set.requests)]
    wanted = [next((n for n in names if n in {fq.name for fq in g.flavors}), None) for g in groups]
    if None in wanted or tuple(wanted) != names:
        at.fail(
            f"{yaml_text(','.join(names))}: several flavors name one flavor per resource group "
            f"covering the pod set's requests, in ClusterQueue {queue}'s group order"
        )
    topology = [n for n in names if any(f.name == n and f.topology_name for f in world.flavors)]
    if topology:
        at.fail(
            f"flavor {topology[0]} has a topology: a pod set admitted on several flavors "
            "may not use one (not in contract v2)"
        )


def _placement(
    ps_at: KeyPath,
    at: KeyPath | None,
    flavor: Flavor,
    world: World,
    nodes: Sequence[Node],
    by_domain: dict[str, dict[str, list[Node]]],
) -> dict[str, int] | None:
    """Lowest-level domain -> pods, as node names (one node per domain value). `by_domain`:
    per flavor, its nodes by lowest-level value, made on first use (scanning every node for
    every admitted pod set made a snapshot with many admitted workloads quadratic)."""
    topology = next((t for t in world.topologies if t.name == flavor.topology_name), None)
    if topology is None:
        if at is not None:
            at.fail(f"flavor {flavor.name} has no topology: kube-scheduler placed its pods")
        return None
    if at is None:
        ps_at.fail(f"missing required key 'placement' (flavor {flavor.name} uses a topology)")
    if not isinstance(at.value, dict) or not at.value:
        at.fail(f"must map each lowest-level domain to a pod count, got {kind(at.value)}")
    lowest = topology.levels[-1]
    domains = by_domain.get(flavor.name)
    if domains is None:
        domains = by_domain[flavor.name] = {}
        for n in nodes:
            if all(n.labels.get(k) == v for k, v in flavor.node_labels.items()) and all(
                level in n.labels for level in topology.levels
            ):
                domains.setdefault(n.labels[lowest], []).append(n)
    out: dict[str, int] = {}
    for domain, count in at.value.items():
        where = at.child(str(domain), count)
        matching = domains.get(str(domain), [])
        if len(matching) != 1:
            where.fail(
                f"no node of flavor {flavor.name} has {lowest}: {yaml_text(domain)}"
                f" (with every level of Topology {topology.name})"
                if not matching
                else f"{lowest}: {yaml_text(domain)} names {len(matching)} nodes; an admitted"
                " placement names one node per value"
            )
        out[matching[0].name] = where.positive_int()
    return out
