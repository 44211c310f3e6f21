"""The harness as the controller of a scenario's admission checks (docs/scenario-format-v2.md,
"Admission checks"): it reports each AdmissionCheck Active (or not, `active: false`) and, on
a `set-admission-check` step, writes the check's state into the Workload's
status.admissionChecks, as a check controller does, by server-side apply under its own
field manager (harness.kueue.admission_checks.CHECK_CONTROLLER_MANAGER). Kueue's workload
controller does the rest (admits, evicts, deactivates)."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.kube import KUEUE_API, Kube
from harness.kueue.admission_checks import CHECK_CONTROLLER_MANAGER
from harness.runner.objects import Obj
from harness.scenario.model import AdmissionCheck, CheckChange


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def report_active(kube: Kube, checks: tuple[AdmissionCheck, ...]) -> None:
    """Each AdmissionCheck's Active condition, as its controller would set it."""
    for check in checks:
        status = "True" if check.active else "False"
        kube.apply(
            {
                "apiVersion": KUEUE_API,
                "kind": "AdmissionCheck",
                "metadata": {"name": check.name},
                "status": {
                    "conditions": [
                        {
                            "type": "Active",
                            "status": status,
                            "reason": "Active" if check.active else "Inactive",
                            "message": f"the harness plays {check.controller_name}",
                            "lastTransitionTime": _now(),
                        }
                    ]
                },
            },
            subresource="status",
            field_manager=CHECK_CONTROLLER_MANAGER,
        )


def set_state(kube: Kube, namespace: str, workload: str, change: CheckChange) -> Obj:
    """The check's state in status.admissionChecks (a map keyed by name), applied under a
    field manager of that check's own, as each check has its controller: an apply by one
    manager removes the entries it applied before and leaves out now, so one manager for
    every check would drop the other checks' states.

    The same state again keeps its lastTransitionTime, as Kueue's SetAdmissionCheckState
    (pkg/workload/patching) does for a check controller: the apply then changes nothing and
    is no update, where a fresh time would be one (and an update of a deactivated workload
    requeues its cohort's parked workloads)."""
    return kube.apply(
        {
            "apiVersion": KUEUE_API,
            "kind": "Workload",
            "metadata": {"name": workload, "namespace": namespace},
            "status": {
                "admissionChecks": [
                    {
                        "name": change.check,
                        "state": change.state,
                        "message": "",
                        "lastTransitionTime": _since(kube, namespace, workload, change),
                    }
                ]
            },
        },
        subresource="status",
        field_manager=f"{CHECK_CONTROLLER_MANAGER}-{change.check}"[:128],
    )


def _since(kube: Kube, namespace: str, workload: str, change: CheckChange) -> str:
    """The check's lastTransitionTime: kept while its state stays, now when it changes."""
    wl = kube.get_or_none(KUEUE_API, "Workload", workload, namespace) or {}
    for entry in (wl.get("status") or {}).get("admissionChecks") or []:
        if entry.get("name") == change.check and entry.get("state") == change.state:
            return str(entry.get("lastTransitionTime") or _now())
    return _now()
