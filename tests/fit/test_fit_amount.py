"""harness.fit.amount: Kueue's quota Amount (kueue@v0.19.2 pkg/resources/amount.go, the same in
v0.18.2; its amount_test.go cases for AmountFromQuantity, Add and Sub)."""

from __future__ import annotations

from harness.fit.amount import UNLIMITED, add, format_amount, quota_amount, sub
from harness.k8s.quantity import INT64_MAX, INT64_MIN, parse_quantity


def test_quota_at_the_int64_limit_is_unlimited() -> None:
    assert quota_amount("cpu", parse_quantity("1E")) == UNLIMITED
    assert quota_amount("cpu", parse_quantity(str(INT64_MAX // 1000))) == UNLIMITED
    assert quota_amount("cpu", parse_quantity(str(INT64_MAX // 1000 - 1))) == (INT64_MAX // 1000 - 1) * 1000  # fmt: skip
    assert quota_amount("pods", parse_quantity(str(INT64_MAX))) == UNLIMITED
    assert quota_amount("pods", parse_quantity("10")) == 10


def test_unlimited_propagates_and_cancels_only_itself() -> None:
    assert add(UNLIMITED, 5) == UNLIMITED
    assert add(INT64_MAX - 1, 5) == INT64_MAX  # saturates (at the sentinel, as Go's does)
    assert sub(UNLIMITED, 4) == UNLIMITED
    assert sub(UNLIMITED, UNLIMITED) == 0
    assert sub(4, UNLIMITED) == INT64_MIN
    assert sub(INT64_MIN, 1) == INT64_MIN


def test_unlimited_is_printed_as_kueue_prints_it() -> None:
    assert format_amount("cpu", UNLIMITED) == "<unlimited>"
    assert format_amount("cpu", 1500) == "1500m"
