"""The version-1 shorthand (`topology`, `flavor`, `queue`) as version-2 lists: the one place
that turns one into the other, so everything past the loader sees one shape.

One Topology as given; one ResourceFlavor using it; one ClusterQueue (no cohort,
BestEffortFIFO, no preemption) with one resource group covering every resource the queue
lists or a workload requests: listed ones get their quota, the others an ample amount
(at least 10^15, and twice what all workloads request together), and so does any resource
the harness adds a workload for later (`covering`: a fixture's manifests, `up`). A flavor
without nodeLabels selects every node through ALL_NODES_LABEL, which its nodes get.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from harness.scenario.ample_quota import ample
from harness.scenario.model import (
    ClusterQueue,
    Flavor,
    FlavorQuotas,
    Node,
    Queue,
    ResourceGroup,
    ResourceQuota,
    Scenario,
    Topology,
    Workload,
)

CLUSTER_QUEUE = "tas-cq"
"""The shorthand's ClusterQueue (and LocalQueue) name."""
ALL_NODES_LABEL = {"kueue-tas-harness/node": "true"}
"""Kueue refuses a ResourceFlavor with a topology but no nodeLabels ("at least one nodeLabel
is required when topology is set"), so a shorthand flavor without nodeLabels selects this
label, which every node of the file carries: the same node set as "no filter"."""


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
        node_labels=flavor.node_labels or ALL_NODES_LABEL,
        tolerations=flavor.tolerations,
        topology_name=topology.name,
    )
    groups = (group,) if covered else ()
    cq = ClusterQueue(name=CLUSTER_QUEUE, resource_groups=groups, ample_quota=True)
    return (topology,), (tas_flavor,), (cq,)


def labelled(flavor: Flavor, nodes: Iterable[Node]) -> tuple[Node, ...]:
    """The nodes, carrying ALL_NODES_LABEL when the shorthand flavor has no nodeLabels."""
    if flavor.node_labels:
        return tuple(nodes)
    return tuple(replace(n, labels={**n.labels, **ALL_NODES_LABEL}) for n in nodes)


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
    fields["nodes"] = labelled(flavor, fields.get("nodes", ()))
    return Scenario(
        topologies=topologies,
        resource_flavors=flavors,
        cluster_queues=queues,
        workloads=workloads,
        **fields,
    )
