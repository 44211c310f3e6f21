"""`--explain`: free capacity per domain at each level and why a pod set did not fit.

Reads the tree the model just evaluated; it adds nothing to the decision itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.fit.tree import Tree
from harness.quantity import format_kueue_units


@dataclass
class Explainer:
    lines: list[str] = field(default_factory=list)

    def trace(self, workload: str, tree: Tree | None, verdict: str) -> None:
        self.lines.append(f"== {workload}: {verdict}")
        if tree is None:
            return
        levels = tree.topology.levels
        for depth, per_level in enumerate(tree.per_level):
            self.lines.append(f"  level {levels[depth]}:")
            for values, domain in sorted(per_level.items()):
                name = "/".join(values)
                counts = f"fits {domain.pods} pod(s), {domain.slices} slice(s)"
                if domain.leaders:
                    counts += f", leader ok ({domain.pods_wl} pod(s) beside it)"
                detail = ""
                if domain.leaf is not None:
                    free = domain.leaf.free()
                    detail = "; free " + ", ".join(
                        f"{r}={format_kueue_units(r, v)}" for r, v in sorted(free.items())
                    )
                self.lines.append(f"    {name}: {counts}{detail}")

    def render(self) -> str:
        return "\n".join(self.lines)
