"""Kueue v0.19.2's admission-check rules, shared by every engine (docs/scenario-format-v2.md,
"Admission checks").

- Which checks a workload must pass: pkg/workload/workload.go `AdmissionChecksForWorkload`
  (with an admission: the checks whose flavors meet the admission's flavors; without one:
  only the checks that run for every flavor of the ClusterQueue; a rule without onFlavors
  runs for all of them, pkg/util/admissioncheck).
- A ClusterQueue referencing a missing or inactive AdmissionCheck is inactive
  (pkg/cache/scheduler/clusterqueue.go `updateQueueStatus`), and its pending workloads say
  `ClusterQueue NAME is inactive` (pkg/scheduler/scheduler.go `nominate`).
- Messages: pkg/controller/core/workload_controller.go `buildAdmissionChecksMessage` and
  `reconcileCheckBasedEviction`, pkg/workload/admissionchecks.go `SyncAdmittedCondition`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from harness.scenario.model import AdmittedWorkload, ClusterQueue

CHECK_CONTROLLER_MANAGER = "kth-admission-check-controller"
"""The field manager under which the harness, playing each check's controller, applies a
Workload's status.admissionChecks and an AdmissionCheck's Active condition."""

WAITING_FOR_CHECKS = ""
"""The message of a workload holding quota while a check is not Ready: none, as Kueue
v0.19.2 writes no Admitted condition then (SyncAdmittedCondition without
UnadmittedWorkloadsObservability, off by default)."""

FAILED_CHECKS = "The workload has failed admission checks"
"""The scheduler's message for a pending workload with a Retry or Rejected check."""


def cq_flavors(cq: ClusterQueue) -> tuple[str, ...]:
    return tuple(fq.name for g in cq.resource_groups for fq in g.flavors)


def rule_flavors(cq: ClusterQueue) -> dict[str, frozenset[str]]:
    """Check -> the flavors it runs for (`NewAdmissionChecks`)."""
    every = frozenset(cq_flavors(cq))
    return {r.name: frozenset(r.on_flavors) or every for r in cq.admission_checks}


def required_checks(
    cq: ClusterQueue,
    admitted_flavors: Collection[str] | None,
    flavorless_needs_all: bool = False,
) -> set[str]:
    """The checks a workload of `cq` must pass: with an admission on `admitted_flavors`,
    those running for one of them; without one (None), those running for every flavor.
    An admission on no flavor (it requests nothing) needs none, or every check with
    `flavorless_needs_all` (Kueue v0.17: `admissionChecksForAdmission` "Admission has no
    Flavors; assigning all checks", kueue#10316; harness.fit.versions)."""
    every = frozenset(cq_flavors(cq))
    rules = rule_flavors(cq)
    if admitted_flavors is None:
        return {name for name, fl in rules.items() if fl >= every}
    used = set(admitted_flavors)
    if not used and flavorless_needs_all:
        return set(rules)
    return {name for name, fl in rules.items() if fl & used}


ADMITTED_STATES = ("Pending", "Ready")
"""The check states an `admitted` entry may hold: Kueue evicts a workload holding quota with
a Retry check and deactivates one with a Rejected check at once
(workload_controller.go `reconcileCheckBasedEviction`), so neither lasts."""


def admitted_states(cq: ClusterQueue, admitted: AdmittedWorkload) -> dict[str, str]:
    """status.admissionChecks of an `admitted` entry, as Kueue's workload controller keeps
    them (`syncAdmissionCheckConditions`): every check its admission needs, sorted, with the
    entry's state; one it does not list is Pending (the controller adds it so). An entry
    listing none has them all Ready: an admitted workload passed them."""
    needed = required_checks(cq, {f for p in admitted.pod_sets for f in p.flavor.split(",")})
    given = admitted.check_states
    default = "Ready" if given is None else "Pending"
    return {name: (given or {}).get(name, default) for name in sorted(needed)}


def flavors_of(per_pod_set: Mapping[str, str]) -> set[str]:
    """The flavors of an admission (pod set -> flavor, several joined by `,`)."""
    return {f for value in per_pod_set.values() for f in value.split(",") if f}


def checks_message(names: Iterable[str], state: str) -> str:
    """`buildAdmissionChecksMessage` for checks without a message of their own."""
    ordered = sorted(names)
    noun = "AdmissionChecks" if len(ordered) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: " + "; ".join(f'"{n}"' for n in ordered)


def retry_eviction_message(names: Iterable[str]) -> str:
    return "Evicted due to " + checks_message(names, "Retry")


def rejected_message(names: Iterable[str]) -> str:
    """The Evicted message of a workload deactivated by a Rejected check."""
    return "The workload is deactivated due to " + checks_message(names, "Rejected")
