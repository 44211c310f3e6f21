"""Admission checks in the fit model: each workload's status.admissionChecks as Kueue's
workload controller keeps it, and what a check controller's state changes make Kueue do
(docs/scenario-format-v2.md, "Admission checks"; rules in harness/kueue/admission_checks.py).

- The scheduler reserves quota and topology as usual (`prepareWorkload`); the workload is
  admitted once every check its admission needs is Ready (at once when they are all listed
  and Ready: `HasAllRequiredChecks`, `SyncAdmittedCondition`; else after the workload
  controller's sync), else it waits holding both. An admission on no flavor needs none
  (every check in v0.17: KueueRules.flavorless_admission_needs_no_checks).
- The workload controller lists the checks it needs (`syncAdmissionCheckConditions`: new ones
  Pending, others dropped); without an admission only those running for every flavor.
- A Retry check on a workload holding quota evicts it (reason AdmissionCheck): its quota and
  nodes go, every check not Pending is reset to Pending (`resetChecksOnEviction`), and it is
  requeued at once (no requeueAfterSeconds) with its eviction time as its queue order
  (`GetQueueOrderTimestamp`). A Rejected one deactivates it: evicted, never requeued.
- A pending workload with a Retry or Rejected check is not scheduled ("The workload has failed
  admission checks"); a ClusterQueue using a missing or inactive check is never popped.
"""

from __future__ import annotations

from collections.abc import Collection

from harness.kueue.admission_checks import (
    WAITING_FOR_CHECKS,
    rejected_message,
    required_checks,
    retry_eviction_message,
)
from harness.scenario.model import CheckChange, ClusterQueue, Eviction, Scenario

DEACTIVATED = "The workload is deactivated"


class CheckStates:
    """status.admissionChecks of every workload: name -> check -> state."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.states: dict[str, dict[str, str]] = {}
        # (workload, check) whose entry carries Kueue's own message ("Reset to Pending after
        # eviction. Previously: X"): the controller's write of the same state, message "",
        # still changes it.
        self.kueue_messages: set[tuple[str, str]] = set()
        self.inactive_workloads: set[str] = set()

    def sync(
        self,
        name: str,
        cq: ClusterQueue,
        flavors: Collection[str] | None,
        flavorless_needs_all: bool = False,
    ) -> None:
        """`syncAdmissionCheckConditions`: the checks needed now, new ones Pending."""
        needed = required_checks(cq, flavors, flavorless_needs_all)
        old = self.states.get(name, {})
        self.states[name] = {c: old.get(c, "Pending") for c in sorted(needed)}
        self.kueue_messages -= {(name, c) for c in old if c not in needed}

    def failed(self, name: str) -> bool:
        """A Retry or Rejected check: the scheduler leaves the workload pending."""
        return any(s in ("Retry", "Rejected") for s in self.states.get(name, {}).values())

    def all_ready(self, name: str) -> bool:
        return all(s == "Ready" for s in self.states.get(name, {}).values())

    def reset_on_eviction(self, name: str) -> None:
        """`resetChecksOnEviction`: every check not Pending goes back to Pending."""
        if name in self.states:
            reset = {c for c, state in self.states[name].items() if state != "Pending"}
            self.kueue_messages |= {(name, c) for c in reset}
            self.states[name] = {c: "Pending" for c in self.states[name]}

    def changes(self, change: CheckChange) -> bool:
        """Whether the controller's write changes status.admissionChecks: a check not listed
        is added (the workload controller drops it again if not needed), a listed one takes
        the new state; the same state again writes nothing, unless the entry carries a
        message of Kueue's the write clears (SetAdmissionCheckState always sets it)."""
        if (change.workload, change.check) in self.kueue_messages:
            return True
        return self.states.get(change.workload, {}).get(change.check) != change.state

    def set(self, change: CheckChange) -> bool:
        """The controller's write; False when the workload controller drops it at once (the
        workload does not need that check now)."""
        present = self.states.get(change.workload)
        if present is None or change.check not in present:
            return False
        present[change.check] = change.state
        self.kueue_messages.discard((change.workload, change.check))
        return True

    def with_state(self, name: str, state: str) -> list[str]:
        return [c for c, s in self.states.get(name, {}).items() if s == state]


def waiting_message() -> str:
    return WAITING_FOR_CHECKS


def retry_eviction(names: list[str]) -> Eviction:
    return Eviction(reason="AdmissionCheck", message=retry_eviction_message(names))


def rejection(names: list[str]) -> Eviction:
    return Eviction(reason="Deactivated", message=rejected_message(names))


__all__ = ["DEACTIVATED", "CheckStates", "rejection", "retry_eviction", "waiting_message"]
