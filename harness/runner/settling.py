"""When a submission has settled, preemption included (contract v2: "each settles before the
next", everything it caused included).

A submission is settled when the submitted workload is admitted, or pending for the pending
window (harness.runner.waits.settle's rule), and every workload Kueue evicted since the
submission has let go of its quota and is admitted again or pending with a message of the
scheduler (not the eviction message it keeps until it is evaluated again), and no workload
pends with "Pending the preemption of" (a preemptor whose victims still hold quota). A
released victim still showing the eviction message counts as settled after the unwritten
window: Kueue may never evaluate it again (parked, or behind a StrictFIFO head).
Kueue's order of events is in docs/dev/kueue-v0.19.2-rules-v2.md §6.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.kube import condition as get_condition
from harness.kube import poll_for
from harness.runner.reading import (
    EVICTION_MESSAGE,
    NO_CONDITION,
    PENDING_PREEMPTION,
    Obj,
    State,
    evicted_now,
    evictions,
    state,
)
from harness.runner.waits import Timeouts, kept_unwritten

RELEASED = "released, not evaluated again yet"
Snapshot = Mapping[str, Obj | None]
"""Workload name (the scenario's) -> its Workload object as last read (None: absent)."""


@dataclass(frozen=True)
class Submission:
    """What settling needs to know about one submission: the submitted workload's name, how
    it is referred to in messages, and every workload's Preempted eviction count before it."""

    name: str
    ref: str
    evictions_before: Mapping[str, int]
    may_park: bool = False
    # Kueue's log says it keeps the workload without a status (waits.kept_unwritten).
    unwritten: Callable[[], bool] | None = None


def victims(sub: Submission, seen: Snapshot) -> list[str]:
    """Workloads evicted since the submission (a new eviction counted, or Evicted True)."""
    return [
        name
        for name, wl in seen.items()
        if name != sub.name
        and (evictions(wl) > sub.evictions_before.get(name, 0) or evicted_now(wl))
    ]


def victim_problem(wl: Obj | None) -> str | None:
    """Why an evicted workload has not settled yet, or None when it has."""
    if wl is None:
        return None  # deleted: holds nothing
    reserved = get_condition(wl, "QuotaReserved")
    if evicted_now(wl) and reserved is not None and reserved.get("status") == "True":
        return "evicted, still holding quota"
    seen = state(wl)
    if seen.kind in ("admitted", "reserved"):
        return None
    if seen.kind == "pending" and not seen.message.startswith(EVICTION_MESSAGE):
        return None
    if seen.kind == "pending":
        return f"{RELEASED}: {seen.message}"
    return f"{seen.kind}: {seen.message}"


def problems(sub: Submission, seen: Snapshot) -> dict[str, str]:
    """Every workload other than the submitted one that keeps the submission unsettled."""
    out = {name: why for name in victims(sub, seen) if (why := victim_problem(seen[name]))}
    for name, wl in seen.items():
        st = state(wl)
        if st.kind == "pending" and PENDING_PREEMPTION in st.message:
            out.setdefault(name, f"pending: {st.message}")
    return out


def settle_submission(read: Callable[[], Snapshot], sub: Submission, t: Timeouts) -> State:
    """Poll until the submission has settled (module docstring); returns the submitted
    workload's state. One deadline (`t.settle`); the timeout names each unsettled workload
    and what was last seen of it. Anything pending, or any victim, must hold unchanged for
    `t.pending_window`: Kueue retries at once when its caches were a step behind."""
    started = time.monotonic()
    quiet_since = started
    last: tuple[object, ...] | None = None
    released: dict[str, float] = {}
    unsettled: dict[str, str] = {}

    def verdict() -> State | None:
        nonlocal last, quiet_since, released, unsettled
        seen = read()
        now = time.monotonic()
        mine = state(seen.get(sub.name))
        if mine.kind == "unsettled" and mine.message == NO_CONDITION:
            window = t.park_window if sub.may_park else t.unwritten_window
            waited = now - started
            if waited >= window or kept_unwritten(sub.unwritten, waited, t):
                mine = State("pending", "")  # parked unevaluated, or never written
        others = problems(sub, seen)
        # A released victim Kueue never evaluates again (parked with an identical pending
        # workload, or behind a StrictFIFO head) keeps the eviction message for good.
        released = {n: released.get(n, now) for n, why in others.items() if RELEASED in why}
        others = {
            n: why for n, why in others.items() if now - released.get(n, now) < t.unwritten_window
        }
        moved = victims(sub, seen)
        signature = (mine.kind, tuple((n, state(seen[n])) for n in moved), tuple(others.items()))
        if signature != last:
            last, quiet_since = signature, now
        if mine.settled and not others:
            calm = mine.kind == "admitted" and not moved
            if calm or now - quiet_since >= t.pending_window:
                return mine
        unsettled = {} if mine.settled else {sub.name: f"{mine.kind}: {mine.message}"}
        unsettled |= others
        return None

    def gave_up(_: float) -> str:
        lines = "; ".join(f"{name}: {why}" for name, why in unsettled.items())
        return (
            f"waited {t.settle:.0f}s for the submission of {sub.ref} to settle (it admitted "
            f"or pending, every workload it preempted released and evaluated again); "
            f"unsettled: {lines or 'nothing, but the states kept changing'}"
        )

    return poll_for(verdict, timeout=t.settle, interval=t.interval, gave_up=gave_up)
