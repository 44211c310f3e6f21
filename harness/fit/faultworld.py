"""What the fault rules (harness.fit.faults) read and change in the fit model's state; the
engine (harness.fit.engine) is one."""

from __future__ import annotations

from typing import Protocol

from harness.fit.binding import Binder
from harness.fit.tree import LeafKey, Tree
from harness.scenario import Flavor, Node, Scenario, Topology, Usage, Workload

PerLeaf = dict[str, dict[LeafKey, int]]
"""A topology assignment: pod set -> leaf -> pods."""


class World(Protocol):
    """What the fault rules read and change in the fit model's state."""

    scenario: Scenario
    nodes: dict[str, Node]
    usage: list[Usage]
    binder: Binder

    def workload(self, name: str) -> Workload: ...

    def assignments(self) -> dict[str, PerLeaf]:
        """Every admitted workload's topology assignment, in admission order."""
        ...

    def tas_flavor(self, name: str) -> Flavor | None:
        """The one TAS flavor the workload's pod sets are placed on (None: no TAS)."""
        ...

    def tree(self, flavor: str) -> Tree:
        """The flavor's TAS snapshot now: every admitted workload's usage on the nodes."""
        ...

    def reassign(self, name: str, per_leaf: PerLeaf) -> None:
        """The second pass repaired the assignment: it holds these leaves from now on."""
        ...

    def evict(self, name: str) -> None: ...


def tas_topology(world: World, name: str) -> Topology | None:
    flavor = world.tas_flavor(name)
    return world.scenario.topology_of(flavor) if flavor is not None else None
