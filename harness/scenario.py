"""The typed scenario model: what a scenario file says, validated and with quantities parsed.

Everything here is immutable data; `harness.loader` builds it from YAML and the fit model,
the in-process backend and the cluster runner all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

HOSTNAME = "kubernetes.io/hostname"
MODES = ("required", "preferred", "unconstrained")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

Resources = Mapping[str, Fraction]


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def render(self) -> str:
        """Kubernetes' Taint.ToString(), the form Kueue quotes in exclusion stats."""
        if not self.effect:
            return f"{self.key}={self.value}:" if self.value else self.key
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' Toleration.ToleratesTaint for the Equal and Exists operators."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True)
class Topology:
    name: str
    levels: tuple[str, ...]

    @property
    def lowest_is_hostname(self) -> bool:
        return self.levels[-1] == HOSTNAME


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class Queue:
    """ClusterQueue quota: listed resources are limited, all others are ample."""

    nominal_quota: Resources = field(default_factory=dict)


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False


@dataclass(frozen=True)
class Usage:
    """`count` pods bound to `node` outside Kueue (non-TAS usage)."""

    node: str
    requests: Resources
    count: int = 1
    name: str | None = None


@dataclass(frozen=True)
class TopologyRequest:
    mode: str | None = None
    level: str | None = None
    slice_level: str | None = None
    slice_size: int | None = None
    group: str | None = None


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    requests: Resources
    topology: TopologyRequest | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class Workload:
    name: str
    pod_sets: tuple[PodSet, ...]


@dataclass(frozen=True)
class Expectation:
    """`unschedulable`: pod set -> admitted pods that never run (None: expect none; only
    checked where the backend watches pods bind)."""

    admitted: bool
    placement: Mapping[str, Mapping[str, int]] | None = None
    message: str | None = None
    rejected: bool | None = None
    unschedulable: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Step:
    """One change to the cluster after the workloads settled (an extension of the contract).

    `action` is one of STEP_ACTIONS; `target` is a name, a Node, a Usage or a Workload.
    """

    action: str
    target: object
    expect: Mapping[str, Expectation] | None = None


STEP_ACTIONS = (
    "delete-workload",
    "delete-usage",
    "cordon",
    "uncordon",
    "add-node",
    "delete-node",
    "add-usage",
    "submit",
)


@dataclass(frozen=True)
class Scenario:
    name: str
    topology: Topology
    flavor: Flavor
    queue: Queue
    nodes: tuple[Node, ...]
    workloads: tuple[Workload, ...]
    usage: tuple[Usage, ...] = ()
    description: str = ""
    source: str = ""
    kueue: str | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    expect: Mapping[str, Expectation] | None = None
    steps: tuple[Step, ...] = ()
    path: str = "<scenario>"

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)
