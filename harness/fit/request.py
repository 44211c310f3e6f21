"""What one placement run is asked for: Kueue's normalised view of a pod set's TAS request.

Mirrors how Kueue v0.19.2 reads a PodSetTopologyRequest (tas_flavor_snapshot.go levelKey,
isRequired, isUnconstrained, getSliceSizeWithSinglePodAsDefault): required and preferred
search their level; a request with only slice keys searches the highest level; unconstrained
and implied TAS (no annotation on a TAS-only ClusterQueue) search the lowest level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.fit.resources import ResourceVector, from_quantities
from harness.scenario.model import PodSet, Topology


@dataclass(frozen=True)
class PlacementRequest:
    """One pod set (or a leader/worker group) as the placement algorithm sees it."""

    workers: PodSet
    leader: PodSet | None
    level_index: int
    slice_level_index: int
    slice_size: int
    required: bool
    unconstrained: bool
    worker_requests: ResourceVector
    leader_requests: ResourceVector | None

    @property
    def count(self) -> int:
        return self.workers.count

    @property
    def leader_count(self) -> int:
        return 1 if self.leader is not None else 0


def pod_set_groups(pod_sets: Sequence[PodSet]) -> list[list[int]]:
    """Pod set indices grouped by podSetGroupName (else each alone), in first-appearance order."""
    groups: dict[str, list[int]] = {}
    for index, ps in enumerate(pod_sets):
        key = ps.topology.group if ps.topology and ps.topology.group else f"\0{index}"
        groups.setdefault(key, []).append(index)
    return list(groups.values())


def with_pod(requests: ResourceVector) -> ResourceVector:
    """Per-pod requests plus the implicit `pods: 1` every placed pod consumes."""
    out = dict(requests)
    out["pods"] = out.get("pods", 0) + 1
    return out


def placed_pods(pod_set: PodSet) -> int:
    """The pods a placement assigns: whole slices only (findTopologyAssignment counts
    `count / sliceSize` slices, Go's integer division), so the remainder of a count that is
    no multiple of the slice size is left out."""
    tr = pod_set.topology
    if tr is None or tr.slice_level is None or tr.slice_size is None:
        return pod_set.count
    return pod_set.count // tr.slice_size * tr.slice_size


def split_group(members: list[PodSet]) -> tuple[PodSet, PodSet | None]:
    """Workers and leader of a group: the first member works unless the second has more pods."""
    if len(members) == 1:
        return members[0], None
    workers, leader = members[0], members[1]
    if leader.count > workers.count:
        workers, leader = leader, workers
    return workers, leader


def placement_request(topology: Topology, members: list[PodSet]) -> PlacementRequest:
    workers, leader = split_group(members)
    levels = topology.levels
    tr = workers.topology
    mode = tr.mode if tr else None
    slices = tr is not None and tr.slice_level is not None and tr.slice_size is not None
    if mode in ("required", "preferred") and tr is not None and tr.level is not None:
        level = tr.level
    elif slices:
        level = levels[0]
    else:
        level = levels[-1]
    slice_level = tr.slice_level if slices and tr is not None and tr.slice_level else levels[-1]
    return PlacementRequest(
        workers=workers,
        leader=leader,
        level_index=levels.index(level),
        slice_level_index=levels.index(slice_level),
        slice_size=(tr.slice_size or 1) if slices and tr is not None else 1,
        required=mode == "required",
        unconstrained=mode not in ("required", "preferred"),
        worker_requests=with_pod(from_quantities(workers.requests)),
        leader_requests=with_pod(from_quantities(leader.requests)) if leader else None,
    )
