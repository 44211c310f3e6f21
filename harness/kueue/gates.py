"""Kueue v0.19.2's feature gates (pkg/features/kube_features.go): their names, and the one
parser of `--feature-gates A=true,B=false` every backend and provider uses.

Only names and values live here; what each gate does to placement is the fit model's business.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from harness.errors import HarnessError
from harness.scenario.keypath import yaml_text

KUEUE_V0_19_GATES = frozenset(
    {
        "AdmissionFairSharing",
        "AdmissionGatedBy",
        "AssignQueueLabelsForPods",
        "CleanupProvisioningRequestsOnEviction",
        "ConcurrentAdmission",
        "CustomMetricLabels",
        "DeferRayServiceFinalizationForRedisCleanup",
        "DisableWaitForPodsReady",
        "ElasticJobsViaWorkloadSlices",
        "ElasticJobsViaWorkloadSlicesWithTAS",
        "FailureRecoveryPolicy",
        "FairSharingPreemptWithinNominal",
        "FairSharingPrioritizeNonBorrowing",
        "FastQuotaReleaseInPodIntegration",
        "FinishOrphanedWorkloads",
        "FlavorFungibility",
        "FlavorFungibilityPreserveScanProgress",
        "HierarchicalCohorts",
        "KueueDRAIntegration",
        "KueueDRAIntegrationConsumableCapacity",
        "KueueDRAIntegrationExtendedResource",
        "KueueDRAIntegrationPartitionableDevices",
        "KueueDRARejectWorkloadsWhenDRADisabled",
        "LWSImmutableGroupSize",
        "LocalQueueMetrics",
        "ManagedJobsNamespaceSelectorAlwaysRespected",
        "MetricForWorkloadCreationLatency",
        "MetricsForCohorts",
        "MultiKueue",
        "MultiKueueAdaptersForCustomJobs",
        "MultiKueueAllowInsecureKubeconfigs",
        "MultiKueueClusterProfile",
        "MultiKueueIncrementalDispatcherConfig",
        "MultiKueueIncrementalDispatcherRespectConfigOrder",
        "MultiKueueKubeConfigPathValidation",
        "MultiKueueManagerQuotaAutomation",
        "MultiKueueOrchestratedPreemption",
        "MultiKueueRedoAdmissionOnEvictionInWorker",
        "MultiKueueRemoteSpecSync",
        "MultiKueueWaitForWorkloadAdmitted",
        "ObjectRetentionPolicies",
        "PartialAdmission",
        "PodIntegrationValidateGroupOwner",
        "PrioritizePreemptorWorkloads",
        "PriorityBoost",
        "PrioritySortingWithinCohort",
        "PropagateBatchJobLabelsToWorkload",
        "QuotaCheckStrategy",
        "ReclaimablePods",
        "RecomputeAssignmentUponPreemptionTargetsOverlap",
        "RejectUpdatesToCQWithInvalidOnFlavors",
        "RemoveFinalizersWithStrictPatch",
        "SchedulerLibraryIntegration",
        "SchedulerLongRequeueInterval",
        "SchedulerTimestampPreemptionBuffer",
        "SchedulingEquivalenceHashing",
        "ShortWorkloadNames",
        "SkipAncestorCheckForDeletedWorkloads",
        "SkipFinalizersForPodsSuspendedByParent",
        "SkipReassignmentForPodOwnedWorkloads",
        "SparkApplicationIntegration",
        "TASAssignmentsEncodingByHostnamePrefix",
        "TASBalancedPlacement",
        "TASCacheNodeMatchResults",
        "TASCacheTopologyTree",
        "TASCachingRemainingResources",
        "TASFailedNodeReplacement",
        "TASFailedNodeReplacementFailFast",
        "TASHandleOverlappingFlavors",
        "TASMultiLayerTopology",
        "TASProfileMixed",
        "TASRecomputeAssignmentWithinSchedulingCycle",
        "TASReplaceNodeDueToNotReadyOverFixedTime",
        "TASReplaceNodeOnNodeTaints",
        "TASReplaceNodeOnPodTermination",
        "TASRespectNodeAffinityPreferred",
        "TASValidateWorkloadSliceSize",
        "TLSOptions",
        "TopologyAwareScheduling",
        "UnadmittedWorkloadsExplicitStatus",
        "UnadmittedWorkloadsObservability",
        "ValidateRayAndSparkJobUpdates",
        "VectorizedResourceRequests",
        "VisibilityOnDemand",
        "WorkloadIdentifierAnnotations",
        "WorkloadPriorityClassDefaulting",
        "WorkloadRequestUseMergePatch",
        "WorkloadValidateResourcesAreNonNegative",
        "WorkloadValidationForPodSetMetadata",
    }
)


class GateError(HarnessError):
    """A malformed or unknown Kueue feature gate."""


def closest(name: str, n: int = 3) -> list[str]:
    """Up to n gate names that look like `name` (for a "did you mean" hint)."""
    return difflib.get_close_matches(name, sorted(KUEUE_V0_19_GATES), n=n, cutoff=0.6)


def unknown_gate(name: str) -> str:
    """One line saying `name` is not a Kueue v0.19 gate, naming the closest ones."""
    near = closest(name)
    hint = f"; closest: {', '.join(near)}" if near else ""
    return f"{yaml_text(name)} is not a Kueue v0.19 feature gate{hint}"


def parse_gates(
    gates: str | Mapping[str, bool] | None, source: str = "--feature-gates"
) -> dict[str, bool]:
    """`A=true,B=false` (or a mapping, checked the same way) -> {"A": True, "B": False}.

    Values are `true` or `false` in any case; anything else (`A=yes`, `A`) is a one-line
    GateError naming `source`, never a silent false: Kueue's own flag parser refuses `yes`.
    """
    if not gates:
        return {}
    items: list[tuple[str, str, object]]
    if isinstance(gates, Mapping):
        # As the user would write it after --feature-gates: `A=yes`, `A=null`, not `A=None`.
        items = [
            (f"{k}={v if isinstance(v, str) else yaml_text(v)}", str(k), v)
            for k, v in gates.items()
        ]
    else:
        items = []
        for item in filter(None, (part.strip() for part in gates.split(","))):
            name, sep, value = item.partition("=")
            items.append((item, name.strip(), value.strip().lower() if sep else None))
    out: dict[str, bool] = {}
    for text, name, raw in items:
        enabled = {"true": True, "false": False}.get(raw) if isinstance(raw, str) else raw
        if not name or not isinstance(enabled, bool):
            raise GateError(f"{source}: {yaml_text(text)}: expected NAME=true or NAME=false")
        if name not in KUEUE_V0_19_GATES:
            raise GateError(f"{source}: {unknown_gate(name)}")
        out[name] = enabled
    return out


def merged(cli: Mapping[str, bool], scenario: Mapping[str, bool]) -> dict[str, bool]:
    """The gates a scenario runs with: command-line gates apply to every scenario, and the
    scenario's own value wins on conflict, because its expectations were written for it."""
    return dict(sorted({**cli, **scenario}.items()))
