"""Kueue v0.19.2's waitForPodsReady: the configuration a scenario runs with (its defaults),
the messages Kueue writes, and the harness's one rule about time.

Rules with sources: docs/dev/kueue-v0.19.2-rules-v2.md §11. The defaults are
apis/config/v1beta2/defaults.go's (the section is on unless the DisableWaitForPodsReady gate
is set: pkg/util/waitforpodsready/waitforpodsready.go).

Time: a step's outcome is read once Kueue has reacted to it. A PodsReady timer (timeout,
recovery timeout, requeue backoff) of at most TIMER_HORIZON seconds runs out within the step
that starts it, and the outcome is read after what it caused; a longer one never runs out
within a scenario (Kueue's default timeout is 30 minutes). Scenarios use short timers for the
first case and the defaults for the second, and stay clear of the horizon itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.k8s.duration import seconds

TIMER_HORIZON = 30.0
"""Seconds: timers at most this long run out within their step (the runner waits for them)."""

DEFAULT_TIMEOUT = 30 * 60.0
DEFAULT_BACKOFF_BASE = 60
DEFAULT_BACKOFF_MAX = 3600

TIMEOUT_MESSAGE = "Exceeded the PodsReady timeout"
"""reconcileNotReadyTimeout: 'Exceeded the PodsReady timeout NAMESPACE/NAME'."""
LIMIT_MESSAGE = (
    "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
)
"""The Deactivated eviction after backoffLimitCount (triggerDeactivation, then Reconcile's
inactive branch: 'The workload is deactivated due to ' + the DeactivationTarget message)."""
BLOCKED_MESSAGE = "waiting for all admitted workloads to be in PodsReady condition"
"""scheduler.go waitForPodsReadyIfNeeded: QuotaReserved=False, reason WaitingForPodsReady."""


@dataclass(frozen=True)
class PodsReadyConfig:
    """The section after Kueue's defaulting."""

    enabled: bool = True
    timeout: float = DEFAULT_TIMEOUT
    recovery_timeout: float = DEFAULT_TIMEOUT
    block_admission: bool = False
    timestamp: str = "Eviction"
    backoff_base: int = DEFAULT_BACKOFF_BASE
    backoff_max: int = DEFAULT_BACKOFF_MAX
    backoff_limit: int | None = None

    @classmethod
    def of(cls, document: Mapping[str, Any], gates: Mapping[str, bool]) -> PodsReadyConfig:
        """From a scenario's kueueConfig document and feature gates."""
        if gates.get("DisableWaitForPodsReady", False):
            return cls(enabled=False)
        section = document.get("waitForPodsReady") or {}
        # A 0 timeout is defaulted to 30m (SetDefaults_Configuration).
        timeout = seconds(str(section.get("timeout", "0"))) or DEFAULT_TIMEOUT
        recovery = section.get("recoveryTimeout")
        strategy = section.get("requeuingStrategy") or {}
        return cls(
            timeout=timeout,
            recovery_timeout=timeout if recovery is None else seconds(str(recovery)),
            block_admission=bool(section.get("blockAdmission", False)),
            timestamp=str(strategy.get("timestamp", "Eviction")),
            backoff_base=int(strategy.get("backoffBaseSeconds", DEFAULT_BACKOFF_BASE)),
            backoff_max=int(strategy.get("backoffMaxSeconds", DEFAULT_BACKOFF_MAX)),
            backoff_limit=strategy.get("backoffLimitCount"),
        )

    def backoff(self, count: int) -> float:
        """UpdateRequeueState: base * 2^(count-1), capped at the max (a 0 max: no cap), in
        seconds, without the 0.0001 jitter. The first is the base even above the max:
        pkg/util/wait Backoff.WaitTime steps apimachinery's wait.Backoff, whose first Step
        returns the initial duration and caps only the ones after it (delay, backoff.go)."""
        if count <= 1:
            return float(self.backoff_base)
        wait = float(self.backoff_base) * 2.0 ** (count - 1)
        return min(wait, float(self.backoff_max)) if self.backoff_max else wait

    def deactivates(self, count: int) -> bool:
        """triggerDeactivation: the next timeout of a workload requeued `count` times."""
        return self.backoff_limit is not None and count + 1 > self.backoff_limit


def within_step(timer: float) -> bool:
    """The timer runs out within the step that starts it (TIMER_HORIZON)."""
    return timer <= TIMER_HORIZON
