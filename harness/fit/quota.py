"""Flavor assignment, which Kueue runs before topology: flavor match, then ClusterQueue quota.

From Kueue v0.19.2 pkg/scheduler/flavorassigner (assignFlavors, checkFlavorForPodSets,
fitsResourceQuota): pod set groups are checked in order (one flavor, no cohort, no
preemption). A pod set whose nodeSelector contradicts the flavor's nodeLabels (on the
flavor's own label keys) does not match the flavor, and a request beyond the nominal quota
cannot fit: either stops the check. A request beyond what is unused is reported and the
check goes on with the next group. Resources the scenario gives no quota for are ample.
Reasons of one pod set are sorted and joined with ", ".
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.errors import Nondeterministic
from harness.fit.resources import ResourceVector, from_quantities, scaled
from harness.k8s.quantity import format_kueue_units
from harness.scenario.model import PodSet, Scenario


def quota_request(scenario: Scenario, members: list[PodSet]) -> ResourceVector:
    """Total quota a group asks for; `pods` counts only when the ClusterQueue limits it."""
    total: ResourceVector = {}
    for pod_set in members:
        for name, value in scaled(from_quantities(pod_set.requests), pod_set.count).items():
            total[name] = total.get(name, 0) + value
        if "pods" in scenario.queue.nominal_quota:
            total["pods"] = total.get("pods", 0) + pod_set.count
    return total


def requests_something(scenario: Scenario, pod_set: PodSet) -> bool:
    """Whether the pod set asks the ClusterQueue for any resource (`pods` counts when covered)."""
    return bool(pod_set.requests) or "pods" in scenario.queue.nominal_quota


def flavor_mismatch(scenario: Scenario, members: list[PodSet]) -> str | None:
    """Kueue's reason when a group's nodeSelector rules the flavor out, else None."""
    labels = scenario.flavor.node_labels
    for pod_set in members:
        if any(k in labels and labels[k] != v for k, v in pod_set.node_selector.items()):
            return f"flavor {scenario.flavor.name} doesn't match node affinity"
    return None


def quota_reasons(
    scenario: Scenario,
    groups: list[list[PodSet]],
    used: Mapping[str, int],
    past_no_fit: bool = True,
) -> tuple[dict[str, list[str]], bool]:
    """Per pod set name, the reasons that keep it pending (empty: all fits), and whether the
    assignment stopped outright (NoFit: Kueue then builds no topology request at all)."""
    nominal = from_quantities(scenario.queue.nominal_quota)
    flavor = scenario.flavor.name
    assumed: ResourceVector = {}
    out: dict[str, list[str]] = {}
    for members in groups:
        if not any(requests_something(scenario, p) for p in members):
            continue  # nothing requested: no resource, so no flavor is even considered
        mismatch = flavor_mismatch(scenario, members)
        if mismatch is not None:
            out.update({pod_set.name: [mismatch] for pod_set in members})
            return out, True
        request = quota_request(scenario, members)
        reasons, hard = [], False
        for name in sorted(request):
            if name not in nominal:
                continue
            value = assumed.get(name, 0) + request[name]
            if value > nominal[name]:
                hard = True
                reasons.append(
                    f"insufficient quota for {name} in flavor {flavor}, previously considered "
                    f"podsets requests ({format_kueue_units(name, assumed.get(name, 0))}) + "
                    f"current podset request ({format_kueue_units(name, request[name])}) > "
                    f"maximum capacity ({format_kueue_units(name, nominal[name])})"
                )
            elif value > nominal[name] - used.get(name, 0):
                more = value - (nominal[name] - used.get(name, 0))
                reasons.append(
                    f"insufficient unused quota for {name} in flavor {flavor}, "
                    f"{format_kueue_units(name, more)} more needed"
                )
        for pod_set in members:
            if reasons:
                out[pod_set.name] = sorted(reasons)
        if hard and len(reasons) >= 2 and not past_no_fit:
            raise Nondeterministic(
                f"{scenario.path}: Kueue before v0.19 names in its message only the resources "
                f"it looked at, in Go map order, before the first one that cannot fit: "
                f"{', '.join(sorted(reasons))}"
            )
        if hard:
            return out, True
        for name, value in request.items():
            assumed[name] = assumed.get(name, 0) + value
    return out, False
