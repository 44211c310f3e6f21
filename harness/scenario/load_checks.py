"""Admission checks in a scenario: top-level `admissionChecks` (Kueue's AdmissionCheck),
a ClusterQueue's `admissionChecks` / `admissionChecksStrategy`, and the
`set-admission-check` step (docs/scenario-format-v2.md, "Admission checks").

Kueue's API rules: apis/kueue/v1beta2/admissioncheck_types.go (controllerName 1-253
characters, parameters' apiGroup, kind and name patterns), clusterqueue_types.go
(admissionChecksStrategy.admissionChecks 1-64 entries keyed by name, onFlavors a set of at
most 64) and pkg/webhooks/clusterqueue_webhook.go `validateAdmissionCheckOnFlavors`
(onFlavors name flavors of the ClusterQueue). The v1beta1 list `admissionChecks` is read as
Kueue's conversion reads it (apis/kueue/v1beta1/clusterqueue_conversion.go: one rule per
name, for every flavor).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from harness.k8s.rules import is_dns_label, is_dns_subdomain
from harness.kueue.admission_checks import ADMITTED_STATES, required_checks
from harness.scenario.keypath import KeyPath, yaml_text
from harness.scenario.model import (
    CHECK_STATES,
    AdmissionCheck,
    CheckChange,
    CheckRule,
    ClusterQueue,
    Workload,
)

MAX_RULES = 64
BUILT_IN_CONTROLLERS = {
    "kueue.x-k8s.io/provisioning-request": "ProvisioningRequests",
    "kueue.x-k8s.io/multikueue": "MultiKueue",
}
"""Controllers Kueue runs itself (kueue.ProvisioningRequestControllerName,
MultiKueueControllerName): their checks change how Kueue schedules (a delayed topology
request, remote clusters), which contract v2 leaves out; the harness plays every other
controller."""
MAX_CONTROLLER_NAME = 253
_KIND = re.compile(r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")


def admission_checks(at: KeyPath) -> tuple[AdmissionCheck, ...]:
    """Top-level `admissionChecks`: AdmissionCheck objects, names unique."""
    out: list[AdmissionCheck] = []
    for item in at.items():
        check = _admission_check(item)
        if any(c.name == check.name for c in out):
            item.child("name", None).fail(f"duplicate AdmissionCheck name {yaml_text(check.name)}")
        out.append(check)
    return tuple(out)


def _admission_check(at: KeyPath) -> AdmissionCheck:
    fields = at.mapping(
        ("name", "controllerName", "parameters", "active"), ("name", "controllerName")
    )
    name = fields["name"].string(is_dns_subdomain, "AdmissionCheck name")
    controller = fields["controllerName"].string()
    if not 1 <= len(controller) <= MAX_CONTROLLER_NAME:
        fields["controllerName"].fail(f"must be 1 to {MAX_CONTROLLER_NAME} characters")
    if controller in BUILT_IN_CONTROLLERS:
        fields["controllerName"].fail(
            f"{BUILT_IN_CONTROLLERS[controller]}: not supported (not in contract v2)"
        )
    parameters = _parameters(fields["parameters"]) if "parameters" in fields else None
    active = fields["active"].boolean() if "active" in fields else True
    return AdmissionCheck(name, controller, parameters, active)


def _parameters(at: KeyPath) -> dict[str, str]:
    fields = at.mapping(("apiGroup", "kind", "name"), ("apiGroup", "kind", "name"))
    group = fields["apiGroup"].string(is_dns_subdomain, "API group")
    kind = fields["kind"].string()
    if not (1 <= len(kind) <= 63 and _KIND.match(kind)):
        fields["kind"].fail(f"{yaml_text(kind)} is not a kind (1-63 letters, digits and '-')")
    name = fields["name"].string(is_dns_label, "object name")
    return {"apiGroup": group, "kind": kind, "name": name}


def cluster_queue_rules(
    fields: Mapping[str, KeyPath], flavors: Collection[str]
) -> tuple[CheckRule, ...]:
    """A ClusterQueue's checks: `admissionChecksStrategy`, or v1beta1's `admissionChecks`."""
    listed, strategy = fields.get("admissionChecks"), fields.get("admissionChecksStrategy")
    if listed is not None and strategy is not None:
        # Documented on both fields (clusterqueue_types.go v1beta1: "Cannot be used along
        # with AdmissionCheckStrategy"); v0.19.2's conversion would drop the strategy.
        strategy.fail("cannot be used in conjunction with 'admissionChecks'")
    if listed is not None:
        items = listed.items()
        names = [i.string(is_dns_subdomain, "AdmissionCheck name") for i in items]
        _no_duplicates(items, names)
        return tuple(CheckRule(n) for n in names)
    if strategy is None:
        return ()
    sub = strategy.mapping(("admissionChecks",), ("admissionChecks",))
    items = sub["admissionChecks"].items()
    if not 1 <= len(items) <= MAX_RULES:
        sub["admissionChecks"].fail(f"must list 1 to {MAX_RULES} admission checks")
    rules = [_rule(i, flavors) for i in items]
    _no_duplicates([i.child("name", None) for i in items], [r.name for r in rules])
    return tuple(rules)


def _rule(at: KeyPath, flavors: Collection[str]) -> CheckRule:
    fields = at.mapping(("name", "onFlavors"), ("name",))
    name = fields["name"].string(is_dns_subdomain, "AdmissionCheck name")
    on: list[str] = []
    if "onFlavors" in fields:
        items = fields["onFlavors"].items()
        if len(items) > MAX_RULES:
            fields["onFlavors"].fail(f"at most {MAX_RULES} flavors")
        for item in items:
            flavor = item.string()
            if flavor not in flavors:
                item.fail(
                    f"supported values: {', '.join(sorted(flavors))}"
                    f" (the ClusterQueue's flavors), got {yaml_text(flavor)}"
                )
            if flavor in on:
                item.fail(f"duplicate value {yaml_text(flavor)}")
            on.append(flavor)
    return CheckRule(name, tuple(on))


def _no_duplicates(items: list[KeyPath], names: list[str]) -> None:
    for index, name in enumerate(names):
        if name in names[:index]:
            items[index].fail(f"duplicate AdmissionCheck {yaml_text(name)}")


def admitted_states(at: KeyPath, cq: ClusterQueue, flavors: Collection[str]) -> dict[str, str]:
    """An `admitted` entry's `admissionChecks`: its status.admissionChecks, `name` and
    `state` each, naming checks its admission on `flavors` needs (Kueue's workload controller
    drops any other), in a state that lasts (ADMITTED_STATES)."""
    needed = required_checks(cq, flavors)
    out: dict[str, str] = {}
    for item in at.items():
        fields = item.mapping(("name", "state"), ("name", "state"))
        name = fields["name"].string()
        if name not in needed:
            fields["name"].fail(
                f"{yaml_text(name)} is not an admission check its admission needs in "
                f"ClusterQueue {cq.name} (those: {', '.join(sorted(needed)) or 'none'})"
            )
        if name in out:
            fields["name"].fail(f"duplicate AdmissionCheck {yaml_text(name)}")
        state = fields["state"].string()
        if state not in ADMITTED_STATES:
            fields["state"].fail(
                f"{yaml_text(state)}: a workload holding quota is in one of "
                f"{', '.join(ADMITTED_STATES)} (Kueue evicts it at once on Retry and "
                "deactivates it on Rejected: write it as a pending workload, or leave it out)"
            )
        out[name] = state
    return out


def change(
    at: KeyPath, known: Mapping[str, Workload], queues: Collection[ClusterQueue]
) -> CheckChange:
    """A `set-admission-check` step: a known workload, one of its ClusterQueue's checks and
    a CheckState."""
    fields = at.mapping(("workload", "check", "state"), ("workload", "check", "state"))
    name = fields["workload"].string()
    if name not in known:
        fields["workload"].fail(f"no workload named {yaml_text(name)}")
    queue = known[name].queue
    cq = next((q for q in queues if q.name == queue), None)
    checks = [r.name for r in cq.admission_checks] if cq is not None else []
    check = fields["check"].string()
    if check not in checks:
        fields["check"].fail(
            f"{yaml_text(check)} is not an admission check of ClusterQueue {queue}"
            f" (its checks: {', '.join(checks) or 'none'})"
        )
    state = fields["state"].string()
    if state not in CHECK_STATES:
        fields["state"].fail(f"{yaml_text(state)} is not one of {', '.join(CHECK_STATES)}")
    return CheckChange(name, check, state)
