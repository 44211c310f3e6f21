"""Version-2 world keys -> typed objects: `clusterQueues` and `workloadPriorityClasses`, and
the references between them, with Kueue's own API rules (docs/dev/kueue-v0.19.2-rules-v2.md §1:
apis/kueue/v1beta2/clusterqueue_types.go and pkg/webhooks/clusterqueue_webhook.go).

Topologies and ResourceFlavors are parsed by harness.scenario.loader (one parser for version 1
and 2); this module checks what refers to them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from harness.errors import did_you_mean
from harness.k8s.quantity import QuantityError, parse_quantity
from harness.k8s.rules import is_dns_subdomain, is_qualified_name
from harness.k8s.selector import LabelSelector
from harness.scenario import load_checks, load_local_queues
from harness.scenario.keypath import KeyPath, kind, yaml_text
from harness.scenario.model import (
    BORROW_WITHIN_COHORT,
    FUNGIBILITY_PREFERENCES,
    HOSTNAME,
    QUEUEING_STRATEGIES,
    RECLAIM_WITHIN_COHORT,
    STOP_POLICIES,
    WHEN_CAN_BORROW,
    WHEN_CAN_PREEMPT,
    WITHIN_CLUSTER_QUEUE,
    ClusterQueue,
    Cohort,
    Flavor,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    Preemption,
    PriorityClass,
    Queue,
    ResourceGroup,
    ResourceQuota,
    Topology,
    Workload,
)
from harness.scenario.notices import Notices
from harness.scenario.shorthand import CLUSTER_QUEUE

NOT_IN_V2 = {
    "fairSharing": "fair sharing (set it in kueueConfig.fairSharing)",
    "admissionChecksStrategy": "admission checks",
    "provisioningRequests": "ProvisioningRequests",
    "multiKueue": "MultiKueue",
    "elasticWorkloads": "elastic workloads",
}
"""Keys of features contract v2 leaves out (docs/scenario-format-v2.md, last rule): each is
refused by name rather than as an unknown key, so the message says it is not supported."""

CQ_KEYS = (
    "name",
    "cohortName",
    "queueingStrategy",
    "preemption",
    "flavorFungibility",
    "resourceGroups",
    "stopPolicy",
    "fairSharing",
    "admissionChecks",
    "admissionChecksStrategy",
    "namespaceSelector",
    "admissionScope",
)
CQ_NOT_IN_V2: dict[str, str] = {}
MAX_GROUPS, MAX_COVERED, MAX_FLAVORS, MAX_PAIRS = 16, 64, 64, 512
"""ClusterQueue CRD limits (clusterqueue_types.go): groups, per-group covered resources and
flavors, and flavor x resource pairs in total."""


@dataclass(frozen=True)
class QuotaRules:
    """What Kueue's webhook checks differently for a ClusterQueue's and a Cohort's
    resourceGroups (pkg/webhooks/clusterqueue_webhook.go validateResourceGroups, called by
    cohort_webhook.go with isCohort and enforceNominalGreaterThanLending false)."""

    limits_allowed: bool
    """borrowingLimit/lendingLimit may be set (the ClusterQueue has a cohort, the Cohort a
    parent)."""
    limits_need: str = "cohort"
    lending_at_most_nominal: bool = True
    min_groups: int = 1


def queue_rules(in_cohort: bool) -> QuotaRules:
    return QuotaRules(limits_allowed=in_cohort)


def cohort_rules(has_parent: bool) -> QuotaRules:
    return QuotaRules(has_parent, "parent", lending_at_most_nominal=False, min_groups=0)


@dataclass(frozen=True)
class World:
    """What workloads and expectations refer to while the file is read. `shorthand`: the
    version-1 `queue` (its ClusterQueue is made by harness.scenario.shorthand once every workload is
    known; `queues` is empty until then)."""

    topologies: tuple[Topology, ...]
    flavors: tuple[Flavor, ...]
    queues: tuple[ClusterQueue, ...]
    priority_classes: tuple[PriorityClass, ...]
    shorthand: Queue | None
    cohorts: tuple[Cohort, ...] = ()
    local_queues: tuple[LocalQueue, ...] = ()
    """`localQueues:` (empty: one per ClusterQueue, of its name, in the scenario's namespace)."""
    namespaces: tuple[Namespace, ...] = ()
    notices: Notices = field(default_factory=Notices, compare=False)
    """Warnings for what Kueue accepts but a typo most likely made (harness.scenario.notices)."""

    def all_queues(self) -> tuple[LocalQueue, ...]:
        """Every LocalQueue (Scenario.queues: `localQueues`, else one per ClusterQueue)."""
        if self.local_queues:
            return self.local_queues
        if self.shorthand is not None:
            return (LocalQueue(CLUSTER_QUEUE, CLUSTER_QUEUE),)
        return tuple(LocalQueue(cq.name, cq.name) for cq in self.queues)

    @property
    def levels(self) -> tuple[str, ...]:
        """Every level of every Topology, first seen first."""
        return tuple(dict.fromkeys(lv for t in self.topologies for lv in t.levels))

    @property
    def lowest(self) -> str:
        """The lowest level placements name: the Topologies' common one, else node names."""
        lowest = {t.levels[-1] for t in self.topologies}
        return lowest.pop() if len(lowest) == 1 else HOSTNAME

    def references(
        self, at: KeyPath, fields: Mapping[str, KeyPath]
    ) -> tuple[str, str | None, str, str]:
        """A workload's ClusterQueue (through its `queue`, filled in when there is one
        queue), `priorityClass`, LocalQueue ("": the ClusterQueue's own) and `namespace`
        ("": the scenario's), each naming an object of the file."""
        if self.shorthand is not None:
            for key in ("queue", "priorityClass", "namespace"):
                if key in fields:
                    fields[key].fail(
                        "needs the version-2 lists (clusterQueues, workloadPriorityClasses)"
                    )
            return CLUSTER_QUEUE, None, "", ""
        namespace = ""
        if "namespace" in fields:
            namespace = fields["namespace"].string()
            if namespace not in {ns.name for ns in self.namespaces}:
                fields["namespace"].fail(
                    f'namespaces "{namespace}" not found (list it in namespaces)'
                )
        queue, local_queue = self._queue(at, fields, namespace)
        priority_class = None
        if "priorityClass" in fields:
            priority_class = fields["priorityClass"].string()
            if all(pc.name != priority_class for pc in self.priority_classes):
                fields["priorityClass"].fail(
                    f"no WorkloadPriorityClass named {yaml_text(priority_class)}"
                    " in workloadPriorityClasses"
                )
        return queue, priority_class, local_queue, namespace

    def _queue(self, at: KeyPath, fields: Mapping[str, KeyPath], namespace: str) -> tuple[str, str]:
        """(ClusterQueue, LocalQueue) of the workload's `queue`: with `localQueues` a
        LocalQueue of its namespace, else a ClusterQueue (its LocalQueue of the same name)."""
        if not self.local_queues:
            names = [cq.name for cq in self.queues]
            if namespace:
                fields["namespace"].fail(
                    "only the scenario's namespace has LocalQueues (list them in localQueues)"
                )
            if "queue" in fields:
                queue = fields["queue"].string()
                if queue not in names:
                    fields["queue"].fail(
                        f"no ClusterQueue named {yaml_text(queue)} in clusterQueues"
                    )
                return queue, ""
            if len(names) == 1:
                return names[0], ""
            at.fail(f"missing required key 'queue' (there are {len(names)} ClusterQueues)")
        mine = [lq for lq in self.local_queues if lq.namespace == namespace]
        if "queue" in fields:
            name = fields["queue"].string()
            found = [lq for lq in mine if lq.name == name]
            if not found:
                where = f"namespace {namespace}" if namespace else "the scenario's namespace"
                fields["queue"].fail(f"no LocalQueue named {yaml_text(name)} in {where}")
            return found[0].cluster_queue, found[0].name
        if len(mine) == 1:
            return mine[0].cluster_queue, mine[0].name
        at.fail(f"missing required key 'queue' (there are {len(mine)} LocalQueues here)")

    def expected_flavors(self, at: KeyPath, workload: Workload) -> dict[str, str]:
        """`expect.<wl>.flavors`: pod set -> a flavor its ClusterQueue offers it (several
        joined by `,`, one per resource group, in the contract's rule)."""
        names = tuple(p.name for p in workload.pod_sets)
        out: dict[str, str] = {}
        for ps_name, value in at.mapping(names).items():
            flavor = value.string()
            for part in flavor.split(","):
                if part not in self.offered(workload):
                    value.fail(
                        f"{yaml_text(part)} is not a flavor of ClusterQueue {workload.queue}"
                        f" (its flavors: {', '.join(self.offered(workload)) or 'none'})"
                    )
            out[ps_name] = flavor
        return out

    def levels_of(self, queue: str) -> tuple[str, ...]:
        """Every level of the Topologies of the flavors ClusterQueue `queue` lists."""
        if self.shorthand is not None:
            return self.levels
        cq = next(cq for cq in self.queues if cq.name == queue)
        listed = {fq.name for g in cq.resource_groups for fq in g.flavors}
        names = {f.topology_name for f in self.flavors if f.name in listed}
        return tuple(lv for t in self.topologies if t.name in names for lv in t.levels)

    def offered(self, workload: Workload) -> tuple[str, ...]:
        """The flavors the workload's ClusterQueue lists (the shorthand's one flavor)."""
        if self.shorthand is not None:
            return tuple(f.name for f in self.flavors)
        cq = next(cq for cq in self.queues if cq.name == workload.queue)
        return tuple(fq.name for g in cq.resource_groups for fq in g.flavors)


def refuse_not_in_v2(at: KeyPath, refused: Mapping[str, str]) -> None:
    """A key naming a feature contract v2 leaves out: one line naming it."""
    if isinstance(at.value, dict):
        for key in at.value:
            if key in refused:
                at.child(str(key), None).fail(f"{refused[key]}: not supported (not in contract v2)")


def priority_classes(at: KeyPath) -> tuple[PriorityClass, ...]:
    out: list[PriorityClass] = []
    for item in at.items():
        fields = item.mapping(("name", "value"), ("name", "value"))
        name = fields["name"].string(is_dns_subdomain, "WorkloadPriorityClass name")
        if any(pc.name == name for pc in out):
            fields["name"].fail(f"duplicate WorkloadPriorityClass name {yaml_text(name)}")
        out.append(PriorityClass(name, fields["value"].integer(-(2**31))))
    return tuple(out)


def cluster_queues(
    at: KeyPath, flavors: Collection[Flavor], notices: Notices | None = None
) -> tuple[ClusterQueue, ...]:
    """`notices`: where a flavor missing from resourceFlavors is noted (Kueue keeps that
    ClusterQueue inactive); None: it is refused."""
    known = {f.name for f in flavors}
    out: list[ClusterQueue] = []
    for item in at.items():
        cq = _cluster_queue(item, known)
        cq = _missing_flavors(item, cq, known, notices)
        if any(other.name == cq.name for other in out):
            item.child("name", None).fail(f"duplicate ClusterQueue name {yaml_text(cq.name)}")
        out.append(cq)
    if not out:
        at.fail("must list at least one ClusterQueue")
    return tuple(out)


def _missing_flavors(
    at: KeyPath, cq: ClusterQueue, known: set[str], notices: Notices | None
) -> ClusterQueue:
    """A flavor no ResourceFlavor is named after: Kueue's webhook lets it through and its
    cache keeps the ClusterQueue inactive (reason FlavorNotFound, clusterqueue.go
    inactiveReason) until one is created; a hand-written file is warned (a typo, most
    likely)."""
    consequence = f"Kueue keeps ClusterQueue {cq.name} inactive"
    missing = missing_flavors(at, cq.resource_groups, known, notices, consequence)
    return replace(cq, missing_flavors=tuple(missing)) if missing else cq


def missing_flavors(
    at: KeyPath,
    groups: tuple[ResourceGroup, ...],
    known: set[str],
    notices: Notices | None,
    consequence: str,
) -> list[str]:
    """The flavors of `groups` (a ClusterQueue's or a Cohort's, at `at`) no ResourceFlavor is
    named after, each a warning saying `consequence` (`notices` None: refused)."""
    missing: list[str] = []
    for gi, group in enumerate(groups):
        for fi, fq in enumerate(group.flavors):
            if fq.name in known:
                continue
            where = at.child("resourceGroups", None).child(gi, None).child("flavors", None)
            name_at = where.child(fi, None).child("name", fq.name)
            problem = f"no ResourceFlavor named {yaml_text(fq.name)} in resourceFlavors"
            if notices is None:
                name_at.fail(problem)
            hint = did_you_mean(fq.name, known)
            notices.add(name_at, f"{problem}: {consequence}{'; ' + hint if hint else ''}")
            missing.append(fq.name)
    return missing


def _cluster_queue(at: KeyPath, flavors: set[str]) -> ClusterQueue:
    refuse_not_in_v2(at, CQ_NOT_IN_V2)
    fields = at.mapping(CQ_KEYS, ("name", "resourceGroups"))
    cohort = (
        fields["cohortName"].string(is_dns_subdomain, "cohort name")
        if "cohortName" in fields
        else None
    )
    strategy = (
        _choice(fields["queueingStrategy"], QUEUEING_STRATEGIES)
        if "queueingStrategy" in fields
        else QUEUEING_STRATEGIES[0]
    )
    groups = resource_groups(fields["resourceGroups"], flavors, queue_rules(cohort is not None))
    return ClusterQueue(
        name=fields["name"].string(is_dns_subdomain, "ClusterQueue name"),
        resource_groups=groups,
        cohort=cohort,
        queueing_strategy=strategy,
        preemption=_preemption(fields["preemption"]) if "preemption" in fields else Preemption(),
        fungibility=(
            _fungibility(fields["flavorFungibility"])
            if "flavorFungibility" in fields
            else FlavorFungibility()
        ),
        stop_policy=(
            _choice(fields["stopPolicy"], STOP_POLICIES) if "stopPolicy" in fields else "None"
        ),
        fair_weight=fair_weight(fields["fairSharing"]) if "fairSharing" in fields else None,
        admission_checks=load_checks.cluster_queue_rules(
            fields, {fq.name for g in groups for fq in g.flavors}
        ),
        namespace_selector=(
            load_local_queues.namespace_selector(fields["namespaceSelector"])
            if "namespaceSelector" in fields
            else LabelSelector()
        ),
        admission_mode=(
            load_local_queues.admission_mode(fields["admissionScope"])
            if "admissionScope" in fields
            else None
        ),
    )


def fair_weight(at: KeyPath) -> Fraction | None:
    """`fairSharing.weight` of a ClusterQueue or Cohort, with the webhook's rules
    (pkg/webhooks/common.go validateFairSharing): not negative; when not 0, above 1n."""
    fields = at.mapping(("weight",))
    if "weight" not in fields:
        return None
    weight = _quantity(fields["weight"])
    if 0 < weight <= Fraction(1, 10**9):
        fields["weight"].fail("When not 0, weight must be > 10e-9")
    return weight


def _choice(at: KeyPath, allowed: tuple[str, ...]) -> str:
    value = at.string()
    if value not in allowed:
        at.fail(f"{yaml_text(value)} is not one of {', '.join(allowed)}")
    return value


def _preemption(at: KeyPath) -> Preemption:
    fields = at.mapping(("withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"))
    within = (
        _choice(fields["withinClusterQueue"], WITHIN_CLUSTER_QUEUE)
        if "withinClusterQueue" in fields
        else "Never"
    )
    reclaim = (
        _choice(fields["reclaimWithinCohort"], RECLAIM_WITHIN_COHORT)
        if "reclaimWithinCohort" in fields
        else "Never"
    )
    borrow, threshold = "Never", None
    if "borrowWithinCohort" in fields:
        sub = fields["borrowWithinCohort"].mapping(("policy", "maxPriorityThreshold"))
        borrow = _choice(sub["policy"], BORROW_WITHIN_COHORT) if "policy" in sub else "Never"
        if "maxPriorityThreshold" in sub:
            threshold = sub["maxPriorityThreshold"].integer(-(2**31))
        if reclaim == "Never" and borrow != "Never":
            # The ClusterQueue webhook's rule and words (clusterqueue_webhook.go).
            fields["borrowWithinCohort"].fail(
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
            )
    return Preemption(within, reclaim, borrow, threshold)


def _fungibility(at: KeyPath) -> FlavorFungibility:
    fields = at.mapping(("whenCanBorrow", "whenCanPreempt", "preference"))
    out = FlavorFungibility(
        _choice(fields["whenCanBorrow"], WHEN_CAN_BORROW)
        if "whenCanBorrow" in fields
        else WHEN_CAN_BORROW[0],
        _choice(fields["whenCanPreempt"], WHEN_CAN_PREEMPT)
        if "whenCanPreempt" in fields
        else WHEN_CAN_PREEMPT[0],
    )
    if "preference" not in fields:
        return out
    preference = _choice(fields["preference"], FUNGIBILITY_PREFERENCES)
    if (out.when_can_borrow, out.when_can_preempt) != ("TryNextFlavor", "TryNextFlavor"):
        # The ClusterQueue webhook's rule and words (clusterqueue_webhook.go).
        fields["preference"].fail(
            f"preference {yaml_text(preference)} requires both whenCanBorrow and "
            "whenCanPreempt to be TryNextFlavor"
        )
    return replace(out, preference=preference)


def resource_groups(at: KeyPath, flavors: set[str], rules: QuotaRules) -> tuple[ResourceGroup, ...]:
    items = at.items()
    if not rules.min_groups <= len(items) <= MAX_GROUPS:
        at.fail(f"must list {rules.min_groups} to {MAX_GROUPS} resource groups, got {len(items)}")
    groups: list[ResourceGroup] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    pairs = 0
    for item in items:
        group = _resource_group(item, flavors, rules)
        for index, resource in enumerate(group.covered):
            if resource in seen_resources:
                item.child("coveredResources", None).child(index, None).fail(
                    f"{yaml_text(resource)} is already covered by another resource group"
                )
            seen_resources.add(resource)
        for index, fq in enumerate(group.flavors):
            if fq.name in seen_flavors:
                item.child("flavors", None).child(index, None).child("name", None).fail(
                    f"flavor {yaml_text(fq.name)} is already in another resource group"
                )
            seen_flavors.add(fq.name)
        pairs += len(group.covered) * len(group.flavors)
        groups.append(group)
    if pairs > MAX_PAIRS:
        at.fail(f"at most {MAX_PAIRS} flavor x resource pairs in total, got {pairs}")
    return tuple(groups)


def _resource_group(at: KeyPath, flavors: set[str], rules: QuotaRules) -> ResourceGroup:
    fields = at.mapping(("coveredResources", "flavors"), ("coveredResources", "flavors"))
    covered_at = fields["coveredResources"].items()
    covered = [c.string(is_qualified_name, "resource name") for c in covered_at]
    if not 1 <= len(covered) <= MAX_COVERED:
        fields["coveredResources"].fail(f"must list 1 to {MAX_COVERED} resources")
    for index, name in enumerate(covered):
        if name in covered[:index]:
            covered_at[index].fail(f"duplicate resource {yaml_text(name)}")
    flavor_items = fields["flavors"].items()
    if not 1 <= len(flavor_items) <= MAX_FLAVORS:
        fields["flavors"].fail(f"must list 1 to {MAX_FLAVORS} flavors")
    return ResourceGroup(
        covered=tuple(covered),
        flavors=tuple(_flavor_quotas(f, covered, flavors, rules) for f in flavor_items),
    )


def _flavor_quotas(
    at: KeyPath, covered: list[str], flavors: set[str], rules: QuotaRules
) -> FlavorQuotas:
    fields = at.mapping(("name", "resources"), ("name", "resources"))
    name = fields["name"].string(is_dns_subdomain, "ResourceFlavor name")
    items = fields["resources"].items()
    quotas = [_quota(r, rules) for r in items]
    names = [q.name for q in quotas]
    if names != covered:
        # Kueue's CEL rule and webhook: each flavor lists exactly the covered resources,
        # in the same order.
        fields["resources"].fail(
            f"must list exactly the coveredResources in the same order ({', '.join(covered)}),"
            f" got {', '.join(names) or 'none'}"
        )
    return FlavorQuotas(name, tuple(quotas))


def _quota(at: KeyPath, rules: QuotaRules) -> ResourceQuota:
    keys = ("name", "nominalQuota", "borrowingLimit", "lendingLimit")
    fields = at.mapping(keys, ("name", "nominalQuota"))
    nominal = _quantity(fields["nominalQuota"])
    limits: dict[str, Fraction | None] = {}
    for key in ("borrowingLimit", "lendingLimit"):
        limits[key] = _quantity(fields[key]) if key in fields else None
        if limits[key] is not None and not rules.limits_allowed:
            fields[key].fail(f"must be nil when {rules.limits_need} is empty")
    lending = limits["lendingLimit"]
    if lending is not None and rules.lending_at_most_nominal and lending > nominal:
        fields["lendingLimit"].fail("must be less than or equal to the nominalQuota")
    return ResourceQuota(
        name=fields["name"].string(is_qualified_name, "resource name"),
        nominal=nominal,
        borrowing_limit=limits["borrowingLimit"],
        lending_limit=lending,
    )


def _quantity(at: KeyPath) -> Fraction:
    try:
        value = parse_quantity(at.value)
    except QuantityError as err:
        at.fail(str(err))
    if value < 0:
        at.fail(f"must not be negative, got {kind(at.value)}")
    return value


def flavor_topologies(items: list[KeyPath], flavors: list[Flavor], topologies: set[str]) -> None:
    """Every `topologyName` names a Topology of the file; a TAS flavor has nodeLabels (the
    ResourceFlavor CEL rule: "at least one nodeLabel is required when topology is set")."""
    for at, flavor in zip(items, flavors, strict=True):
        if flavor.topology_name is None:
            continue
        where = at.child("topologyName", None)
        if flavor.topology_name not in topologies:
            where.fail(f"no Topology named {yaml_text(flavor.topology_name)} in topologies")
        if not flavor.node_labels:
            at.fail("at least one nodeLabel is required when topology is set")
