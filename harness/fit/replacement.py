"""Kueue v0.19.2's second pass for a failed node: a new home for one pod set's lost pods.

Follows pkg/cache/scheduler/tas_flavor_snapshot.go (findReplacementAssignment,
requiredReplacementDomain, findIncompleteSliceDomain, IsTopologyAssignmentStale,
mergeTopologyAssignments), described in docs/dev/kueue-v0.19.2-node-replacement.md §4. The
placement itself is harness.fit.placement's, restricted to one domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from harness.fit.faultnotes import Search, label
from harness.fit.placement import PlacementFailed, place
from harness.fit.request import PlacementRequest, placement_request
from harness.fit.resources import ResourceVector
from harness.fit.sorting import Algorithm
from harness.fit.tree import LeafKey, Tree
from harness.scenario.model import PodSet, Toleration


class ReplacementFailed(Exception):
    """Kueue's reason why the second pass found no replacement; `stale`: the remaining node
    that made the assignment stale, `search`: where it looked (--explain)."""

    def __init__(
        self, message: str, search: Search | None = None, stale: LeafKey | None = None
    ) -> None:
        super().__init__(message)
        self.search = search
        self.stale = stale


@dataclass(frozen=True)
class Replacement:
    """The repaired assignment and the part of it that took the lost pods."""

    assignment: dict[LeafKey, int]
    added: dict[LeafKey, int]
    search: Search


def find_replacement(
    tree: Tree,
    pod_set: PodSet,
    current: Mapping[LeafKey, int],
    failed_node: str,
    flavor_tolerations: tuple[Toleration, ...],
    assumed: Mapping[LeafKey, ResourceVector],
    algo: Algorithm,
    by_prefix: bool = False,
) -> Replacement:
    """Place the pods `current` has on `failed_node` (unhealthyNodes[0]) again, or raise
    ReplacementFailed with Kueue's message. The pod set is placed alone: a leader and its
    workers are not paired in a replacement (FindTopologyAssignmentsForFlavor). `by_prefix`:
    before v0.19.2 (kueue#14452) a leaf is in the required domain when its ID merely starts
    with the domain's (KueueRules.replacement_domain_by_id)."""
    remaining = {key: n for key, n in current.items() if key != failed_node}
    lost = sum(n for key, n in current.items() if key == failed_node)
    ordered = sorted(remaining, key=lambda key: _values(tree, key))
    for key in ordered:
        if key not in tree.leaves:  # IsTopologyAssignmentStale: deleted, NotReady, cordoned
            raise ReplacementFailed(
                "Cannot replace the node, because the existing topologyAssignment is "
                f"invalid, as it contains the stale domain {key}",
                stale=key,
            )
    request = placement_request(tree.topology, [replace(pod_set, count=lost)])
    within, why = _required_domain(tree, request, remaining, ordered, lost)
    search = Search(lost, within, why, algo.best_fit)
    if within is not None and request.slice_size > 1 and lost % request.slice_size != 0:
        # One slice layer: no layer size divides the lost pods, so they are placed one by
        # one (effective slice size 1, no slice topology).
        lowest = len(tree.topology.levels) - 1
        request = replace(request, slice_size=1, slice_level_index=lowest)
    try:
        result = place(
            tree,
            request,
            flavor_tolerations,
            assumed,
            algo,
            None,
            within=within,
            within_by_prefix=by_prefix,
        )
    except PlacementFailed as failed:
        raise ReplacementFailed(str(failed), search) from failed
    added = result.per_pod_set.get(pod_set.name, {})
    if not added:
        raise ReplacementFailed(
            f"cannot find replacement assignment for unhealthy node: {failed_node}", search
        )
    merged = dict(remaining)
    for key, n in added.items():
        merged[key] = merged.get(key, 0) + n
    return Replacement(merged, dict(added), search)


def _values(tree: Tree, key: LeafKey) -> tuple[str, ...]:
    leaf = tree.leaves.get(key)
    if leaf is not None:
        return leaf.domain.values
    return (key,) if isinstance(key, str) else key


def _required_domain(
    tree: Tree,
    request: PlacementRequest,
    remaining: Mapping[LeafKey, int],
    ordered: list[LeafKey],
    lost: int,
) -> tuple[tuple[str, ...] | None, str]:
    """requiredReplacementDomain: the slice-level domain the loss left incomplete, else the
    required-level domain of the first remaining node; None (the whole topology) for
    preferred, unconstrained, or no node left. With it, why in words."""
    if not ordered:
        return None, "no node of the pod set is left"
    if request.slice_size > 1 and lost % request.slice_size != 0:
        depth = request.slice_level_index + 1
        per_domain: dict[tuple[str, ...], int] = {}
        for key in ordered:
            prefix = tree.leaves[key].domain.values[:depth]
            per_domain[prefix] = per_domain.get(prefix, 0) + remaining[key]
        # Kueue walks a Go map here; with several incomplete slice domains it picks one at
        # random. The first in level-value order stands for it.
        for prefix, count in per_domain.items():
            if (count + lost) % request.slice_size == 0:
                return (
                    prefix,
                    f"the slice the loss left incomplete, slice size {request.slice_size}",
                )
        return None, "no slice domain is missing exactly the lost pods"
    if not request.required:
        mode = "preferred" if not request.unconstrained else "unconstrained"
        return None, f"its topology is {mode}"
    first = label(ordered[0])
    within = tree.leaves[ordered[0]].domain.values[: request.level_index + 1]
    return within, f"the required level's domain of its first remaining node, {first}"
