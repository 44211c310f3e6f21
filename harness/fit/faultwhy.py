"""The words of the second pass's notes (`--explain`): which nodes took a failed node's pods
and why there, or why none could, with what holds each node of the domain it looked in."""

from __future__ import annotations

from collections.abc import Mapping

from harness.fit.faultnotes import Note, label, spread_words
from harness.fit.replacement import Replacement, ReplacementFailed
from harness.fit.resources import from_quantities
from harness.fit.tree import LeafKey, Tree
from harness.k8s.quantity import format_kueue_units
from harness.scenario.model import Node, PodSet

WAITS = (
    "TASFailedNodeReplacementFailFast is off, so it stays admitted on its old assignment and "
    "Kueue tries again when the cluster changes"
)


def replaced_note(tree: Tree, ps: PodSet, failed: str, found: Replacement) -> Note:
    """Which nodes took the lost pods, and why there."""
    search, levels = found.search, tree.topology.levels
    new = spread_words(found.added)
    order = (
        "choosing the tightest fit there (BestFit: the fewest free slots that still hold them)"
        if search.best_fit
        else "choosing the least free first (LeastFreeCapacity: unconstrained, TASProfileMixed)"
    )
    text = (
        f"Kueue replaced {failed} by {new}: it placed the {search.lost} lost pod(s) "
        f"{search.where(levels)}, {order}"
    )
    detail = {
        "replacedBy": {label(k): n for k, n in found.added.items()},
        "lost": search.lost,
        "domain": list(search.within) if search.within is not None else None,
        "domainReason": search.why,
    }
    return Note("replaced", text, failed, ps.name, detail)


def no_replacement_note(
    nodes: Mapping[str, Node],
    holders: Mapping[LeafKey, list[str]],
    tree: Tree,
    ps: PodSet,
    failed: str,
    why: ReplacementFailed,
) -> Note:
    """Why the second pass found nothing: a stale assignment, or no room where it looked."""
    if why.stale is not None:
        stale = label(why.stale)
        node = nodes.get(stale)
        state = (
            "deleted"
            if node is None
            else "NotReady"
            if not node.ready
            else "cordoned"
            if node.unschedulable
            else "out of the topology"
        )
        text = (
            f"no replacement for {failed}: a remaining node of the assignment, {stale}, is "
            f"{state}, so Kueue finds the assignment stale and does not look. Kueue: {why}"
        )
        return Note("no-replacement", text, failed, ps.name, {"stale": stale, "message": str(why)})
    search = why.search
    assert search is not None
    room = _room(nodes, holders, tree, ps, search.within)
    fits = sum(n for _, n, _ in room)
    where = search.where(tree.topology.levels)
    text = (
        f"no replacement for {failed}: only {min(fits, search.lost)} of the {search.lost} lost "
        f"pod(s) fit {where}"
    )
    if room:
        text += "; " + "; ".join(f"{node}: {n} fit ({holds})" for node, n, holds in room)
    detail = {
        "lost": search.lost,
        "fits": fits,
        "domain": list(search.within) if search.within is not None else None,
        "domainReason": search.why,
        "nodes": [{"node": node, "fits": n, "why": holds} for node, n, holds in room],
        "message": str(why),
    }
    return Note("no-replacement", text, failed, ps.name, detail)


def _room(
    nodes: Mapping[str, Node],
    holders: Mapping[LeafKey, list[str]],
    tree: Tree,
    ps: PodSet,
    within: tuple[str, ...] | None,
) -> list[tuple[str, int, str]]:
    """Per node of the domain: pods of `ps` that fit (the counts the failed placement left
    on the tree) and what holds the rest (why it is left out, its free resources, holders)."""
    out = []
    asked = [r for r, v in from_quantities(ps.requests).items() if v]
    levels = tree.topology.levels
    for name, why in sorted(tree.dropped.items()):
        node = nodes.get(name)
        values = tuple(node.labels.get(level, "") for level in levels) if node else ()
        if within is None or values[: len(within)] == within:
            out.append((name, 0, why))
    for key, leaf in sorted(tree.leaves.items(), key=lambda kv: kv[1].domain.values):
        if within is not None and leaf.domain.values[: len(within)] != within:
            continue
        free = leaf.free()
        why = tree.excluded.get(key) or ", ".join(
            f"{r} free {format_kueue_units(r, free.get(r, 0))}" for r in asked
        )
        who = holders.get(key, [])
        held = f"; held by {', '.join(who)}" if who else ""
        fits = 0 if key in tree.excluded else leaf.domain.pods
        out.append((label(key), fits, f"{why}{held}"))
    return out
