"""Kueue's CohortSpec for a scenario's Cohort: one home for the runner (which creates it on
a cluster) and the sim (which hands it to Kueue's cache), so both give Kueue the same tree."""

from __future__ import annotations

from harness.k8s.quantity import format_quantity
from harness.kueue.cluster_queue_spec import Spec, resource_groups_spec
from harness.scenario.model import Cohort


def cohort_spec(cohort: Cohort) -> Spec:
    """parentName, resourceGroups and fairSharing, each only when the scenario sets it (the
    Cohort CRD defaults none of them)."""
    spec: Spec = {}
    if cohort.parent is not None:
        spec["parentName"] = cohort.parent
    if cohort.resource_groups:
        spec["resourceGroups"] = resource_groups_spec(cohort.resource_groups)
    if cohort.fair_weight is not None:
        spec["fairSharing"] = {"weight": format_quantity(cohort.fair_weight)}
    return spec
