"""Let Kueue's retry of inadmissible workloads after shaping pass before it can matter.

Kueue retries every inadmissible workload when the world changes: a node's scheduling
properties change (Ready, labels, taints, allocatable), a TAS ResourceFlavor or a Topology is
created. Node events reach the TAS flavor reconciler after `UpdatesBatchPeriod`, 1 s
(pkg/controller/tas/resource_flavor.go: nodeHandler.Generic); it logs `Reconcile TAS Resource
Flavor` and asks for a retry of every active ClusterQueue (NotifyRetryInadmissible), which
the requeuer carries out after `requeueBatchPeriod`, 1 s
(pkg/cache/queue/inadmissible_workloads.go). Shaping makes such changes, so a retry may land
a second or two later. Landing between two submissions, it re-evaluates a pending workload
against the later one's usage (seen on real Kueue: "3 more needed" instead of "2 more
needed" once the third workload was assumed; with priorities a pending head could preempt
it). No scenario asks for that re-evaluation and the fit model does not make it, so before a
workload is submitted while another is pending, the runner waits until no retry caused by
shaping can still be due.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from harness.kube import poll_until
from harness.runner.kueuelog import KueueLog
from harness.runner.waits import Timeouts

RECONCILE_TAS_FLAVOR = "Reconcile TAS Resource Flavor"
UPDATES_BATCH_PERIOD = 1.0
"""pkg/constants/constants.go: UpdatesBatchPeriod (node event -> flavor reconcile)."""
NON_TAS_DRAIN_INTERVAL = 10.0
"""pkg/controller/tas/non_tas_usage_controller.go: defaultRequeueBatchInterval."""
REQUEUE_BATCH_PERIOD = 1.0
"""pkg/cache/queue/inadmissible_workloads.go: requeueBatchPeriod (SchedulerLongRequeueInterval
off; the embedded cluster never turns it on)."""


def retry_window(t: Timeouts) -> float:
    """How long after a change a retry it sets off can still land: a node change reaches the
    flavor reconciler after one period and the requeuer moves the workloads after the other
    (a deleted or finished workload only takes the second)."""
    return UPDATES_BATCH_PERIOD + REQUEUE_BATCH_PERIOD + t.requeue_margin


class RequeueWave:
    """The retries shaping set off: `shaped()` when the world is in place, `wait()` before a
    submission that a late retry could change."""

    def __init__(self, log: KueueLog | None, margin: float) -> None:
        self.log = log
        self.margin = margin
        self.shaped_at: float | None = None
        self.passed = False
        self.drained: tuple[float, str] | None = None

    def after_usage_freed(self, freed_at: float, nodes: set[str]) -> None:
        """Non-TAS pods on `nodes` were deleted at `freed_at`, and nodes of those names exist
        again: the drainer's retry can be due until its interval and the batch have passed
        (the latest of several such clears counts)."""
        if nodes:
            until = freed_at + NON_TAS_DRAIN_INTERVAL + REQUEUE_BATCH_PERIOD + self.margin
            why = f"usage pods on {', '.join(sorted(nodes))} freed at {_clock(freed_at)}"
            if self.drained is None or self.drained[0] < until:
                self.drained = (until, why)

    def shaped(self) -> None:
        """Nodes are Ready and every Kueue object exists: no later change comes from shaping."""
        self.shaped_at = time.time()

    def due_until(self) -> tuple[float, str]:
        """The wall time after which no retry from shaping can be due, and why.

        With Kueue's log: a flavor reconcile for a change made before `shaped_at` starts by
        `shaped_at + UpdatesBatchPeriod`, and its retry follows the last reconcile logged by
        `requeueBatchPeriod`. Without it: both periods after `shaped_at`."""
        assert self.shaped_at is not None
        if self.log is None or not self.log.available:
            until = self.shaped_at + UPDATES_BATCH_PERIOD + REQUEUE_BATCH_PERIOD + self.margin
            return self._drain(until, "no Kueue log here: both batch periods after shaping")
        until = self.shaped_at + UPDATES_BATCH_PERIOD + self.margin
        seen = "no flavor reconcile logged since shaping began"
        last = self.log.last_time(RECONCILE_TAS_FLAVOR)
        if last is not None:
            until = max(until, last + REQUEUE_BATCH_PERIOD + self.margin)
            seen = f"last '{RECONCILE_TAS_FLAVOR}' at {_clock(last)}"
        return self._drain(until, seen)

    def _drain(self, until: float, seen: str) -> tuple[float, str]:
        if self.drained is None or self.drained[0] <= until:
            return until, seen
        return self.drained[0], f"{seen}; {self.drained[1]}"

    def wait(self, t: Timeouts) -> None:
        """Return once no retry from shaping can still be due (at once after the first time)."""
        if self.passed or self.shaped_at is None:
            return

        def probe() -> tuple[bool, str]:
            until, seen = self.due_until()
            now = time.time()
            return now >= until, f"{seen}; retries due until {_clock(until)}, now {_clock(now)}"

        poll_until(
            probe,
            what="Kueue's retry of inadmissible workloads after shaping",
            timeout=t.settle,
            interval=t.interval,
        )
        self.passed = True


def freed_recently(
    freed: Sequence[tuple[float, frozenset[str]]], now: float, margin: float
) -> list[tuple[float, frozenset[str]]]:
    """The clears whose freed non-TAS usage Kueue's drainer may still act on at `now`."""
    horizon = now - (NON_TAS_DRAIN_INTERVAL + REQUEUE_BATCH_PERIOD + margin)
    return [(at, nodes) for at, nodes in freed if at >= horizon and nodes]


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S.%f")[:-3]
