"""A cluster's admission checks -> the scenario's (docs/scenario-format-v2.md, "Admission
checks"): AdmissionCheck objects with whether their controller reports them Active, each
ClusterQueue's admissionChecksStrategy, and the check states of each Workload holding quota
(an `admitted` entry's `admissionChecks`: Pending ones make it quotaReserved, not admitted).

Checks of Kueue's own controllers (ProvisioningRequest, MultiKueue) are not in contract v2:
they are left out, and so are the rules and states naming them, each said in Gaps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.kube import Obj
from harness.live.gaps import Gaps
from harness.scenario.load_checks import BUILT_IN_CONTROLLERS

LASTING = ("Pending", "Ready")
"""States a workload keeps its quota in; Retry evicts it and Rejected deactivates it at once
(workload_controller.go reconcileCheckBasedEviction)."""


def admission_checks(items: Iterable[Obj], gaps: Gaps) -> list[Obj]:
    """AdmissionCheck objects: name, controllerName, parameters, and `active: false` when
    its Active condition is not True (Kueue keeps the ClusterQueues using it inactive)."""
    out = []
    for ac in sorted(items, key=lambda o: str(o["metadata"]["name"])):
        name, spec = str(ac["metadata"]["name"]), dict(ac.get("spec") or {})
        controller = str(spec.get("controllerName") or "")
        if controller in BUILT_IN_CONTROLLERS:
            gaps.add(
                f"AdmissionCheck {name}: {BUILT_IN_CONTROLLERS[controller]} check, not in "
                "contract v2: left out, with the ClusterQueue rules and workload states naming "
                "it (the snapshot admits without it)"
            )
            continue
        entry: Obj = {"name": name, "controllerName": controller}
        params = spec.get("parameters")
        if params:
            entry["parameters"] = {k: params[k] for k in ("apiGroup", "kind", "name")}
        if not _active(ac):
            entry["active"] = False
        out.append(entry)
    return out


def _active(ac: Obj) -> bool:
    conditions = (ac.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


def left_out(items: Iterable[Obj], written: Iterable[Obj]) -> set[str]:
    """Names of the AdmissionChecks that exist but were not written."""
    kept = {str(c["name"]) for c in written}
    return {str(ac["metadata"]["name"]) for ac in items} - kept


def strategy(cq: Obj, skipped: set[str], gaps: Gaps) -> Obj | None:
    """A ClusterQueue's admissionChecksStrategy without the rules of left-out checks (None
    when it has none left). A rule naming a check that does not exist is kept: Kueue keeps
    that ClusterQueue inactive (AdmissionCheckNotFound), and so does the scenario."""
    rules = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks")
    kept = []
    for rule in rules or []:
        if rule["name"] in skipped:
            gaps.add(f"ClusterQueue {cq['metadata']['name']}: its check {rule['name']} left out")
            continue
        entry: Obj = {"name": rule["name"]}
        if rule.get("onFlavors"):
            entry["onFlavors"] = list(rule["onFlavors"])
        kept.append(entry)
    return {"admissionChecks": kept} if kept else None


def needed(rules: Iterable[Mapping[str, Any]], flavors: set[str]) -> set[str]:
    """The checks an admission on `flavors` needs (a rule without onFlavors: every flavor)."""
    return {r["name"] for r in rules if not r.get("onFlavors") or flavors & set(r["onFlavors"])}


def states(wl: Obj, rules: Iterable[Mapping[str, Any]], flavors: set[str]) -> list[Obj]:
    """A Workload's status.admissionChecks for the checks its admission needs, in name
    order (what Kueue's workload controller keeps; a needed one not listed yet is Pending,
    as the controller would add it)."""
    found = {
        str(s["name"]): str(s.get("state") or "Pending")
        for s in (wl.get("status") or {}).get("admissionChecks") or []
    }
    return [{"name": n, "state": found.get(n, "Pending")} for n in sorted(needed(rules, flavors))]


def failed(wl: Obj) -> dict[str, str]:
    """Checks in a state that does not last (Retry, Rejected) -> that state."""
    listed = (wl.get("status") or {}).get("admissionChecks") or []
    return {str(s["name"]): str(s["state"]) for s in listed if s.get("state") not in LASTING}
