"""The version-1 shorthand (`topology`, `flavor`, `queue`) as version-2 lists: the one place
that turns one into the other, so everything past the loader sees one shape.

One Topology as given; one ResourceFlavor using it; one ClusterQueue (no cohort,
BestEffortFIFO, no preemption) with one resource group covering every resource the queue
lists or a workload requests: listed ones get their quota, the others an ample amount
(the runner's rule: at least 10^15, and twice what all workloads request together).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from harness.scenario.model import (
    ClusterQueue,
    Flavor,
    FlavorQuotas,
    Queue,
    ResourceGroup,
    ResourceQuota,
    Scenario,
    Topology,
    Workload,
)

CLUSTER_QUEUE = "tas-cq"
"""The shorthand's ClusterQueue name (the sim's; the runner names its own per scenario)."""
AMPLE = Fraction(10**15)


def world(
    topology: Topology, flavor: Flavor, queue: Queue, workloads: Iterable[Workload]
) -> tuple[tuple[Topology, ...], tuple[Flavor, ...], tuple[ClusterQueue, ...]]:
    """The Topology, ResourceFlavor and ClusterQueue lists a version-1 file means."""
    workloads = list(workloads)
    covered = set(queue.nominal_quota)
    for w in workloads:
        for ps in w.pod_sets:
            covered.update(ps.requests)
    listed = queue.nominal_quota
    quotas = tuple(
        ResourceQuota(r, listed[r] if r in listed else ample(r, workloads)) for r in sorted(covered)
    )
    group = ResourceGroup(tuple(sorted(covered)), (FlavorQuotas(flavor.name, quotas),))
    tas_flavor = Flavor(
        name=flavor.name,
        node_labels=flavor.node_labels,
        tolerations=flavor.tolerations,
        topology_name=topology.name,
    )
    cq = ClusterQueue(name=CLUSTER_QUEUE, resource_groups=(group,) if covered else ())
    return (topology,), (tas_flavor,), (cq,)


def ample(resource: str, workloads: Iterable[Workload]) -> Fraction:
    """The quota a version-1 ClusterQueue gets for a resource its `queue` does not limit."""
    workloads = list(workloads)
    if resource == "pods":
        total = Fraction(sum(ps.count for w in workloads for ps in w.pod_sets))
    else:
        total = sum(
            (
                ps.requests.get(resource, Fraction(0)) * ps.count
                for w in workloads
                for ps in w.pod_sets
            ),
            Fraction(0),
        )
    return max(AMPLE, 2 * total)


def scenario(
    *,
    topology: Topology,
    flavor: Flavor,
    queue: Queue,
    workloads: tuple[Workload, ...],
    **fields: Any,
) -> Scenario:
    """A Scenario built in code from version-1 parts (tests, benchmarks, the fuzzer), with
    the meaning the loader gives a version-1 file."""
    workloads = tuple(replace(w, queue=CLUSTER_QUEUE) for w in workloads)
    submitted = [s.target for s in fields.get("steps", ()) if isinstance(s.target, Workload)]
    topologies, flavors, queues = world(topology, flavor, queue, [*workloads, *submitted])
    return Scenario(
        topologies=topologies,
        resource_flavors=flavors,
        cluster_queues=queues,
        shorthand=queue,
        workloads=workloads,
        **fields,
    )
