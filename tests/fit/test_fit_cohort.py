"""Kueue's flat-cohort quota arithmetic (docs/dev/kueue-v0.19.2-rules-v2.md §2), with
amounts worked out by hand from the formulas there."""

from __future__ import annotations

from fractions import Fraction

from harness.fit.cohort import QuotaBook
from harness.scenario.model import ClusterQueue, FlavorQuotas, ResourceGroup, ResourceQuota

GPU = ("h100", "nvidia.com/gpu")


def queue(
    name: str,
    nominal: int,
    cohort: str | None = "c",
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
) -> ClusterQueue:
    def frac(v: int | None) -> Fraction | None:
        return None if v is None else Fraction(v)

    quota = ResourceQuota(
        "nvidia.com/gpu", Fraction(nominal), frac(borrowing_limit), frac(lending_limit)
    )
    group = ResourceGroup(("nvidia.com/gpu",), (FlavorQuotas("h100", (quota,)),))
    return ClusterQueue(name, (group,), cohort=cohort)


def test_without_cohort_available_is_nominal_minus_usage() -> None:
    book = QuotaBook.of([queue("a", 8, cohort=None)])
    book.add("a", {GPU: 3})
    assert (book.available("a", GPU), book.potential("a", GPU)) == (5, 8)
    assert book.borrow_height("a", GPU, 6) == 0  # no cohort: never borrowing


def test_cohort_lends_unused_quota() -> None:
    book = QuotaBook.of([queue("a", 8), queue("b", 8)])
    book.add("b", {GPU: 2})
    # local 0 (no lendingLimit); subtree 16; used by the cohort 2 -> a may take 14.
    assert (book.available("a", GPU), book.potential("a", GPU)) == (14, 16)
    assert book.borrow_height("a", GPU, 8) == 0
    assert book.borrow_height("a", GPU, 9) == 1


def test_lending_limit_keeps_quota_local() -> None:
    book = QuotaBook.of([queue("a", 8), queue("b", 8, lending_limit=2)])
    # b lends only 2: subtree = 8 + 2 = 10, so a can reach 10.
    assert (book.available("a", GPU), book.potential("a", GPU)) == (10, 10)
    # b still has its 6 local plus the cohort's 10.
    assert book.available("b", GPU) == 16 and book.potential("b", GPU) == 16
    book.add("a", {GPU: 10})
    assert book.available("b", GPU) == 6


def test_borrowing_limit_caps_what_is_taken_from_the_cohort() -> None:
    book = QuotaBook.of([queue("a", 8, borrowing_limit=3), queue("b", 8)])
    assert (book.available("a", GPU), book.potential("a", GPU)) == (11, 11)
    book.add("a", {GPU: 10})
    assert book.available("a", GPU) == 1
    book.add("b", {GPU: 7})
    # The cohort has 16 - 17 < 0 left: available is clamped at 0.
    assert book.available("a", GPU) == 0 and book.available("b", GPU) == 0
