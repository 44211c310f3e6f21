"""The Kueue versions the fit model models and what differs between them for TAS
(docs/dev/kueue-version-differences.md, §1 gate defaults, §2 rules, §9 what the model does).

A version is its feature-gate defaults (pkg/features/kube_features.go of that version; a gate
the version does not register behaves as off, except where the behaviour it guards was
unconditional before the gate existed) plus the fixes that changed outcomes without a gate.
What the model does not model for a version is refused with the reason, as an unknown
version is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.errors import UnsupportedVersionError
from harness.fit.amount import quota_beyond_int64
from harness.fit.balanced import BalancedRules
from harness.fit.sorting import Algorithm
from harness.kueue.versions import DEFAULT_KUEUE, version_key
from harness.scenario.model import HOSTNAME, Scenario


@dataclass(frozen=True)
class KueueRules:
    """One Kueue version as the fit model sees it."""

    version: str
    gates: Mapping[str, bool] = field(default_factory=dict)
    """Defaults of the gates the model reads (where they differ from v0.19.2's, or the gate
    is missing and off)."""
    requeue_on_non_tas_pod_deletion: bool = True
    """v0.19.1 (kueue#13772): a non-TAS pod that goes away requeues the inadmissible TAS
    workloads of the ClusterQueues using its node's flavors. Before, only the TAS cache was
    updated (non_tas_usage_controller.go Reconcile), and they waited for another event."""
    leader_aware_best_fit: bool = True
    """v0.19.1 (kueue#13766): BestFit skips domains without room for a group's leader and
    moves the leader where the workers still fit. Before, leader capacity was ignored
    (sorting.Algorithm.leader_aware)."""
    leader_penalty_from_leader_domains: bool = True
    """v0.18 (kueue#10948): a parent's worker count with the leader takes the penalty of the
    children that can hold the leader only (sorting.Algorithm.leader_penalty_from_leader_
    domains); v0.17.1 takes the smallest penalty of all children."""
    grouped_pod_set_borrows_flavor: bool = True
    """v0.19.1 (kueue#13859): a grouped pod set requesting nothing takes its group's flavor.
    Before, it failed with "no TAS flavor assigned"."""
    count_in_reads_missing_as_zero: bool = True
    """v0.19 (pkg/resources/requests.go CountInWithLimitingResource over ResourceValue): a
    requested resource a node has no capacity entry for counts 0, ties broken by name.
    Before, the loop over the requests map returned at the first such resource (v0.18.2
    :198-201, v0.17.1 :186-189), so it is the limiting one; with several, a random one."""
    count_clamped_at_zero: bool = True
    """v0.18 (v0.18.2 pkg/resources/requests.go:208-218, "Clamp to 0"): a negative free
    capacity counts 0 pods. v0.17.1 divides it as it is (requests.go:196 `int32(cap /
    rValue)`, truncated toward zero): the node counts negative pods, is no resource exclusion
    (tas_flavor_snapshot.go:1617 `state == 0`), and lowers its parents' sums (:1684) and the
    fit count of the pending message (sorting.Algorithm.unclamped). Kueue then writes a
    negative count it takes into the topology assignment (:1453), which the API server
    rejects: the model refuses that case."""
    tas_request_error_blocks: bool = True
    """v0.18 (flavorassigner.go `psError`, which clears the cached representative mode): a
    pod set whose TAS request cannot be built (it requests nothing, so no TAS flavor is
    assigned; or its ClusterQueue has no TAS flavor) makes the workload NoFit. v0.17.1 only
    marked the pod set (tas_flavorassigner.go:77 `psAssignment.error`) after assignFlavors
    had cached the mode (flavorassigner.go:686): the workload goes on as Fit or Preempt and
    is admitted without a topology assignment for that pod set."""
    assumed_usage_counts_pods: bool = True
    """v0.18 (util/tas ComputeUsagePerDomain adds `pods: count`): a workload's pod sets placed
    earlier take their pods' slots from the leaves the later ones are placed on. v0.17.1's
    addAssumedUsage (tas_flavor_snapshot.go:624-631) adds the per-pod requests only, so
    `pods` is not counted between a workload's own pod sets (admitted workloads' usage
    counts it in every version: tas_flavor.go updateUsage)."""
    tas_usage_from_pod_spec: bool = True
    """v0.18 (workload.go totalRequestsFromAdmission and ComputeTASNetUsage: per-pod requests
    from the pod spec). v0.17.1 divides the quota requests by the count (workload.go:639,
    flavorassigner.go:95-104), which hold `pods` when the ClusterQueue covers it, and the
    TAS cache adds `pods` once more (tas_flavor.go updateUsage, clusterqueue_snapshot.go
    updateTASUsage): there an admitted TAS workload holds two pod slots per pod, and the
    scheduler's last check (Fits) asks one slot per pod."""
    node_named_like_its_root_placed: bool = True
    """v0.19.1 (kueue#14232): a node whose hostname equals its top-level domain's value is a
    domain of its own. Before, the leaf and that domain shared one ID, so the leaf became its
    own parent (tas_flavor_snapshot.go initializeHelper) and whether the top-level domain was
    registered as a root at all depended on the Go map order of the leaves: refused."""
    preemption_request_without_pods: bool = True
    """v0.18 (flavorassigner.go:604 copies the pod sets' requests before adding `pods`): the
    quota the preemption code asks for (preemption.go:143 `TotalRequestsFor`) has no `pods`.
    v0.17.1 adds `pods` into the workload's own TotalRequests (flavorassigner.go:570-593),
    so where the ClusterQueue covers `pods` the preemptor asks for them too: a queue with no
    `pods` quota left then has no hierarchical advantage, and its no-borrowing attempt fails
    on `pods` (classical/hierarchical_preemption.go:158, preemption.go:601)."""
    not_ready_timer_gated: bool = True
    """v0.19 (kueue#13043, CHANGELOG-0.19.md:410): a node NotReady for NodeFailureDelay (30 s)
    is failed whatever its pods do only with TASReplaceNodeDueToNotReadyOverFixedTime, off
    (node_controller.go:179). Before, unconditionally (v0.18.2 node_controller.go:176-184,
    v0.17.1 :179-187): every workload on the node gets it in unhealthyNodes and the second
    pass moves its pods' assignment while they still run there (kueue#12735's drift). The
    same Reconcile then finds the pods progressing and removes the node again
    (reconcileWorkloadsOnNode -> handleHealthyNode), but the second pass works from the
    copy queued at the first write (pkg/cache/queue/manager.go:898-909) and replaces it."""
    replacement_domain_by_id: bool = True
    """v0.19.2 (kueue#14452, CHANGELOG-0.19.md:37): a replacement leaf belongs to the required
    domain when its ID equals it or starts with it plus "," (TopologyDomainID.BelongsTo).
    Before, a plain string prefix (v0.18.2 tas_flavor_snapshot.go:1727-1733
    belongsToRequiredDomain, v0.17.1 :1634-1640): rack r1's node may be replaced from r10."""
    taints_judged_with_flavor_tolerations: bool = True
    """v0.18 (node_controller.go podSetsWithEffectiveTolerationsOnNode, podset.FromAssignment):
    a taint is judged against the pod set's tolerations merged with its flavor's. v0.17.1
    reads the pod sets' own tolerations only (node_controller.go getWorkloadStatus,
    workload.PodSetsOnNode), so a taint only the flavor tolerates fails the node."""
    unhealthy_only_from_assignment: bool = True
    """v0.17.2 (kueue#10837, CHANGELOG-0.17.md:255): a failed node is added to unhealthyNodes
    only for workloads whose assignment names it. v0.17.1 adds it as well for workloads with
    "late" pods there (released onto it, never bound, then the assignment moved:
    node_controller.go getWorkloadsOnNode): the model does not keep such pods, so a
    replacement that leaves one is refused."""
    scan_start_in_request_order: bool = True
    """v0.19 (flavorassigner.go `requests.Iter()`, SliceRequests order): a group's resources
    are assigned in a fixed order, so a resource group's scan starts where the record of its
    first requested resource says. Before, the loop ranged over the requests map (v0.18.2
    flavorassigner.go:679, v0.17.1 :645) in Go map order: each cycle starts from the record of
    a random resource, and while a record is pending the workload is retried at once
    (cluster_queue.go requeueIfNotPresent, PendingFlavors), so the furthest record is soon
    the one that counts; nearer ones only repeat an attempt that failed. The model starts at
    the furthest record (kueue-findings/v2-group-leader-without-gpu-loses-flavor-scan: real
    Kueue v0.18.2 moves the group on to a100)."""
    quota_reasons_past_no_fit: bool = True
    """v0.19 (flavorassigner.go `requests.ForEach`, whose `return` only skips a resource):
    the quota message names every resource short in the flavor. Before, the loop over the
    requests map broke at the first NoFit resource (v0.18.2 flavorassigner.go:867-904,
    v0.17.1 :833-870), in Go map order: with a NoFit resource and another one short, which
    of them the message names is random."""

    quota_beyond_int64_unlimited: bool = True
    """v0.18 (pkg/resources/amount.go AmountFromQuantity, harness.fit.amount): a
    nominalQuota, borrowingLimit or lendingLimit at or above the int64 limit is Unlimited.
    v0.17.1 reads quotas with ResourceValue (pkg/cache/scheduler/resource.go
    createResourceQuotas, pkg/resources/requests.go:104), Quantity.MilliValue / Value, which
    overflow: to 0 or to a wrapped value depending on how the API server stored the quantity
    (apimachinery positiveScaleInt64, scaledValue), and cohort sums wrap (resource_node.go
    accumulateFromChild `+=`): refused."""
    transformations_kept_apart: bool = True
    """v0.19 (pkg/workload/workload.go applyResourceTransformations): outputs are computed
    from the exact input x multiplyBy on a copy, summed apart from the requests and floored
    at zero, then added to them (harness.kueue.quota_requests). v0.18.2 (:518-556) and
    v0.17.1 (:494-532) build one map: multiplyBy multiplies the input itself (Quantity.Mul by
    the multiplier's Value(), rounded up), so a Retain input is kept multiplied; each output
    is factor x the multiplied input's Value() (rounded up); nothing is floored, and a request
    kept under an output's name is assigned, not added, so whether it overwrites the output
    or the output adds to it is Go map order (refused as Nondeterministic)."""
    cohortless_fair_ordering_ends: bool = True
    """v0.18 (kueue#10891, fairsharing/ordering.go Iter `return` after the loop over the
    preemptor's own ClusterQueue): fair-sharing preemption in a ClusterQueue without a
    Cohort ends when its own candidates do. v0.17.1 (ordering.go:89-105) goes on to
    `preemptorCq.Parent().Root()`, a nil parent: Kueue panics while it nominates a workload
    whose own queue's candidates all go without making room (refused). Fair sharing is
    otherwise the same in the three versions (strategies, shares, target order)."""
    pods_ready_on_by_default: bool = True
    """v0.19 (pkg/util/waitforpodsready Enabled, defaults.go): waitForPodsReady is on
    without a section. v0.17.1 and v0.18.2 run it only with the section: without it Kueue
    writes no PodsReady condition and a pods-not-ready step changes nothing (refused: the
    embedded cluster waits for the condition)."""
    pods_ready_timeout_defaulted: bool = True
    """v0.19 (apis/config/v1beta2 defaults.go): a waitForPodsReady section without a
    timeout (or 0) waits 30 minutes. v0.17.1 and v0.18.2 refuse to start with it
    (pkg/config/validation.go validateWaitForPodsReady, "timeout: must be specified", 17:207,
    18:242): refused."""
    pods_ready_with_faults: bool = True
    """v0.19 (scheduler.go:581-584, kueue#13736): blockAdmission does not hold the second
    pass that repairs a workload on a failed node. v0.18.2 (:526-539) and v0.17.1 (:383-396)
    take the repaired workload's admission away while any workload is not ready, and
    v0.17.1 skips the PodsReady timeout while a workload has unhealthyNodes
    (workload_controller.go:263-266, fixed by kueue#10666): waitForPodsReady beside node
    faults is not modelled there (refused)."""
    flavorless_admission_needs_no_checks: bool = True
    """v0.18 (pkg/workload/workload.go admissionChecksForAdmission intersects the checks'
    flavors with the admission's): an admission on no flavor (a workload requesting
    nothing) needs no check and is admitted at once. v0.17.1 gives such an admission every
    check of its ClusterQueue (:1541-1549, "Admission has no Flavors; assigning all
    checks", kueue#10316): it holds quota until they are all Ready."""
    namespace_mismatch_lowercase: bool = True
    """v0.19 (pkg/workload/resources.go ErrNamespaceMismatch): "workload namespace doesn't
    match ClusterQueue selector". Before, the scheduler's nominate wrote "Workload namespace
    ..." (v0.18.2 scheduler.go:620, v0.17.1 :509); the requeue reason is the same."""
    quota_check_strategy_field: bool = True
    """v0.18 (apis/config/v1beta2 Resources.QuotaCheckStrategy, gate QuotaCheckStrategy, alpha
    and off in v0.18, beta and on in v0.19): v0.17.1's Configuration has no such field."""

    overlapping_flavors_share_usage: bool = True
    """v0.18 (kueue#11210, gate TASHandleOverlappingFlavors): a hostname-level TAS flavor's
    snapshot counts the TAS usage of every flavor on its nodes (v0.18.2 snapshot.go:200-218,
    tas_flavor.go:142-148), and a workload's pod sets placed on one such flavor are assumed
    on the next (clusterqueue_snapshot.go:217-231, tas_flavor_snapshot.go:542-544). v0.17.1
    has no such gate: a flavor's snapshot holds only its own workloads' usage
    (tas_flavor.go:129-131) plus non-TAS pods, which exclude every TAS pod whatever its flavor
    (non_tas_usage_controller.go:87 `utiltas.IsTAS`), and each flavor starts with no assumed
    usage (clusterqueue_snapshot.go:201-206, tas_flavor_snapshot.go:492). So a node shared by
    two flavors is over-committed in Kueue's view, and kube-scheduler leaves the pod that
    does not fit Pending. With the gate off, v0.18+ does the same."""

    balanced_falls_back: bool = True
    """v0.18 (kueue#11136, tas_flavor_snapshot.go v0.18.2:943-947): when balanced placement
    (TASBalancedPlacement) finds a threshold but cannot place at it, Kueue falls back to
    BestFit. v0.17.1 returned the reason (tas_flavor_snapshot.go:880-883), so the pod set
    fails with "TAS Balanced Placement: ..." where BestFit would have placed it."""
    balanced_ties_by_level_values: bool = True
    """v0.19 (kueue#12052, tas_balanced_placement.go v0.19.2:79-90, :214-230, :244-246): the
    domain lists balanced placement walks are sorted, ties going to the lowest level values.
    Before, they came in Go map order (`maps.Values(s.domainsPerLevel[...])`, v0.18.2:243-245,
    v0.17.1:247-249; a domain's children are appended while ranging over the leaf map,
    tas_flavor_snapshot.go initialize), the entropy sort returned 0 on a tie (v0.18.2:211-231)
    and the dynamic programme kept the first set it met in input order (v0.18.2:81-146): with
    tied candidates the placement is random (harness/fit/balanced.py tries two orders)."""
    balanced_checks_fit_after_pruning: bool = True
    """v0.18 (tas_balanced_placement.go v0.18.2:267-281, kueue#10948): a candidate group of
    sibling domains that no longer holds the request once the domains below the threshold
    are pruned is skipped. v0.17.1 ignored that check (:266-272: the greedy count, 0 when it
    does not fit, still competes and wins on a higher threshold), so the placement then fails
    with "Cannot find optimal domain set to fit the request". It happens where the pruned
    domains' children sit below the slice level (their slice counts are 0), e.g. a preferred
    level that is also the slice level."""
    balanced_leader_threshold_by_workers: bool = True
    """v0.18 (kueue#10948, v0.19.2's CHANGELOG-0.18.md:197): with a leader/worker group, balanced
    placement caps the threshold by the last worker domain's slices (tas_balanced_placement.go
    v0.18.2:72), retries with a threshold reserving room for the leader when the pruned
    candidate no longer fits (:262-281), and pruning keeps the worker capacity of a domain
    too small to host the leader at the threshold (`pruneDomainNodeBelowThreshold`
    :361-370, `clearLeaderCapacity`). v0.17.1 capped the threshold by that domain's slices
    beside a leader (tas_balanced_placement.go v0.17.1:71-78, issue 7494: "while pruning we
    don't know which node will host the leader"), pruned in place with no retry (:264-273)
    and cleared every domain whose slices beside a leader fall below the threshold (:319-333;
    its roll-up, `fillInCountsHelper`, takes every child's leader penalty,
    leader_penalty_from_leader_domains). Without a group the two read the same (a domain's
    slices beside no leader are its slices). fit/balanced.py `_best_candidate`, `_prune`."""

    def pod_slots_held(self, covers_pods: bool) -> int:
        """Pod slots an admitted TAS pod holds on its node (tas_usage_from_pod_spec)."""
        return 2 if covers_pods and not self.tas_usage_from_pod_spec else 1

    def counting(self, best_fit: bool) -> Algorithm:
        """The placement algorithm with this version's node counting."""
        return Algorithm(
            best_fit,
            missing_resource_first=not self.count_in_reads_missing_as_zero,
            unclamped=not self.count_clamped_at_zero,
            leader_aware=self.leader_aware_best_fit,
            leader_penalty_from_leader_domains=self.leader_penalty_from_leader_domains,
        )

    def balanced(self, scenario: Scenario) -> BalancedRules | None:
        """How this version runs balanced placement, or None when TASBalancedPlacement is off."""
        if not self.gate(scenario, "TASBalancedPlacement"):
            return None
        return BalancedRules(
            self.balanced_falls_back,
            self.balanced_ties_by_level_values,
            self.balanced_checks_fit_after_pruning,
            self.balanced_leader_threshold_by_workers,
        )

    def shares_usage(self, scenario: Scenario) -> bool:
        """Whether hostname-level TAS flavors count each other's usage on a shared node
        (overlapping_flavors_share_usage: the gate is on by default wherever it exists, so
        only the scenario's featureGates can turn it off)."""
        gate = scenario.feature_gates.get("TASHandleOverlappingFlavors", True)
        return self.overlapping_flavors_share_usage and gate

    def gate(self, scenario: Scenario, name: str, default: bool = False) -> bool:
        """The gate's value in this scenario: its featureGates, else this version's default
        (`default`: v0.19.2's, for a gate whose default is the same in every version)."""
        if name in scenario.feature_gates:
            return scenario.feature_gates[name]
        return self.gates.get(name, V0_19_2_GATES.get(name, default))


V0_19_2_GATES: Mapping[str, bool] = {
    "SchedulingEquivalenceHashing": True,
    "TASHandleOverlappingFlavors": True,
    "TASRecomputeAssignmentWithinSchedulingCycle": True,
    "FlavorFungibilityPreserveScanProgress": True,
    "TASMultiLayerTopology": True,
    "TASBalancedPlacement": False,
    "QuotaCheckStrategy": True,
}
"""v0.19.2's defaults of the gates whose default differs between the three versions, plus
TASBalancedPlacement (its algorithm changed, §2.3-2.4)."""

_BEFORE_V0_19 = {
    # Registered in v0.19.0 (L955): off before, the scan restarts more often (fit/cycle.py
    # Model.preserve_scan: skipped entries, any admission or eviction in the cohort, and
    # every status write drop the scan progress).
    "FlavorFungibilityPreserveScanProgress": False,
    # Alpha, off, before v0.19 (0.17.1 L528, 0.18.2 L628).
    "TASMultiLayerTopology": False,
    # Alpha, off, in v0.18.2 (L671); not registered in v0.17.1.
    "QuotaCheckStrategy": False,
}

RULES: dict[str, KueueRules] = {
    "v0.17.1": KueueRules(
        "v0.17.1",
        gates={
            **_BEFORE_V0_19,
            "SchedulingEquivalenceHashing": False,  # Beta but off (L531)
            "TASHandleOverlappingFlavors": False,  # not registered before v0.18
            "TASRecomputeAssignmentWithinSchedulingCycle": False,  # not registered before v0.18
        },
        overlapping_flavors_share_usage=False,
        requeue_on_non_tas_pod_deletion=False,
        node_named_like_its_root_placed=False,
        leader_aware_best_fit=False,
        leader_penalty_from_leader_domains=False,
        grouped_pod_set_borrows_flavor=False,
        scan_start_in_request_order=False,
        quota_reasons_past_no_fit=False,
        count_in_reads_missing_as_zero=False,
        count_clamped_at_zero=False,
        tas_request_error_blocks=False,
        assumed_usage_counts_pods=False,
        tas_usage_from_pod_spec=False,
        preemption_request_without_pods=False,
        not_ready_timer_gated=False,
        replacement_domain_by_id=False,
        taints_judged_with_flavor_tolerations=False,
        unhealthy_only_from_assignment=False,
        balanced_falls_back=False,
        balanced_checks_fit_after_pruning=False,
        balanced_ties_by_level_values=False,
        balanced_leader_threshold_by_workers=False,
        quota_beyond_int64_unlimited=False,
        transformations_kept_apart=False,
        quota_check_strategy_field=False,
        namespace_mismatch_lowercase=False,
        flavorless_admission_needs_no_checks=False,
        cohortless_fair_ordering_ends=False,
        pods_ready_timeout_defaulted=False,
        pods_ready_with_faults=False,
        pods_ready_on_by_default=False,
    ),
    "v0.18.2": KueueRules(
        "v0.18.2",
        gates=_BEFORE_V0_19,
        transformations_kept_apart=False,
        namespace_mismatch_lowercase=False,
        requeue_on_non_tas_pod_deletion=False,
        node_named_like_its_root_placed=False,
        leader_aware_best_fit=False,
        grouped_pod_set_borrows_flavor=False,
        scan_start_in_request_order=False,
        quota_reasons_past_no_fit=False,
        count_in_reads_missing_as_zero=False,
        not_ready_timer_gated=False,
        replacement_domain_by_id=False,
        balanced_ties_by_level_values=False,
        pods_ready_timeout_defaulted=False,
        pods_ready_with_faults=False,
        pods_ready_on_by_default=False,
    ),
    "v0.19.2": KueueRules("v0.19.2"),
}

MODELLED_KUEUE_VERSIONS = tuple(RULES)


def rules_for(scenario: Scenario) -> KueueRules:
    """The rules of the version the scenario is checked as (its kueue:, or --kueue-version;
    none: v0.19.2), or UnsupportedVersionError naming the versions modelled."""
    return _modelled(scenario, scenario.kueue or DEFAULT_KUEUE, "kueue")


def upgraded_rules(scenario: Scenario, running: KueueRules, version: str) -> KueueRules:
    """The rules after an `upgrade-kueue: version` step, from those `running`; refused when
    the version is not newer (--kueue-version may start the scenario on a later one) or the
    model cannot answer for it."""
    if version_key(version) <= version_key(running.version):
        raise UnsupportedVersionError(
            f"{scenario.path}: steps: upgrade-kueue: {version} is not newer than "
            f"{running.version}, the version running then (--kueue-version?)"
        )
    return _modelled(scenario, version, "steps: upgrade-kueue")


def _modelled(scenario: Scenario, version: str, key: str) -> KueueRules:
    """The rules of `version`, or UnsupportedVersionError naming `key` (where the scenario
    asks for the version) when the model does not model it or cannot answer this scenario."""
    if version not in RULES:
        raise UnsupportedVersionError(
            f"{scenario.path}: {key}: the fit model models Kueue "
            f"{', '.join(MODELLED_KUEUE_VERSIONS)}, not {version}"
        )
    rules = RULES[version]
    problem = _unmodelled(scenario, rules)
    if problem is not None:
        raise UnsupportedVersionError(f"{scenario.path}: {key}: {version}: {problem}")
    return rules


def _unmodelled(scenario: Scenario, rules: KueueRules) -> str | None:
    """Why the model cannot answer for this version, or None."""
    if rules.version == DEFAULT_KUEUE:
        return None
    gate = "TASReplaceNodeDueToNotReadyOverFixedTime"
    if not rules.not_ready_timer_gated and gate in scenario.feature_gates:
        return (
            f"featureGates.{gate}: Kueue {rules.version} does not register the gate (new in "
            "v0.19, kueue#13043); its NotReady timer always fails a node"
        )
    if rules.gate(scenario, "TASMultiLayerTopology"):
        return "TASMultiLayerTopology before v0.19 is not modelled"
    if not rules.quota_beyond_int64_unlimited and (where := quota_beyond_int64(scenario)):
        return (
            f"{where}: a quota beyond int64 overflows before v0.18 (Quantity.MilliValue / "
            "Value to 0 or a wrapped value, by how the quantity is stored): not modelled"
        )
    if not rules.node_named_like_its_root_placed and (node := _named_like_root(scenario)):
        return (
            f"node {node} is named like its top-level topology domain: before v0.19.1 the "
            "two share a domain ID and which domains Kueue places on depends on Go map "
            "order (kueue#14232)"
        )
    return None


def _named_like_root(scenario: Scenario) -> str | None:
    """A node whose hostname is also its top-level domain's value, in a topology of several
    levels ending at the hostname (the leaf's domain ID is then the hostname alone)."""
    for node in scenario.nodes:
        for flavor in scenario.flavors_of(node):
            topology = scenario.topology_of(flavor)
            if topology is None or len(topology.levels) < 2:
                continue
            if topology.levels[-1] != HOSTNAME:
                continue
            if node.labels.get(topology.levels[0]) == node.name:
                return node.name
    return None
