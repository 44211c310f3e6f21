"""Fragmentation of one flavor: the largest free slot at each topology level.

"48 GPUs free" says little when no rack holds more than 6 of them; the largest free slot per
level says which job shapes still fit. Counted over usable nodes only (ready, not cordoned,
no taint the flavor does not tolerate), as Kueue's TAS counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from harness.html.world import MapView

NODE_LEVEL = "node"


@dataclass(frozen=True)
class Slot:
    """The level, its largest free amount, the domain holding it, and how many domains of
    that level have anything free."""

    level: str
    largest: Fraction
    domain: str
    with_free: int
    domains: int


def largest_free(view: MapView) -> list[Slot]:
    """One Slot per level of the view, highest first, then one for single nodes."""
    slots = []
    for depth in range(1, len(view.levels) + 1):
        free: dict[tuple[str, ...], Fraction] = {}
        for node in view.nodes:
            key = node.path[:depth]
            free[key] = free.get(key, Fraction(0)) + (node.free if node.usable else 0)
        slots.append(_slot(view.levels[depth - 1], _named(free)))
    per_node = {n.name: n.free if n.usable else Fraction(0) for n in view.nodes}
    slots.append(_slot(NODE_LEVEL, per_node))
    return slots


def _named(free: dict[tuple[str, ...], Fraction]) -> dict[str, Fraction]:
    """Domains by their own value, or by their whole path where values repeat under
    different parents."""
    short = {key[-1] for key in free}
    if len(short) == len(free):
        return {key[-1]: value for key, value in free.items()}
    return {"/".join(key): value for key, value in free.items()}


def _slot(level: str, free: dict[str, Fraction]) -> Slot:
    if not free:
        return Slot(level, Fraction(0), "", 0, 0)
    domain = max(sorted(free), key=lambda d: free[d])
    return Slot(level, free[domain], domain, sum(1 for v in free.values() if v > 0), len(free))
