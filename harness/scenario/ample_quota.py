"""Ample quota: a ClusterQueue with `ample_quota` (the one a `queue` shorthand means) gives
every resource it does not limit an amount no workload set can reach, including resources
the harness adds workloads for after loading (a fixture's manifests, `up`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from fractions import Fraction

from harness.scenario.model import FlavorQuotas, ResourceGroup, ResourceQuota, Scenario, Workload

AMPLE = Fraction(10**15)


def ample(resource: str, workloads: Iterable[Workload]) -> Fraction:
    """The quota an ample ClusterQueue gets for a resource it does not limit: at least
    10^15, and twice what all workloads request together."""
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


def covering(scenario: Scenario, resources: Iterable[str]) -> Scenario:
    """The scenario whose ample-quota ClusterQueues also cover `resources` (a fixture's or
    `up`'s manifests may ask for any resource the nodes offer)."""
    queues = []
    submitted = [s.target for s in scenario.steps if isinstance(s.target, Workload)]
    workloads = [*scenario.workloads, *submitted]
    for cq in scenario.cluster_queues:
        groups = cq.resource_groups
        if not groups and len(scenario.resource_flavors) == 1:  # nothing requested yet
            groups = (ResourceGroup((), (FlavorQuotas(scenario.resource_flavors[0].name, ()),)),)
        known = {r for g in groups for r in g.covered}
        extra = set(resources) - known
        if not cq.ample_quota or not extra or len(groups) != 1 or len(groups[0].flavors) != 1:
            queues.append(cq)
            continue
        (flavor,) = groups[0].flavors
        quota = {q.name: q for q in flavor.resources}
        quota.update((r, ResourceQuota(r, ample(r, workloads))) for r in extra)
        covered = tuple(sorted(quota))
        widened = FlavorQuotas(flavor.name, tuple(quota[r] for r in covered))
        queues.append(replace(cq, resource_groups=(ResourceGroup(covered, (widened,)),)))
    return replace(scenario, cluster_queues=tuple(queues))
