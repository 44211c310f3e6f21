"""`--explain`: free capacity per domain at each level and why candidates were rejected.

Reads the tree the model just evaluated (counts right after phase 1, before descent);
it adds nothing to the decision itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.fit.tree import Domain, Tree
from harness.quantity import format_kueue_units


@dataclass
class Explainer:
    lines: list[str] = field(default_factory=list)

    def trace(self, label: str, tree: Tree | None, verdict: str) -> None:
        if tree is None:
            self.lines.append(f"== {label}: {verdict}")
            return
        self.lines.append(f"-- {label}: {verdict} (pods and slices that fit, per domain)")
        for name, reason in sorted(tree.dropped.items()):
            self.lines.append(f"   node {name}: not in the topology: {reason}")
        levels = tree.topology.levels
        for depth, per_level in enumerate(tree.per_level):
            self.lines.append(f"   level {levels[depth]}:")
            for values, domain in sorted(per_level.items()):
                self.lines.append(f"     {'/'.join(values)}: {_describe(tree, domain)}")

    def render(self) -> str:
        return "\n".join(self.lines)


def _describe(tree: Tree, domain: Domain) -> str:
    text = f"{domain.pods} pod(s), {domain.slices} slice(s)"
    if domain.leaders:
        text += f", leader fits ({domain.pods_wl} pod(s) beside it)"
    leaf = domain.leaf
    if leaf is None:
        return text
    free = ", ".join(f"{r}={format_kueue_units(r, v)}" for r, v in sorted(leaf.free().items()))
    text += f"; free {free}"
    if leaf.key in tree.excluded:
        text += f"; REJECTED: {tree.excluded[leaf.key]}"
    return text
