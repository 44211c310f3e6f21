"""The ClusterQueue quota check that Kueue runs before topology, and its pending messages.

From Kueue v0.19.2 pkg/scheduler/flavorassigner (assignFlavors, fitsResourceQuota): pod set
groups are checked in order against nominal quota (one flavor, no cohort, no preemption);
a request beyond the nominal quota stops the check, one beyond what is unused is reported
and the check goes on with the next group. Resources the scenario gives no quota for are
ample. Reasons of one pod set are sorted and joined with ", ".
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.fit.resources import ResourceVector, from_quantities, scaled
from harness.quantity import format_kueue_units
from harness.scenario import PodSet, Scenario


def quota_request(scenario: Scenario, members: list[PodSet]) -> ResourceVector:
    """Total quota a group asks for; `pods` counts only when the ClusterQueue limits it."""
    total: ResourceVector = {}
    for pod_set in members:
        for name, value in scaled(from_quantities(pod_set.requests), pod_set.count).items():
            total[name] = total.get(name, 0) + value
        if "pods" in scenario.queue.nominal_quota:
            total["pods"] = total.get("pods", 0) + pod_set.count
    return total


def quota_reasons(
    scenario: Scenario,
    groups: list[list[PodSet]],
    used: Mapping[str, int],
) -> dict[str, list[str]]:
    """Per pod set name, the quota reasons that keep it pending (empty when all fits)."""
    nominal = from_quantities(scenario.queue.nominal_quota)
    flavor = scenario.flavor.name
    assumed: ResourceVector = {}
    out: dict[str, list[str]] = {}
    for members in groups:
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
        if hard:
            break
        for name, value in request.items():
            assumed[name] = assumed.get(name, 0) + value
    return out
