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

import math
from collections.abc import Mapping
from fractions import Fraction

from harness.k8s.quantity import CPU, INT64_MAX, INT64_MIN, kueue_units
from harness.scenario.kueue_config import QuotaResources, ResourceTransformation

Resources = Mapping[str, Fraction]


def quota_requests(config: QuotaResources, requests: Resources) -> Resources:
    """One pod's requests as Kueue v0.19.2 counts them against quota; `requests` itself when
    the section changes nothing (the common case, without copying)."""
    if not config.exclude_prefixes and not config.transformations:
        return requests
    kept = _not_excluded(config, requests)
    transformed = _transformed(kept, {t.input: t for t in config.transformations})
    # FloorToZero (totalRequestsFromPodSets): nothing counts below zero.
    return {name: max(q, Fraction(0)) for name, q in transformed.items()}


def _not_excluded(config: QuotaResources, requests: Resources) -> dict[str, Fraction]:
    """The requests no excludeResourcePrefixes entry names (every Kueue version)."""
    return {
        name: q
        for name, q in requests.items()
        if not any(name.startswith(prefix) for prefix in config.exclude_prefixes)
    }


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


class OutputNameClash(ValueError):
    """Before v0.19 a transformation's output named like a request kept in the result is
    added to it or overwritten by it in Go map order (the message names the resource)."""


class BeyondInt64(ValueError):
    """Before v0.19 a quantity whose Kueue units do not fit int64 is read with
    Quantity.Value / MilliValue, which wrap or give 0 by how the quantity is stored (the
    message names the resource)."""


def quota_requests_before_v0_19(config: QuotaResources, requests: Resources) -> Resources:
    """One pod's requests as Kueue v0.17.1 / v0.18.2 count them against quota
    (pkg/workload/workload.go applyResourceTransformations, the same in both; no FloorToZero
    in totalRequestsFromPodSets), or OutputNameClash where Go map order decides."""
    if not config.exclude_prefixes and not config.transformations:
        return requests
    kept = _not_excluded(config, requests)
    by_input = {t.input: t for t in config.transformations}
    if not any(name in by_input for name in kept):
        return kept
    assigned: dict[str, Fraction] = {}
    generated: dict[str, Fraction] = {}
    contributes: set[str] = set()
    for name, quantity in kept.items():
        rule = by_input.get(name)
        if rule is None:
            assigned[name] = quantity
            continue
        # inputQuantity.Mul(q.Value()): the input itself, by the multiplier rounded up.
        if rule.multiply_by and rule.multiply_by in kept:
            quantity = quantity * _go_value(kept[rule.multiply_by])
        for output, factor in rule.outputs.items():
            # baseFactor.Mul(inputQuantity.Value()): from the input rounded up.
            part = factor * _go_value(quantity)
            generated[output] = generated.get(output, Fraction(0)) + part
            if part != 0:
                contributes.add(output)
        if not rule.replace:
            assigned[name] = quantity  # Retain keeps the multiplied input
    clash = sorted(contributes & assigned.keys())
    if clash:
        raise OutputNameClash(clash[0])
    merged = {**assigned, **generated}
    for name, q in merged.items():
        if abs(q) * (1000 if name == CPU else 1) > INT64_MAX:
            raise BeyondInt64(name)
    return {name: _rounded_like_go(name, q) for name, q in merged.items()}


def _go_value(quantity: Fraction) -> int:
    """Quantity.Value(): rounded up, away from zero."""
    whole = math.ceil(abs(quantity))
    return whole if quantity >= 0 else -whole


def _rounded_like_go(resource: str, quantity: Fraction) -> Fraction:
    """A negative quantity (a negative factor, never floored before v0.19) rounded away from
    zero in Kueue's units, as ResourceValue does, so kueue_units's ceiling keeps it."""
    if quantity >= 0 or quantity.denominator == 1:
        return quantity
    scale = 1000 if resource == CPU else 1
    return Fraction(_go_value(quantity * scale), scale)


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
