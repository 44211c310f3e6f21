"""The shape of Kueue's cohort forest (pkg/cache/hierarchy; v0.19.2 pkg/cache/scheduler/
cohort_snapshot.go): ClusterQueues are leaves, Cohorts inner nodes. A cohort that a
ClusterQueue's `cohortName` or a Cohort's `parentName` names without a Cohort entry exists
implicitly, without quota or parent, as Kueue's hierarchy manager creates it.

A node is (kind, name): a ClusterQueue and a Cohort may share a name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from harness.scenario.model import ClusterQueue, Cohort

CQ, COHORT = "cq", "cohort"
Node = tuple[str, str]
"""(CQ or COHORT, name)."""


@dataclass
class CohortTree:
    """Parents and children of every node; the loader has refused cycles."""

    parent: dict[Node, Node] = field(default_factory=dict)
    children: dict[Node, list[Node]] = field(default_factory=dict)
    cohorts: dict[str, Cohort] = field(default_factory=dict)

    @classmethod
    def of(cls, queues: Iterable[ClusterQueue], cohorts: Iterable[Cohort] = ()) -> CohortTree:
        tree = cls()
        for cohort in cohorts:
            tree.cohorts[cohort.name] = cohort
            tree.children.setdefault((COHORT, cohort.name), [])
            if cohort.parent is not None:
                tree._link((COHORT, cohort.name), cohort.parent)
        for cq in queues:
            if cq.cohort:
                tree._link((CQ, cq.name), cq.cohort)
        return tree

    def _link(self, child: Node, parent_name: str) -> None:
        parent = (COHORT, parent_name)
        self.parent[child] = parent
        self.children.setdefault(parent, []).append(child)
        if parent_name not in self.cohorts:
            self.cohorts[parent_name] = Cohort(parent_name)

    def ancestors(self, node: Node) -> Iterator[Node]:
        """`PathParentToRoot`: the parent first, the root last."""
        current = self.parent.get(node)
        while current is not None:
            yield current
            current = self.parent.get(current)

    def root(self, node: Node) -> Node:
        *_, top = [node, *self.ancestors(node)]
        return top

    def queues_under(self, node: Node) -> list[str]:
        """Every ClusterQueue of the subtree (`SubtreeClusterQueues`), itself if a queue."""
        if node[0] == CQ:
            return [node[1]]
        return [q for child in self.children.get(node, []) for q in self.queues_under(child)]

    def child_cohorts(self, node: Node) -> list[Node]:
        return [c for c in self.children.get(node, []) if c[0] == COHORT]

    def child_queues(self, node: Node) -> list[Node]:
        return [c for c in self.children.get(node, []) if c[0] == CQ]

    def height(self, node: Node) -> int:
        """`getNodeHeight`: 1 for a cohort with children, plus one per level of cohorts
        below; 0 for a cohort without children."""
        best = min(len(self.children.get(node, [])), 1)
        for child in self.child_cohorts(node):
            best = max(best, self.height(child) + 1)
        return best

    def path(self, cq: str) -> str:
        """`buildCQPath`: /root/.../parent/cq, or /cq without a cohort."""
        names = [n for _, n in reversed(list(self.ancestors((CQ, cq))))]
        return "/" + "/".join([*names, cq])
