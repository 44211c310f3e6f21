"""Where Kueue breaks a tie by UID or map order (rules §8): the model breaks it one way,
remembers that it did, and `engine.fit` replays the scenario the other way; if the outcomes
differ, no engine can predict Kueue's answer and the model raises Nondeterministic.

What the model treats as tied: victim candidates with equal (same ClusterQueue or not,
priority, reservation second) — Kueue then compares UIDs, random on a cluster — and a TAS
step failing on pod sets of two flavors (Kueue names one in Go map order). Workloads get
distinct creation seconds in file order (the runner waits for the clock between
submissions), so queue keys and entry order never tie; admissions made while one
submission settles share a reservation second.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TypeVar

from harness.errors import Nondeterministic

T = TypeVar("T")

__all__ = ["Loop", "Nondeterministic", "TieBreak"]


@dataclass(frozen=True)
class Loop:
    """Scheduling cycles that repeat with changing messages."""

    period: int
    """How many cycles it repeats."""
    what: str
    key: Hashable
    """The replay's moment and the model's state where it was met: the same key, the same
    future from there."""


@dataclass
class TieBreak:
    """Which way ties are broken in this run (file order, or its reverse), and the ties met."""

    reverse: bool = False
    seen: list[str] = field(default_factory=list)
    offsets: tuple[int, ...] | None = None
    """Where the scheduler's repeating cycles stand when the next event comes (a replay's:
    the i-th loop met runs offsets[i] more cycles, 0 past the end); None: a loop whose
    messages change is Nondeterministic at once."""
    loops: list[Loop] = field(default_factory=list)
    """The loops met, in order."""
    moment: Hashable = None
    """Where the replay is when the engine settles (its clock sets it): part of a loop's key."""

    def loop_offset(self, period: int, what: str, state: Hashable) -> int | None:
        """How many more cycles to run in a loop of `period` cycles met in `state` (None:
        raise)."""
        if self.offsets is None:
            return None
        index = len(self.loops)
        self.loops.append(Loop(period, what, (self.moment, state)))
        return self.offsets[index] if index < len(self.offsets) else 0

    def sort(
        self,
        items: Sequence[T],
        key: Callable[[T], tuple[int, ...]],
        order: Callable[[T], int],
        what: Callable[[list[T]], str],
    ) -> list[T]:
        """Sorted by `key`; equal keys by `order` (reversed in the replay). A group of equal
        keys is remembered, described by `what`."""
        sign = -1 if self.reverse else 1
        out = sorted(items, key=lambda i: (key(i), sign * order(i)))
        for a, b in pairwise(out):
            if key(a) == key(b):
                self.seen.append(what([x for x in out if key(x) == key(a)]))
                break
        return out

    def pick(self, options: Sequence[T], what: str) -> T:
        """One of several equally possible answers (Go map order)."""
        if len(options) > 1:
            self.seen.append(what)
        return options[-1] if self.reverse else options[0]
