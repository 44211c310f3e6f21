"""Kueue's quota amounts (pkg/resources/amount.go, v0.18 and later): a quota whose value does
not fit int64 is Unlimited, and quota arithmetic keeps it so instead of wrapping.

`AmountFromQuantity` reads a nominalQuota, borrowingLimit or lendingLimit at or above
math.MaxInt64 units (for cpu: at or above MaxInt64/1000 cores, whose millicores would
overflow) as Unlimited, the sentinel math.MaxInt64. Add propagates it and saturates bounded
sums; Sub keeps Unlimited minus a bounded value Unlimited, gives a bounded value minus
Unlimited as math.MinInt64, and Unlimited minus Unlimited as 0. Comparisons are plain int64
comparisons (the sentinel is the largest value), so amounts stay Python ints here.
"""

from __future__ import annotations

from fractions import Fraction

from harness.k8s.quantity import CPU, INT64_MAX, INT64_MIN, format_kueue_units, kueue_units
from harness.scenario.model import Scenario

UNLIMITED = INT64_MAX


def quota_amount(resource: str, quantity: Fraction) -> int:
    """`AmountFromQuantity`: Unlimited at or above the int64 limit (cpu: MaxInt64 // 1000
    cores), else Kueue's units (millicores for cpu, rounded up)."""
    limit = INT64_MAX // 1000 if resource == CPU else INT64_MAX
    if quantity >= limit:
        return UNLIMITED
    return kueue_units(resource, quantity)


def beyond_int64(resource: str, quantity: Fraction) -> bool:
    """Whether Kueue's units of `quantity` overflow int64 (Quantity.MilliValue / Value wrap
    or return 0 there before v0.18; see KueueRules.quota_beyond_int64_unlimited)."""
    units = quantity * 1000 if resource == CPU else quantity
    return units > INT64_MAX


def _saturate(value: int) -> int:
    return min(max(value, INT64_MIN), INT64_MAX)


def add(a: int, b: int) -> int:
    """`Amount.Add`: Unlimited if either is; bounded sums saturate."""
    if a == UNLIMITED or b == UNLIMITED:
        return UNLIMITED
    return _saturate(a + b)


def sub(a: int, b: int) -> int:
    """`Amount.Sub`: Unlimited - Unlimited = 0, Unlimited - x = Unlimited, x - Unlimited =
    MinInt64 ("no available capacity"); bounded differences saturate."""
    if a == UNLIMITED and b == UNLIMITED:
        return 0
    if a == UNLIMITED:
        return UNLIMITED
    if b == UNLIMITED:
        return INT64_MIN
    return _saturate(a - b)


def format_amount(resource: str, value: int) -> str:
    """`ResourceFormatter.AmountQuantityString`: "<unlimited>" for the sentinel."""
    if value == UNLIMITED:
        return "<unlimited>"
    return format_kueue_units(resource, value)


_QUOTA_FIELDS = (
    ("nominal", "nominalQuota"),
    ("borrowing_limit", "borrowingLimit"),
    ("lending_limit", "lendingLimit"),
)


def quota_beyond_int64(scenario: Scenario) -> str | None:
    """Where the first quota (a ClusterQueue's or a Cohort's) whose units overflow int64 is
    written, or None."""
    owners = [("clusterQueues", cq.name, cq.resource_groups) for cq in scenario.cluster_queues]
    owners += [("cohorts", c.name, c.resource_groups) for c in scenario.cohorts]
    for kind, name, groups in owners:
        for group in groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    for attr, field in _QUOTA_FIELDS:
                        value = getattr(quota, attr)
                        if value is not None and beyond_int64(quota.name, value):
                            return f"{kind}[{name}] flavor {flavor.name} {quota.name} {field}"
    return None
