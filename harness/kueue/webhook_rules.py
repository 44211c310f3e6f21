"""Workloads Kueue's admission webhooks refuse: reported as rejections, never placed.

Rules from Kueue v0.19.2 pkg/controller/jobframework/tas_validation.go
(ValidateTASPodSetRequest, ValidateSliceSizeAnnotationUpperBound,
ValidatePodSetGroupingTopology) and pkg/webhooks/workload_webhook.go (the reserved `pods`
key). Placing such a workload is meaningless, and some of them crash Kueue's scheduler.
"""

from __future__ import annotations

from harness.kueue.keys import GROUP, PREFERRED, REQUIRED, SLICE_LEVEL, SLICE_SIZE
from harness.scenario.model import PodSet, Workload


def _path(pod_set: PodSet, key: str) -> str:
    return f"podSets[{pod_set.name}].template.metadata.annotations[{key}]"


def _pod_set_errors(pod_set: PodSet) -> list[str]:
    errors = []
    if "pods" in pod_set.requests:
        errors.append(
            f"podSets[{pod_set.name}].template.spec.containers[0].resources.requests[pods]: "
            'Invalid value: "pods": the key is reserved for internal kueue use'
        )
    tr = pod_set.topology
    if tr is None:
        return errors
    has_level, has_size = tr.slice_level is not None, tr.slice_size is not None
    if tr.group is not None:
        group = _path(pod_set, GROUP)
        if tr.group.isdigit():
            errors.append(
                f'{_path(pod_set, GROUP)}: Invalid value: "{tr.group}": must not be a number'
            )
        if has_size:
            errors.append(f"{group}: Forbidden: may not be set when '{SLICE_SIZE}' is specified")
        if has_level:
            errors.append(f"{group}: Forbidden: may not be set when '{SLICE_LEVEL}' is specified")
        if tr.mode not in ("required", "preferred"):
            errors.append(
                f"{_path(pod_set, GROUP)}: Forbidden: may not be set when neither "
                f"'{PREFERRED}' nor '{REQUIRED}' is specified"
            )
    size = _path(pod_set, SLICE_SIZE)
    if has_level and not has_size:
        errors.append(f"{size}: Required value: must be set when '{SLICE_LEVEL}' is specified")
    if has_size and not has_level:
        errors.append(f"{size}: Forbidden: may not be set when '{SLICE_LEVEL}' is not specified")
    if tr.slice_size is not None and tr.slice_size > pod_set.count:
        errors.append(
            f'{_path(pod_set, SLICE_SIZE)}: Invalid value: "{tr.slice_size}": '
            f"must not be greater than pod set count {pod_set.count}"
        )
    return errors


def _group_errors(workload: Workload) -> list[str]:
    """Grouping rules of the multi-pod-set kinds (JobSet, LWS, ...); a batch/v1 Job skips them."""
    if len(workload.pod_sets) < 2:
        return []
    groups: dict[str, list[PodSet]] = {}
    for pod_set in workload.pod_sets:
        if pod_set.topology is not None and pod_set.topology.group is not None:
            groups.setdefault(pod_set.topology.group, []).append(pod_set)
    errors = []
    for name, members in groups.items():
        if len(members) != 2:
            errors += [
                f'{_path(p, GROUP)}: Invalid value: "{name}": can only define groups of exactly '
                f"2 pod sets, got: {len(members)} pod set(s)"
                for p in members
            ]
            continue
        first, second = members
        if not _consistent(first, second):
            errors.append(
                f"{_path(first, GROUP)}: Invalid value: must specify '{REQUIRED}' or "
                f"'{PREFERRED}' topology consistent with the other pod set in group '{name}'"
            )
        if first.count != 1 and second.count != 1:
            errors.append(
                f'{_path(first, GROUP)}: Invalid value: "{name}": can only define groups where at '
                f"least one pod set has only 1 replica, got: {first.count} replica(s) and "
                f"{second.count} replica(s) in the group"
            )
    return errors


def _consistent(first: PodSet, second: PodSet) -> bool:
    """Both members required, or both preferred, at the same level (topologyRequestsValid)."""
    a, b = first.topology, second.topology
    if a is None or b is None or a.mode not in ("required", "preferred"):
        return False
    return (a.mode, a.level) == (b.mode, b.level)


def webhook_rejection(workload: Workload) -> str | None:
    """Kueue's refusal text for this workload, or None when the webhooks accept it."""
    errors = [e for p in workload.pod_sets for e in _pod_set_errors(p)] + _group_errors(workload)
    if not errors:
        return None
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
