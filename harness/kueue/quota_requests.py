"""What Kueue counts against quota for one pod: its requests after the Configuration's
`resources` section (rules §12). Kueue v0.19.2 builds a Workload's totals this way
(pkg/workload/workload.go totalRequestsFromPodSets: dropExcludedResources, then
applyResourceTransformations, then FloorToZero and x count); TAS placement does not: it
places the pod's own requests (tas_flavorassigner.go podSetTopologyRequest), so callers use
this for quota only.

Pure and exact: quantities stay Fractions (Kueue multiplies inf.Dec values); the caller turns
the result into Kueue's integer units per pod (kueue_units) before multiplying by the count.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from harness.k8s.quantity import INT64_MAX, INT64_MIN, kueue_units
from harness.scenario.kueue_config import QuotaResources, ResourceTransformation

Resources = Mapping[str, Fraction]


def quota_requests(config: QuotaResources, requests: Resources) -> Resources:
    """One pod's requests as Kueue v0.19.2 counts them against quota; `requests` itself when
    the section changes nothing (the common case, without copying)."""
    if not config.exclude_prefixes and not config.transformations:
        return requests
    kept = {
        name: q
        for name, q in requests.items()
        if not any(name.startswith(prefix) for prefix in config.exclude_prefixes)
    }
    transformed = _transformed(kept, {t.input: t for t in config.transformations})
    # FloorToZero (totalRequestsFromPodSets): nothing counts below zero.
    return {name: max(q, Fraction(0)) for name, q in transformed.items()}


def _transformed(
    requests: Mapping[str, Fraction], by_input: Mapping[str, ResourceTransformation]
) -> dict[str, Fraction]:
    """applyResourceTransformations (v0.19.2): an input with a transformation adds
    `quantity x factor` to each output (times the `multiplyBy` resource's request when the
    pod asks for it) and stays only under Retain; outputs from several inputs add up, and a
    negative total output counts as zero. Untransformed requests pass through, and an output
    named like one of them is added to it."""
    retained: dict[str, Fraction] = {}
    generated: dict[str, Fraction] = {}
    for name, quantity in requests.items():
        rule = by_input.get(name)
        if rule is None:
            retained[name] = quantity
            continue
        base = quantity
        if rule.multiply_by and rule.multiply_by in requests:
            base = quantity * requests[rule.multiply_by]
        for output, factor in rule.outputs.items():
            generated[output] = generated.get(output, Fraction(0)) + base * factor
        if not rule.replace:
            retained[name] = quantity
    for output, total in generated.items():
        retained[output] = retained.get(output, Fraction(0)) + max(total, Fraction(0))
    return retained


def pod_set_units(resource: str, per_pod: Fraction, count: int) -> int:
    """A pod set's total of `resource` as Kueue holds it: one pod's quantity in Kueue's int64
    units (capped at the int64 range, SafeValue), times the count, saturating at that range
    (MapRequests.Mul: SaturatingMul), so a huge transformed product stays the largest int64
    instead of wrapping negative and being floored away."""
    return min(max(kueue_units(resource, per_pod) * count, INT64_MIN), INT64_MAX)


def declared_only(config: QuotaResources, gate_on: bool) -> bool:
    """Whether resources no resource group of the ClusterQueue covers are skipped rather than
    refused: quotaCheckStrategy IgnoreUndeclared with the QuotaCheckStrategy gate on
    (flavorassigner.go IgnoreUndeclaredResources; cmd/kueue/main.go quotaCheckStrategy)."""
    return config.ignore_undeclared and gate_on
