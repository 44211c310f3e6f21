"""Top-level `cohorts:` -> Cohort objects, with Kueue's own API rules (apis/kueue/v1beta2/
cohort_types.go and pkg/webhooks/cohort_webhook.go validateCohort).

A Cohort lists `name`, `parentName`, `resourceGroups` (the same shape as a ClusterQueue's; its
limits need a parent, and its lendingLimit may exceed its nominalQuota) and `fairSharing`
(`weight`). A parent that no entry defines is an implicit cohort without quota, as in Kueue.
"""

from __future__ import annotations

from collections.abc import Collection
from fractions import Fraction

from harness.k8s.rules import is_dns_subdomain
from harness.scenario import load_queues
from harness.scenario.keypath import KeyPath, yaml_text
from harness.scenario.model import Cohort, Flavor
from harness.scenario.notices import Notices

COHORT_KEYS = ("name", "parentName", "resourceGroups", "fairSharing")


def cohorts(
    at: KeyPath, flavors: Collection[Flavor], notices: Notices | None = None
) -> tuple[Cohort, ...]:
    """The Cohort objects; a flavor no ResourceFlavor is named after loads, as Kueue's webhook
    lets it (its quota serves no active ClusterQueue), with a warning for a hand-written
    file (`notices`; None refuses it)."""
    known = {f.name for f in flavors}
    out: list[Cohort] = []
    parents: dict[str, KeyPath] = {}
    for item in at.items():
        cohort = _cohort(item, known)
        consequence = f"no active ClusterQueue can use this quota of Cohort {cohort.name}"
        load_queues.missing_flavors(item, cohort.resource_groups, known, notices, consequence)
        if any(other.name == cohort.name for other in out):
            item.child("name", None).fail(f"duplicate Cohort name {yaml_text(cohort.name)}")
        out.append(cohort)
        if cohort.parent is not None:
            parents[cohort.name] = item.child("parentName", None)
    _refuse_cycles(out, parents)
    return tuple(out)


def _cohort(at: KeyPath, flavors: set[str]) -> Cohort:
    fields = at.mapping(COHORT_KEYS, ("name",))
    name = fields["name"].string(is_dns_subdomain, "Cohort name")
    parent = (
        fields["parentName"].string(is_dns_subdomain, "Cohort name")
        if "parentName" in fields
        else None
    )
    rules = load_queues.cohort_rules(parent is not None)
    groups = (
        load_queues.resource_groups(fields["resourceGroups"], flavors, rules)
        if "resourceGroups" in fields
        else ()
    )
    weight = None
    if "fairSharing" in fields:
        sub = fields["fairSharing"].mapping(("weight",))
        if "weight" in sub:
            weight = load_queues._quantity(sub["weight"])
            if 0 < weight <= Fraction(1, 10**9):
                # validateFairSharing (pkg/webhooks/common.go), its words.
                sub["weight"].fail("When not 0, weight must be > 10e-9")
    return Cohort(name=name, parent=parent, resource_groups=groups, fair_weight=weight)


def _refuse_cycles(cohorts: list[Cohort], parents: dict[str, KeyPath]) -> None:
    """Kueue accepts a cycle of parentNames but deactivates every ClusterQueue in it
    (cohort_types.go, pkg/cache/scheduler/snapshot.go inactiveCQReasonHasCycle); the harness
    does not model inactive ClusterQueues, so a cycle is refused by name."""
    parent_of = {c.name: c.parent for c in cohorts if c.parent is not None}
    for start in parent_of:
        chain = [start]
        node = parent_of.get(start)
        while node is not None and node not in chain:
            chain.append(node)
            node = parent_of.get(node)
        if node == start:
            parents[start].fail(
                f"cohort cycle {' -> '.join([*chain, start])}: Kueue deactivates the "
                f"ClusterQueues of a cycle; not supported"
            )
