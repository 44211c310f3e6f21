"""What the fault rules (harness.fit.faults) read and change in the fit model's state; the
engine (harness.fit.engine) is one."""

from __future__ import annotations

from typing import Protocol

from harness.fit.binding import Binder
from harness.fit.ties import TieBreak
from harness.fit.tree import LeafKey, Tree
from harness.scenario.model import Flavor, Node, Scenario, Topology, Usage, Workload

PerLeaf = dict[str, dict[LeafKey, int]]
"""A topology assignment: pod set -> leaf -> pods."""


class World(Protocol):
    """What the fault rules read and change in the fit model's state."""

    scenario: Scenario
    nodes: dict[str, Node]
    usage: list[Usage]
    binder: Binder
    ties: TieBreak

    def workload(self, name: str) -> Workload: ...

    def assignments(self) -> dict[str, PerLeaf]:
        """Every admitted workload's topology assignment, in admission order."""
        ...

    def pod_set_flavors(self, name: str) -> dict[str, Flavor]:
        """The workload's pod sets placed by TAS -> the TAS flavor each is placed on."""
        ...

    def tree(self, flavor: str) -> Tree:
        """The flavor's TAS snapshot now: every admitted workload's usage on the nodes."""
        ...

    def reassign(self, name: str, per_leaf: PerLeaf) -> None:
        """The second pass repaired the assignment: it holds these leaves from now on."""
        ...

    def evict(self, name: str) -> None: ...

    def has_pods(self, name: str) -> bool:
        """Its Job runs: admitted, not only holding quota while its admission checks wait."""
        ...

    def second_pass_held(self, name: str) -> str | None:
        """Why Kueue's scheduler never gets to the workload's second pass now (None: it does)."""
        ...


def on_nodes(world: World, name: str) -> dict[str, tuple[Flavor, Topology]]:
    """The workload's pod sets whose assignment names nodes (their flavor's topology's lowest
    level is the hostname) -> that flavor and topology: the ones Kueue's node controller
    watches."""
    out = {}
    for ps, flavor in world.pod_set_flavors(name).items():
        topology = world.scenario.topology_of(flavor)
        if topology is not None and topology.lowest_is_hostname:
            out[ps] = (flavor, topology)
    return out
