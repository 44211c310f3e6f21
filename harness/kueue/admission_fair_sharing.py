"""Admission fair sharing's arithmetic in Kueue v0.19.2 (pkg/util/admissionfairsharing,
pkg/scheduler/scheduler.go updateEntryPenalty, apis/config/v1beta2/defaults.go).

Within a ClusterQueue with `admissionScope.admissionMode: UsageBasedAdmissionFairSharing`
(and `kueueConfig.admissionFairSharing` set, gate AdmissionFairSharing on: beta, on since
v0.15) pending workloads are ordered first by their LocalQueue's usage, lowest first, then
as usual (pkg/cache/queue/cluster_queue.go queueOrderingFunc: before priority).

A LocalQueue's usage is the sum over resources of weight * (consumed + pending penalty),
divided by its own weight (<= 0: +Inf; resourceWeights default 1). When the scheduler
reserves quota it charges the LocalQueue an entry penalty: the workload's total requests *
alpha, alpha = 1 - 0.5^(sampling / halfLife) (0 when the half-life is 0). The workload
controller folds it into `consumed` when the workload is Admitted, and the LocalQueue
controller adds admitted usage decayed over wall-clock time every `usageSamplingInterval`:
time the scenario does not have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from harness.k8s.duration import seconds
from harness.scenario.model import Scenario

USAGE_BASED = "UsageBasedAdmissionFairSharing"
NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"
"""The pending message of a workload whose namespace its ClusterQueue's namespaceSelector
does not match (pkg/workload/resources.go ErrNamespaceMismatch, written by nominate)."""
DEFAULT_SAMPLING = 300.0
"""usageSamplingInterval when absent or 0 (defaults.go: 5m)."""


@dataclass(frozen=True)
class AfsConfig:
    """`kueueConfig.admissionFairSharing` as the scheduler reads it."""

    half_life: float
    sampling: float = DEFAULT_SAMPLING
    resource_weights: Mapping[str, float] = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        """calculateAlphaRate(sampling, halfLife)."""
        if self.half_life == 0:
            return 0.0
        return float(1.0 - 0.5 ** (self.sampling / self.half_life))

    def weighted(self, resources: Mapping[str, float]) -> float:
        """sum of weight * quantity (CalculateUsage before dividing by the queue's weight)."""
        return sum(self.resource_weights.get(r, 1.0) * q for r, q in resources.items())


def afs_config(document: Mapping[str, Any]) -> AfsConfig | None:
    """The config from a kueueConfig document, or None when the section is absent."""
    section = document.get("admissionFairSharing")
    if section is None:
        return None
    sampling = seconds(str(section.get("usageSamplingInterval", "0"))) or DEFAULT_SAMPLING
    weights = {str(k): float(v) for k, v in (section.get("resourceWeights") or {}).items()}
    return AfsConfig(seconds(str(section["usageHalfLifeTime"])), sampling, weights)


def not_run(scenario: Scenario) -> str | None:
    """Why an engine without Kueue's controllers cannot predict the scenario's admission fair
    sharing order, or None: an `admitted` entry of an admission-fair-sharing ClusterQueue,
    whose LocalQueue's consumed usage Kueue takes from the time between its LocalQueue's first
    reconcile and the admission (localqueue_controller.go initializeAfsIfNeeded,
    workload_controller.go updateAfsConsumedUsage)."""
    if afs_config(scenario.kueue_config.document) is None:
        return None
    scoped = {cq.name for cq in scenario.cluster_queues if cq.admission_mode == USAGE_BASED}
    for a in scenario.admitted:
        if a.queue in scoped:
            return (
                f"admitted: {a.name}: an admitted workload of ClusterQueue {a.queue}, which "
                "uses admission fair sharing: its LocalQueue's usage depends on when Kueue "
                "samples it (not run; submit it as a workload instead)"
            )
    return None


def queue_usage(weighted: float, lq_weight: Fraction | None) -> float:
    """CalculateUsage's division: a LocalQueue weight of 0 or less makes it +Inf."""
    weight = float(lq_weight) if lq_weight is not None else 1.0
    if weight <= 0:
        return math.inf
    return weighted / weight
