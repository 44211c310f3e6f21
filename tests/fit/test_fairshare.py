"""Dominant resource shares and the fair-sharing tournament (harness.fit.fairshare) against
the numbers Kueue v0.19.2's own tests state: the fair sharing integration test's weighted
share metrics (test/integration/singlecluster/scheduler/fairsharing/fair_sharing_test.go)
and CompareDRS's rules for a weight of 0 (pkg/cache/scheduler/fair_sharing.go)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from harness.fit.cohort import QuotaBook
from harness.fit.fairshare import Head, Share, compare, share, winner
from harness.scenario.model import ClusterQueue, FlavorQuotas, ResourceGroup, ResourceQuota

CPU = ("default", "cpu")


def cq(
    name: str, nominal: int, weight: Fraction | None = None, cohort: str = "all"
) -> ClusterQueue:
    quota = ResourceQuota(name="cpu", nominal=Fraction(nominal))
    group = ResourceGroup(covered=("cpu",), flavors=(FlavorQuotas("default", (quota,)),))
    return ClusterQueue(name=name, resource_groups=(group,), cohort=cohort, fair_weight=weight)


def book(*queues: ClusterQueue, **used: int) -> QuotaBook:
    b = QuotaBook.of(queues)
    for name, cpus in used.items():
        b.add(name, {CPU: cpus * 1000})
    return b


def test_share_is_borrowed_over_lendable_times_1000() -> None:
    # 'Preemption is disabled': a (3), b (1), shared (4); a runs 8 -> 625, then 5 -> 250.
    queues = (cq("a", 3), cq("b", 1), cq("shared", 4))
    assert share(book(*queues, a=8), "a").weighted() == 625.0
    assert share(book(*queues, a=5, b=3), "a").weighted() == 250.0
    assert share(book(*queues, a=5, b=3), "b").weighted() == 250.0
    assert share(book(*queues, a=4, b=4), "b").weighted() == 375.0
    assert share(book(*queues, a=4, b=4), "shared") == Share()


def test_extra_usage_counts_and_weight_divides() -> None:
    queues = (cq("a", 3, weight=Fraction(2)), cq("b", 3), cq("c", 3))
    b = book(*queues, a=3, b=6)
    assert share(b, "a", {CPU: 2000}).weighted() == pytest.approx(2000 / 9 / 2)
    assert share(b, "b").weighted() == pytest.approx(3000 / 9)
    assert share(b, "a").borrowed == frozenset()


def test_no_cohort_no_share() -> None:
    alone = cq("alone", 1, cohort="")
    b = QuotaBook.of([alone])
    b.add("alone", {CPU: 5000})
    assert share(b, "alone").weighted() == 0.0


def test_zero_weight_borrowing_is_infinite_and_ranks_above_everything() -> None:
    queues = (cq("a", 0, weight=Fraction(0)), cq("b", 0, weight=Fraction(0)), cq("pool", 8))
    b = book(*queues, a=4)
    mine, other = share(b, "a"), share(b, "b", {CPU: 4000})
    assert math.isinf(mine.weighted())
    assert compare(mine, Share(ratio=900.0)) == 1
    # Both borrow on a weight of 0: the unweighted ratios decide (8/8 against 4/8).
    assert compare(share(b, "a", {CPU: 4000}), other) == 1
    assert share(b, "b").weighted() == 0.0  # a weight of 0 that does not borrow is 0


def test_tournament_prefers_not_borrowing_then_lower_share_then_priority() -> None:
    queues = (cq("a", 3), cq("b", 1), cq("shared", 4))
    b = book(*queues, a=7)
    a9 = Head("a", {CPU: 1000}, priority=0, created=9)
    b1 = Head("b", {CPU: 1000}, priority=0, created=10)
    assert winner(b, [a9, b1]) is b1  # b stays within its nominal
    b.add("b", {CPU: 1000})
    b.add("a", {CPU: -1000})
    assert winner(b, [a9, b1]) is b1  # b at 1/8 against a at 4/8
    b.add("a", {CPU: -2000})
    b.add("b", {CPU: 2000})
    assert winner(b, [a9, b1]) is a9  # a at 2/8 against b at 3/8
    high = Head("a", {CPU: 1000}, priority=5, created=11)
    assert winner(b, [a9, high]) is high
