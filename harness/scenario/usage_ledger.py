"""What `usage` pods and admitted workloads take from each node, against its allocatable.

The kubelet does not start a pod whose requests, with those of the pods already on the node,
exceed the node's allocatable (OutOfcpu, OutOfpods, ...; pkg/kubelet/lifecycle/predicate.go),
so an `add-usage` step beyond it is refused. The state the file starts in may hold more than
a node's allocatable, though: a GPU marked unhealthy by the device plugin lowers allocatable
under pods already running, and Kueue counts the node's free capacity as negative (v0.17) or
as none (clamped from v0.18; fit/versions.py `count_clamped_at_zero`). Such a start loads,
with a warning for a hand-written file (harness.scenario.notices). Every usage pod also takes
one of the node's `pods`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from harness.k8s.quantity import format_kueue_units, kueue_units
from harness.scenario.keypath import KeyPath, yaml_text
from harness.scenario.model import Node, Usage
from harness.scenario.notices import Notices

PODS = "pods"
Amount = Fraction | int
"""An exact quantity; whole ones kept as int (see _whole)."""


class UsageLedger:
    """Per node: its allocatable and the usage entries on it, in the order they arrive."""

    def __init__(self, nodes: Iterable[Node], notices: Notices | None = None) -> None:
        self.notices = notices
        """Where a starting state beyond allocatable is noted; None: it is refused."""
        self.allocatable = {n.name: n.allocatable for n in nodes}
        self.limits = {name: _whole_numbers(a) for name, a in self.allocatable.items()}
        self.entries: dict[str, list[Usage]] = {name: [] for name in self.allocatable}
        self.totals: dict[str, dict[str, Amount]] = {name: {} for name in self.allocatable}
        """Per node, what its entries take (kept as they come: a 5,000-node snapshot has
        20,000 entries, and summing a node's entries again at every add was quadratic)."""
        self.deleted: set[str] = set()

    def add(self, usage: Usage, at: KeyPath, starting: bool = False) -> None:
        """Record `usage` (read at `at`), or fail at the first resource it overcommits
        (`starting`, the file's `usage`: note it, see the module's docstring)."""
        if usage.node in self.deleted:
            at.child("node", usage.node).fail(
                f"node {yaml_text(usage.node)} was deleted by an earlier step"
            )
        sums = self._sums(usage)
        resource = self._overcommitted(usage.node, sums)
        if resource is not None:
            where = (
                at.child("count", None)
                if resource == PODS
                else at.child("requests", None).child(resource, None)
            )
            self._refuse_or_note(where, self._problem("the usage", usage, resource), starting)
        self._record(usage, sums)

    def add_admitted(self, pods: Usage, at: KeyPath) -> None:
        """Record the pods of an admitted workload on one node; more than the node holds
        with what is already there is a starting state (noted at `at`, its placement entry)."""
        sums = self._sums(pods)
        resource = self._overcommitted(pods.node, sums)
        if resource is not None:
            self._refuse_or_note(at, self._problem("what is placed", pods, resource), True)
        self._record(pods, sums)

    def _refuse_or_note(self, at: KeyPath, problem: str, starting: bool) -> None:
        if not starting or self.notices is None:
            at.fail(problem)
        self.notices.add(at, f"{problem} (real when a GPU is marked unhealthy under running pods)")

    def _record(self, usage: Usage, sums: dict[str, Amount] | None = None) -> None:
        self.entries[usage.node].append(usage)
        self.totals[usage.node].update(self._sums(usage) if sums is None else sums)

    def _overcommitted(self, node: str, sums: dict[str, Amount]) -> str | None:
        limits = self.limits[node]
        for resource, total in sums.items():
            if total > limits.get(resource, 0):
                return resource
        return None

    def _sums(self, usage: Usage) -> dict[str, Amount]:
        """What the node's entries take with `usage` added, for the resources it requests
        (and `pods`, one a pod, whatever `requests` says), in that order."""
        taken = self.totals[usage.node]
        count = usage.count
        out: dict[str, Amount] = {}
        for resource, per_pod in usage.requests.items():
            amount = (
                count if resource == PODS else _whole(per_pod if count == 1 else per_pod * count)
            )
            out[resource] = taken.get(resource, 0) + amount
        if PODS not in out:
            out[PODS] = taken.get(PODS, 0) + count
        return out

    def _problem(self, what: str, usage: Usage, resource: str) -> str:
        per_pod = usage.requests.get(resource, Fraction(1) if resource == PODS else Fraction(0))
        total = self._taken(usage.node).get(resource, Fraction(0)) + per_pod * usage.count
        limit = self.allocatable[usage.node].get(resource, Fraction(0))
        return (
            f"{what} on node {yaml_text(usage.node)} adds up to {_text(resource, total)} "
            f"{resource}, more than its allocatable {_text(resource, limit)}"
        )

    def add_node(self, node: Node) -> None:
        self.allocatable[node.name] = node.allocatable
        self.limits[node.name] = _whole_numbers(node.allocatable)
        self.entries[node.name] = []
        self.totals[node.name] = {}

    def delete_node(self, name: str) -> None:
        """The node and the usage pods bound to it go (as the runner and the fit model do)."""
        self.entries[name] = []
        self.totals[name] = {}
        self.deleted.add(name)

    def delete_usage(self, name: str) -> None:
        for node, entries in self.entries.items():
            if any(u.name == name for u in entries):
                kept = [u for u in entries if u.name != name]
                self.entries[node], self.totals[node] = [], {}
                for usage in kept:
                    self._record(usage)

    def _taken(self, node: str) -> dict[str, Amount]:
        return self.totals[node]


def _whole(quantity: Fraction) -> Amount:
    """Whole amounts as int: int arithmetic is ~20x faster than Fraction's, and nearly
    every quantity a snapshot holds is whole (a 5,000-node one sums 60,000)."""
    return quantity.numerator if quantity.denominator == 1 else quantity


def _whole_numbers(quantities: Mapping[str, Fraction]) -> dict[str, Amount]:
    return {resource: _whole(q) for resource, q in quantities.items()}


def _text(resource: str, quantity: Amount) -> str:
    return format_kueue_units(resource, kueue_units(resource, Fraction(quantity)))
