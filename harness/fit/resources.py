"""Resource vectors in Kueue's integer units, and how many times a request fits into one."""

from __future__ import annotations

from collections.abc import Mapping

from harness.k8s.quantity import kueue_units
from harness.scenario.model import Resources

ResourceVector = dict[str, int]
MAX_INT32 = 2**31 - 1


def from_quantities(quantities: Resources) -> ResourceVector:
    return {name: kueue_units(name, q) for name, q in quantities.items()}


def add_into(target: ResourceVector, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        target[name] = target.get(name, 0) + value


def sub_into(target: ResourceVector, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        target[name] = target.get(name, 0) - value


def scaled(vector: Mapping[str, int], factor: int) -> ResourceVector:
    return {name: value * factor for name, value in vector.items()}


def count_in(
    requests: Mapping[str, int], capacity: Mapping[str, int], clamped: bool = True
) -> tuple[int, str]:
    """How many times `requests` fits into `capacity`, and the resource that limits it.

    As Kueue's CountInWithLimitingResource: a zero request never limits, a missing capacity
    counts as 0, negative remainders clamp to 0, ties go to the smallest resource name.
    `clamped` False (v0.17.1, KueueRules.count_clamped_at_zero): a negative remainder gives
    a negative count, divided as Go does (truncated toward zero: -1/2 is 0, -3/2 is -1).
    """
    best: int | None = None
    limiting = ""
    for name, request in requests.items():
        if request == 0:
            count = MAX_INT32
        else:
            count = min(go_div(capacity.get(name, 0), request), MAX_INT32)
            if clamped:
                count = max(0, count)
        if best is None or count < best or (count == best and name < limiting):
            best, limiting = count, name
    return (best or 0), limiting


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's `/` on int64."""
    if a >= 0 and b > 0:
        return a // b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
