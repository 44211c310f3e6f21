"""Why the fault rules decided as they did, recorded while they decide (`--explain`).

harness.fit.faults and harness.fit.replacement write a Note each time they judge a node or
repair an assignment; harness.whatif prints them. Nothing here changes a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.fit.tree import LeafKey
from harness.scenario.model import Taint


@dataclass
class Note:
    """One decision about one workload: `kind` is failed, kept, recovered, replaced,
    no-replacement, multiple-failures or not-watched."""

    kind: str
    text: str
    node: str | None = None
    pod_set: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.pod_set is not None:
            out["podSet"] = self.pod_set
        if self.node is not None:
            out["node"] = self.node
        return {**out, **self.detail, "text": self.text}


@dataclass(frozen=True)
class NodeHealth:
    """The node controller's verdict on one node for one workload, and why in words ("" for
    a Ready node without a NoSchedule or NoExecute taint: nothing to say)."""

    failed: bool
    why: str


def taint_words(taints: list[Taint]) -> str:
    shown = ", ".join(t.render() for t in taints)
    return f"taint{'s' if len(taints) > 1 else ''} {shown}"


def pods_running(n: int) -> str:
    return f"{n} of its pods still run{'s' if n == 1 else ''} there"


@dataclass(frozen=True)
class Search:
    """Where the second pass looked for the lost pods: `within` the level values of the one
    domain allowed (None: anywhere), `why` in words, `best_fit` the ordering used."""

    lost: int
    within: tuple[str, ...] | None
    why: str
    best_fit: bool

    def where(self, levels: tuple[str, ...] | list[str]) -> str:
        if self.within is None:
            return f"anywhere in the topology ({self.why})"
        return f"within {_level_word(levels[len(self.within) - 1])} {self.within[-1]} ({self.why})"


def _level_word(level: str) -> str:
    return level.rsplit("/", 1)[-1]


def label(key: LeafKey) -> str:
    return key if isinstance(key, str) else "/".join(key)


def spread_words(per_leaf: Mapping[LeafKey, int]) -> str:
    return ", ".join(f"{label(k)} ({n} pod{'s' if n != 1 else ''})" for k, n in per_leaf.items())
