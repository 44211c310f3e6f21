"""Workloads admitted before the scenario starts (contract v2 `admitted:`), written on a real
cluster the way Kueue itself admits (docs/dev/v2-plan.md §6).

Their LocalQueues are created with `stopPolicy: Hold`, so Kueue queues nothing from them
(pkg/controller/core/localqueue_controller.go: Create adds only a LocalQueue without stop
policy to the queue manager). Once Kueue has marked each Workload "LocalQueue <name> is
inactive" (workload_controller.go: Reconcile -> syncQuotaReservedFalseCondition ->
getQueueBlocker; "is stopped" from reconcileOnLocalQueueActiveState concerns only workloads
that hold quota) no write of Kueue's is in flight, and the admission is server-side applied
on workloads/status with Kueue's own field manager `kueue-admission` and force: Kueue
writes every admission status that way (pkg/workload/patching/patching.go: patchStatus,
pkg/constants: AdmissionName), and apply only removes fields the applier owns, so Kueue's
eviction (an apply without `admission`) clears what the harness wrote. The Workload webhook
accepts it (workload_webhook.go: validateAdmission, validateAdmissionUpdate: set while
absent). The workload controller's Update handler then sees pending -> admitted and adds
the workload to its cache (quota and TAS usage); a held LocalQueue keeps admitted workloads
(only HoldAndDrain evicts). The Job reconciler unsuspends the Job and the TAS ungater binds
its pods to the assignment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from harness.k8s.quantity import parse_quantity
from harness.kube import KUEUE_API, Kube, poll_until, wait_for
from harness.kube import condition as get_condition
from harness.kueue.admission_checks import admitted_states
from harness.kueue.admission_status import ADMISSION_FIELD_MANAGER, admitted_status
from harness.kueue.queue_activity import DRAIN_REASON, inactive_reason
from harness.runner import check_controller, world
from harness.runner.objects import Names, Obj
from harness.runner.shaping import await_local_queue
from harness.runner.waits import Timeouts
from harness.scenario.model import AdmissionCheck, AdmittedWorkload, Scenario


def status_patch(
    scenario: Scenario,
    admitted: AdmittedWorkload,
    kueue_name: str,
    names: Names,
    reserved_at: Any,
    rename: Mapping[str, str],
) -> Obj:
    """The apply body for workloads/status: the shared admission
    (harness.kueue.admission_status) and its two True conditions. `rename`: the scenario's
    pod set name -> the Workload's (a Job's one pod set is "main")."""
    status = admitted_status(scenario, admitted, reserved_at)
    for psa in status["admission"]["podSetAssignments"]:
        psa["name"] = rename.get(psa["name"], psa["name"])
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": {"name": kueue_name, "namespace": names.namespace},
        "status": status,
    }


def waits_for_checks(scenario: Scenario, admitted: AdmittedWorkload) -> bool:
    """An `admitted` entry with a check not Ready: it holds quota, not admitted, its Job
    suspended (no pods)."""
    states = admitted_states(scenario.cluster_queue(admitted.queue), admitted)
    return any(state != "Ready" for state in states.values())


def _admits(patch: Obj) -> str:
    """The Admitted status the applied patch leads to (absent: not True)."""
    return (
        "True" if any(c["type"] == "Admitted" for c in patch["status"]["conditions"]) else "False"
    )


def wait_stopped(kube: Kube, names: Names, kueue_name: str, queue: str, t: Timeouts) -> None:
    """Until Kueue has said the Workload waits on its held LocalQueue."""
    wanted = f"LocalQueue {queue} is inactive"

    def check(wl: Obj | None) -> tuple[bool, str]:
        cond = get_condition(wl, "QuotaReserved") if wl else None
        if cond is None:
            return False, "no QuotaReserved condition"
        seen = f"QuotaReserved={cond.get('status')} ({cond.get('message', '')})"
        return cond.get("status") == "False" and cond.get("message") == wanted, seen

    _wait_workload(kube, names, kueue_name, check, f"QuotaReserved=False '{wanted}'", t)


def wait_drained(
    kube: Kube, names: Names, kueue_name: str, t: Timeouts, reason: str = DRAIN_REASON
) -> None:
    """Until Kueue has evicted the Workload from its HoldAndDrain ClusterQueue (`reason`
    LocalQueueStopped: LocalQueue), its Job has given the quota back, and the workload
    controller has written why it waits over the eviction's message (getQueueBlocker: the
    queue is inactive; read earlier, a loaded machine showed "The LocalQueue is stopped")
    (harness.kueue.queue_activity, harness.kueue.local_queue_stop)."""

    def check(wl: Obj | None) -> tuple[bool, str]:
        evicted = (get_condition(wl, "Evicted") if wl else None) or {}
        reserved = (get_condition(wl, "QuotaReserved") if wl else None) or {}
        seen = (
            f"Evicted={evicted.get('status')} ({evicted.get('reason')}),"
            f" QuotaReserved={reserved.get('status')} ({reserved.get('message', '')})"
        )
        done = (
            evicted.get("reason") == reason
            and reserved.get("status") == "False"
            and reserved.get("message") != evicted.get("message")
        )
        return done, seen

    what = f"evicted ({reason}), its quota released and why it waits written"
    _wait_workload(kube, names, kueue_name, check, what, t)


def _wait_workload(
    kube: Kube,
    names: Names,
    kueue_name: str,
    check: Callable[[Obj | None], tuple[bool, str]],
    what: str,
    t: Timeouts,
) -> None:
    """Until the scenario's Workload `kueue_name` passes `check`, within the settle window."""
    wait_for(
        kube,
        KUEUE_API,
        "Workload",
        kueue_name,
        check,
        namespace=names.namespace,
        what=what,
        timeout=t.settle,
        interval=t.interval,
    )


def comparable(admission: Mapping[str, Any]) -> Obj:
    """An admission with quantities parsed: the API server may write them in another form."""
    out = dict(admission)
    out["podSetAssignments"] = [
        {
            **psa,
            "resourceUsage": {
                r: parse_quantity(q) for r, q in (psa.get("resourceUsage") or {}).items()
            },
        }
        for psa in admission.get("podSetAssignments") or []
    ]
    return out


def wait_admitted_as_written(kube: Kube, names: Names, patch: Obj, t: Timeouts) -> None:
    """Until the Workload reads back with the admission applied and QuotaReserved and
    Admitted True (Kueue did not refuse or undo it); Admitted not True for one waiting for
    its admission checks."""
    name = patch["metadata"]["name"]
    wanted = comparable(patch["status"]["admission"])
    admits = _admits(patch)

    def check(wl: Obj | None) -> tuple[bool, str]:
        if wl is None:
            return False, "Workload absent"
        got = (wl.get("status") or {}).get("admission")
        reserved = get_condition(wl, "QuotaReserved") or {}
        admitted = get_condition(wl, "Admitted") or {}
        flags = f"QuotaReserved={reserved.get('status')}, Admitted={admitted.get('status')}"
        if got is None or comparable(got) != wanted:
            return False, f"admission {got}; {flags}"
        return (reserved.get("status"), admitted.get("status", "False")) == ("True", admits), flags

    wait_for(
        kube,
        KUEUE_API,
        "Workload",
        name,
        check,
        namespace=names.namespace,
        what="its pre-admission (status.admission as applied, QuotaReserved True, "
        f"Admitted {admits})",
        timeout=t.settle,
        interval=t.interval,
    )


def reservation_totals(patches: Iterable[Obj]) -> dict[str, dict[tuple[str, str], Fraction]]:
    """ClusterQueue -> (flavor, resource) -> quota the applied admissions reserve."""
    out: dict[str, dict[tuple[str, str], Fraction]] = {}
    for patch in patches:
        admission = patch["status"]["admission"]
        book = out.setdefault(admission["clusterQueue"], {})
        for psa in admission["podSetAssignments"]:
            for resource, quantity in psa["resourceUsage"].items():
                key = (psa["flavors"][resource], resource)
                book[key] = book.get(key, Fraction(0)) + parse_quantity(quantity)
    return out


NUDGE_ANNOTATION = "kueue-tas-harness/status-nudge"
"""Changed on a ClusterQueue to make Kueue reconcile its status (see _nudge)."""
NUDGE_EVERY = 0.5
"""Seconds between two nudges of one ClusterQueue while its status lags."""


def wait_counted(kube: Kube, patches: list[Obj], t: Timeouts) -> None:
    """Until each ClusterQueue's status counts the pre-admitted workloads (reserving and
    admitted) and reserves their quota per flavor and resource."""
    count: dict[str, int] = {}
    admits: dict[str, int] = {}
    for patch in patches:
        cq = patch["status"]["admission"]["clusterQueue"]
        count[cq] = count.get(cq, 0) + 1
        admits[cq] = admits.get(cq, 0) + (_admits(patch) == "True")
    nudged: dict[str, float] = {}
    for cq, book in reservation_totals(patches).items():

        def check(obj: Obj | None, cq: str = cq, book: Mapping[Any, Fraction] = book) -> Any:
            status = (obj or {}).get("status") or {}
            got = {
                (f["name"], r["name"]): parse_quantity(r.get("total") or 0)
                for f in status.get("flavorsReservation") or []
                for r in f.get("resources") or []
            }
            counts = (status.get("reservingWorkloads"), status.get("admittedWorkloads"))
            done = counts == (count[cq], admits[cq]) and all(
                got.get(k, Fraction(0)) == v for k, v in book.items()
            )
            if not done and time.monotonic() - nudged.get(cq, 0.0) >= NUDGE_EVERY:
                _nudge(kube, cq)
                nudged[cq] = time.monotonic()
            return done, f"reserving/admitted {counts}, reserved {got}"

        wait_for(
            kube,
            KUEUE_API,
            "ClusterQueue",
            cq,
            check,
            what=f"{count[cq]} pre-admitted workload(s) counted with their quota",
            timeout=t.settle,
            interval=t.interval,
        )


def _nudge(kube: Kube, cq: str) -> None:
    """Make Kueue reconcile the ClusterQueue's status from its cache. Kueue before v0.19
    refreshes it on a workload update only for the ClusterQueue the old object names
    (clusterqueue_controller.go v0.18.2 NotifyWorkloadUpdate, requestCQForWL): a pending
    workload of a held LocalQueue names none, so the admission never reaches it. An update of
    the ClusterQueue itself does (the annotation changes each time, so each is an update)."""
    kube.patch(
        KUEUE_API,
        "ClusterQueue",
        cq,
        {"metadata": {"annotations": {NUDGE_ANNOTATION: str(time.monotonic_ns())}}},
    )


def release(
    kube: Kube,
    scenario: Scenario,
    names: Names,
    t: Timeouts,
    checks: tuple[AdmissionCheck, ...] | None = None,
) -> None:
    """Lift the hold: the scenario's stopPolicy (None unless it says otherwise), then each
    LocalQueue is Active, or not when it stays held or its ClusterQueue is inactive
    (`checks`: the AdmissionChecks as reported now, when not as the scenario says)."""
    checks = scenario.admission_checks if checks is None else checks
    held = world.held_queues(scenario)
    for lq in sorted(scenario.queues(), key=lambda q: (q.namespace, q.name)):
        if lq.cluster_queue not in held:
            continue
        namespace = names.real(lq.namespace)
        kube.patch(
            KUEUE_API,
            "LocalQueue",
            lq.name,
            {"spec": {"stopPolicy": lq.stop_policy}},
            namespace=namespace,
        )
        active = inactive_reason(scenario.cluster_queue(lq.cluster_queue), checks) is None
        active = active and lq.stop_policy == "None"
        what = "Active after its hold was lifted" if active else "Active False (inactive queue)"
        await_local_queue(kube, lq.name, names, t, what, active, namespace)


def check_bound(
    owner: str, placement: Mapping[str, int] | None, pods: Iterable[Obj]
) -> tuple[bool, str]:
    """Pods bound to the placement's nodes (node -> pods); any node for a flavor without TAS."""
    on: dict[str, int] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            on[node] = on.get(node, 0) + 1
    if placement is None:
        return True, f"{owner}: pods on {on}"
    return on == dict(placement), f"{owner}: pods on {on}, admitted on {dict(placement)}"


def wait_pods_placed(
    kube: Kube,
    names: Names,
    selector: str,
    owner: str,
    placement: Mapping[str, int] | None,
    count: int,
    t: Timeouts,
) -> None:
    """Until the pod set's `count` pods are bound where its admission placed them."""

    def probe() -> tuple[bool, str]:
        pods = [
            p
            for p in kube.list("v1", "Pod", names.namespace, selector)
            if not p["metadata"].get("deletionTimestamp")
        ]
        bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
        if bound < count:
            return False, f"{owner}: {len(pods)} pods, {bound} bound"
        return check_bound(owner, placement, pods)

    poll_until(
        probe,
        what=f"the pods of {owner} bound to their pre-admitted nodes",
        timeout=t.pods,
        interval=t.interval,
    )


def checks_off(
    scenario: Scenario, waiting: Iterable[AdmittedWorkload]
) -> tuple[AdmissionCheck, ...]:
    """The scenario's AdmissionChecks with those of the waiting entries' ClusterQueues
    reported inactive: Kueue's scheduler then admits nothing there (ClusterQueue inactive,
    AdmissionCheckInactive) while the workload controller, unlike for a held queue
    (workload_controller.go reconcileOnLocalQueueActiveState, which takes away a reservation
    without admission), leaves a written reservation alone."""
    used = {r.name for a in waiting for r in scenario.cluster_queue(a.queue).admission_checks}
    return tuple(
        replace(c, active=False) if c.name in used else c for c in scenario.admission_checks
    )


def reserve_waiting(
    kube: Kube, scenario: Scenario, names: Names, patches: Mapping[str, Obj], t: Timeouts
) -> None:
    """Entries waiting for their checks, once their ClusterQueues are inactive by their
    checks (checks_off) and the hold is lifted: Kueue has said each waits on its inactive
    ClusterQueue, its reservation is applied (check states, QuotaReserved, no Admitted) and
    read back, then the checks are reported as the scenario says again."""
    for patch in patches.values():
        kueue_name = patch["metadata"]["name"]
        queue = patch["status"]["admission"]["clusterQueue"]
        wanted = f"ClusterQueue {queue} is inactive"

        def check(wl: Obj | None, wanted: str = wanted) -> tuple[bool, str]:
            cond = (get_condition(wl, "QuotaReserved") if wl else None) or {}
            return cond.get("message") == wanted, f"QuotaReserved {cond.get('message')!r}"

        _wait_workload(kube, names, kueue_name, check, f"QuotaReserved False '{wanted}'", t)
        kube.apply(patch, subresource="status", field_manager=ADMISSION_FIELD_MANAGER)
        wait_admitted_as_written(kube, names, patch, t)
    check_controller.report_active(kube, scenario.admission_checks)
    for queue in sorted(world.held_queues(scenario)):
        active = inactive_reason(scenario.cluster_queue(queue), scenario.admission_checks) is None
        what = "Active once its checks are reported as the scenario says"
        await_local_queue(kube, queue, names, t, what, active)
