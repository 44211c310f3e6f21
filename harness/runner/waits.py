"""Deadlines for every wait the runner makes, and the settle rule for a pending workload."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.kube import WaitTimeout
from harness.runner.reading import NO_CONDITION, State


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `pending_window`: how long a refused workload must stay refused before it
    counts as pending (Kueue retries at once when its caches were a step behind).
    `step_window`: how long a workload still pending after a step may take to be admitted;
    Kueue batches requeues after non-TAS pods go away every 10 s
    (pkg/controller/tas/non_tas_usage_controller.go, defaultRequeueBatchInterval)."""

    settle: float = 60.0
    pods: float = 60.0
    nodes: float = 60.0
    cleanup: float = 90.0
    pending_window: float = 0.75
    step_window: float = 12.0
    park_window: float = 3.0
    unwritten_window: float = 15.0
    interval: float = 0.1

    @classmethod
    def from_env(cls) -> Timeouts:
        """KTH_PENDING_WINDOW / KTH_STEP_WINDOW override the two settle windows."""
        return cls(
            pending_window=float(os.environ.get("KTH_PENDING_WINDOW", cls.pending_window)),
            step_window=float(os.environ.get("KTH_STEP_WINDOW", cls.step_window)),
        )


def settle(read: Callable[[], State], *, what: str, t: Timeouts, may_park: bool = False) -> State:
    """Poll until admitted, or pending for `pending_window` without a change of mind.

    `may_park`: an identical workload is already pending, so Kueue's
    SchedulingEquivalenceHashing (on by default in v0.19) may park this one unevaluated,
    with no QuotaReserved condition at all (pkg/cache/queue/cluster_queue.go,
    hashToBulkMoveReason). After `park_window` without any condition it counts as pending
    with an empty message. Any workload gets the same verdict after `unwritten_window`:
    Kueue can keep one at the head forever without storing a status (an admission the API
    server refuses, or one skipped by the final Fits check), and everything behind it too."""
    started = time.monotonic()
    deadline = started + t.settle
    pending_since: float | None = None
    while True:
        seen = read()
        now = time.monotonic()
        if seen.kind == "admitted":
            return seen
        if seen.kind == "pending":
            pending_since = pending_since if pending_since is not None else now
            if now - pending_since >= t.pending_window:
                return seen
        else:
            pending_since = None
            window = t.park_window if may_park else t.unwritten_window
            if seen.message == NO_CONDITION and now - started >= window:
                return State("pending", "")
        if now >= deadline:
            raise WaitTimeout(
                f"waited {t.settle:.0f}s for {what} to be admitted (QuotaReserved and Admitted "
                f"True) or pending (QuotaReserved False with a message); last seen: "
                f"{seen.kind}: {seen.message}"
            )
        time.sleep(t.interval)
