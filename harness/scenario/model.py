"""The typed scenario model: what a scenario file says, validated and with quantities parsed.

Everything here is immutable data; `harness.scenario.loader` builds it from YAML and the fit model,
the in-process backend and the cluster runner all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from harness.k8s.selector import NAMESPACE_NAME_LABEL, LabelSelector
from harness.kueue.versions import DEFAULT_KUEUE, KueueVersions, VersionSpecError, version_key
from harness.scenario.kueue_config import KueueConfig

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
    """A ResourceFlavor. `topology_name` None: a flavor without TAS (version 2 only; the
    version-1 shorthand always names its one Topology)."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    node_taints: tuple[Taint, ...] = ()
    topology_name: str | None = None


@dataclass(frozen=True)
class Queue:
    """The version-1 `queue` shorthand: listed resources are limited, all others are ample."""

    nominal_quota: Resources = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceQuota:
    """One resource of one flavor in a ClusterQueue (None: no limit of that kind)."""

    name: str
    nominal: Fraction
    borrowing_limit: Fraction | None = None
    lending_limit: Fraction | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True)
class ResourceGroup:
    """Resources assigned together: every flavor lists exactly `covered`, in that order."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
BORROW_WITHIN_COHORT = ("Never", "LowerPriority")
QUEUEING_STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
WHEN_CAN_BORROW = ("MayStopSearch", "TryNextFlavor")
WHEN_CAN_PREEMPT = ("TryNextFlavor", "MayStopSearch")
FUNGIBILITY_PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
"""flavorFungibility.preference (apis/kueue/v1beta2/clusterqueue_types.go)."""
"""Kueue's enums; the first of each is its default (apis/kueue/v1beta2/clusterqueue_types.go)."""


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class FlavorFungibility:
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None
    """BorrowingOverPreemption | PreemptionOverBorrowing; None: Kueue ranks as the first."""


@dataclass(frozen=True)
class AdmissionCheck:
    """A Kueue AdmissionCheck; the harness plays its controller (docs/scenario-format-v2.md,
    "Admission checks"): `active` False is a controller that reports Active=False, which
    makes every ClusterQueue using the check inactive."""

    name: str
    controller_name: str
    parameters: Mapping[str, str] | None = None
    active: bool = True


@dataclass(frozen=True)
class CheckRule:
    """One entry of a ClusterQueue's admissionChecksStrategy: the check, and the flavors it
    runs for (empty: every flavor of the ClusterQueue)."""

    name: str
    on_flavors: tuple[str, ...] = ()


CHECK_STATES = ("Pending", "Ready", "Retry", "Rejected")
"""Kueue's CheckState values (apis/kueue/v1beta2/admissioncheck_types.go)."""


@dataclass(frozen=True)
class CheckChange:
    """A `set-admission-check` step: the check controller sets the state of `check` in the
    workload's status.admissionChecks."""

    workload: str
    check: str
    state: str


@dataclass(frozen=True)
class StopPolicyChange:
    """A `set-stop-policy` step: a user patches a LocalQueue's spec.stopPolicy
    (`namespace` "" is the scenario's own)."""

    local_queue: str
    namespace: str
    stop_policy: str


@dataclass(frozen=True)
class ClusterQueueStopChange:
    """A `set-stop-policy: {clusterQueue, stopPolicy}` step: a user patches a ClusterQueue's
    spec.stopPolicy (docs/scenario-format-v2.md, "A ClusterQueue's stopPolicy in a step")."""

    cluster_queue: str
    stop_policy: str


@dataclass(frozen=True)
class ClusterQueue:
    """A ClusterQueue (each has one LocalQueue of the same name)."""

    name: str
    resource_groups: tuple[ResourceGroup, ...]
    cohort: str | None = None
    queueing_strategy: str = "BestEffortFIFO"
    preemption: Preemption = field(default_factory=Preemption)
    fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    ample_quota: bool = False
    """Resources no group covers get ample quota where the harness adds workloads the file
    does not hold (a fixture's manifests, `up`): harness.scenario.shorthand.covering. Set
    for the ClusterQueue a `queue` shorthand means; never written to Kueue."""
    stop_policy: str = "None"
    """One of STOP_POLICIES: Hold and HoldAndDrain make it inactive (it admits nothing);
    HoldAndDrain also evicts what it admitted (harness/kueue/queue_activity.py)."""
    missing_flavors: tuple[str, ...] = ()
    """Flavors it lists that no ResourceFlavor is named after: Kueue keeps it inactive."""
    fair_weight: Fraction | None = None
    """`fairSharing.weight` (None: not set; Kueue's default weight is 1)."""
    admission_checks: tuple[CheckRule, ...] = ()
    """admissionChecksStrategy (the v1beta1 `admissionChecks` list converted, as Kueue does)."""
    namespace_selector: LabelSelector = field(default_factory=LabelSelector)
    """`namespaceSelector`: absent = `{}` (every namespace: the harness's default, where
    Kueue reads a missing selector as matching none)."""
    admission_mode: str | None = None
    """`admissionScope.admissionMode` (UsageBasedAdmissionFairSharing turns admission fair
    sharing on for it, with kueueConfig.admissionFairSharing)."""

    def group_of(self, resource: str) -> ResourceGroup | None:
        for group in self.resource_groups:
            if resource in group.covered:
                return group
        return None


STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
"""ClusterQueue spec.stopPolicy (apis/kueue/v1beta2/clusterqueue_types.go)."""


@dataclass(frozen=True)
class Cohort:
    """A Kueue Cohort object (kueue.x-k8s.io/v1beta2): a node of a cohort tree with quota of
    its own, shared by its subtree and lent to its parent. A cohort that ClusterQueues or
    Cohorts name but no entry defines exists implicitly, without quota and parent."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: Fraction | None = None
    """`fairSharing.weight` as written (None: absent); only fair sharing reads it."""


@dataclass(frozen=True)
class Namespace:
    """A `namespaces:` entry: a Kubernetes Namespace and its labels (namespaceSelector
    matches them, and the name label the API server adds)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)

    def all_labels(self) -> dict[str, str]:
        return {**self.labels, NAMESPACE_NAME_LABEL: self.name}


@dataclass(frozen=True)
class LocalQueue:
    """A Kueue LocalQueue. `namespace` "" is the scenario's own; `fair_weight` its
    `fairSharing.weight` (None: Kueue's default 1; admission fair sharing divides by it)."""

    name: str
    cluster_queue: str
    namespace: str = ""
    fair_weight: Fraction | None = None
    stop_policy: str = "None"
    """One of STOP_POLICIES: Hold and HoldAndDrain keep its workloads out of the queues
    (harness/kueue/local_queue_stop.py); HoldAndDrain also evicts what it admitted."""


@dataclass(frozen=True)
class PriorityClass:
    """A WorkloadPriorityClass."""

    name: str
    value: int


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
class LeaderWorkerSetGroup:
    """One group of a LeaderWorkerSet: Kueue makes one Workload per group (pod sets
    "leader" and "worker", or "main" without a leader template), index `index` of
    `replicas`, all built from the LeaderWorkerSet `set_name`."""

    set_name: str
    index: int
    replicas: int


@dataclass(frozen=True)
class Workload:
    """`queue`: its ClusterQueue (always filled in by the loader); `priority_class`: None for
    no class (priority 0). `submit_at` / `run_for`: a stream's clock (docs/replay.md): when it
    is submitted, and how long it runs once admitted (None: it never finishes); only `replay`
    reads them, every other engine submits workloads at once in file order."""

    name: str
    pod_sets: tuple[PodSet, ...]
    queue: str = ""
    priority_class: str | None = None
    submit_at: float | None = None
    run_for: float | None = None
    # Set when the workload is one group of a LeaderWorkerSet (harness.scenario.load_lws).
    lws: LeaderWorkerSetGroup | None = None
    local_queue: str = ""
    """The LocalQueue it is submitted to ("": the one named after `queue`)."""
    namespace: str = ""
    """Its namespace ("": the scenario's own)."""
    pods_ready: bool = True
    """False (`podsReady: false`): every pod of it starts Running but not Ready (a readiness
    probe that never passes on its own), so waitForPodsReady times it from its admission;
    a `pods-ready` step reports its running pods Ready (docs/scenario-format-v2.md)."""

    @property
    def queue_name(self) -> str:
        return self.local_queue or self.queue


@dataclass(frozen=True)
class AdmittedPodSet:
    """A pod set of a workload admitted before the scenario starts: its flavor and, for a TAS
    flavor, node -> pods as admitted (None for a flavor without TAS)."""

    pod_set: PodSet
    flavor: str
    placement: Mapping[str, int] | None = None


@dataclass(frozen=True)
class AdmittedWorkload:
    name: str
    queue: str
    pod_sets: tuple[AdmittedPodSet, ...]
    priority_class: str | None = None
    check_states: Mapping[str, str] | None = None
    """Its status.admissionChecks (check -> Pending | Ready) when the entry lists them; None:
    every check its admission needs is Ready (harness.kueue.admission_checks.admitted_states)."""
    local_queue: str = ""
    namespace: str = ""

    @property
    def queue_name(self) -> str:
        return self.local_queue or self.queue

    def as_workload(self) -> Workload:
        """The workload it was submitted as."""
        return Workload(
            name=self.name,
            pod_sets=tuple(p.pod_set for p in self.pod_sets),
            queue=self.queue,
            priority_class=self.priority_class,
            local_queue=self.local_queue,
            namespace=self.namespace,
        )


EVICTION_REASONS = (
    "NodeFailures",
    "PodsReadyTimeout",
    "AdmissionCheck",
    "ClusterQueueStopped",
    "LocalQueueStopped",
    "Deactivated",
)
"""Kueue v0.19.2's reasons of the Evicted condition (apis/kueue/v1beta2/workload_types.go),
less `Preempted`, which `preempted` reports."""


@dataclass(frozen=True)
class Eviction:
    """An eviction other than by preemption: the Evicted condition's reason and message."""

    reason: str
    message: str = ""


Replaced = Mapping[str, Mapping[str, tuple[str, ...]]]
"""Pod set -> failed node -> the nodes that took its pods (Kueue's node replacement)."""


@dataclass(frozen=True)
class Expectation:
    """`unschedulable`: pod set -> admitted pods that never run (None: expect none; only
    checked where the backend watches pods bind). `replaced`, `evicted` and `drift` are
    compared only when given: `replaced` {} and `evicted` False say "none"."""

    admitted: bool
    placement: Mapping[str, Mapping[str, int]] | None = None
    message: str | None = None
    rejected: bool | None = None
    unschedulable: Mapping[str, int] | None = None
    flavors: Mapping[str, str] | None = None
    preempted: bool | None = None
    replaced: Replaced | None = None
    evicted: Eviction | bool | None = None
    drift: Mapping[str, Mapping[str, int]] | None = None
    quota_reserved: bool | None = None
    """Quota (and topology) reserved, waiting for admission checks; None: not said (then a
    pending expectation means no reservation)."""

    def fault_keys(self) -> tuple[str, ...]:
        """The keys about faults under running workloads this expectation uses."""
        keys = ("replaced", "evicted", "drift")
        return tuple(k for k in keys if getattr(self, k) is not None)


@dataclass(frozen=True)
class TaintChange:
    """A taint added to (`taint-node`) or removed from (`untaint-node`) a node; a removal
    matches key and effect."""

    node: str
    taint: Taint


@dataclass(frozen=True)
class PodFault:
    """The pods a `terminate-pods` or `fail-pods` step acts on: a workload's (those bound to
    `node`, or all; at most `count`), or a usage entry's."""

    workload: str | None = None
    usage: str | None = None
    node: str | None = None
    count: int | None = None


@dataclass(frozen=True)
class ByVersion:
    """`expect` and its `expectByVersion` entries as written: what the expectations are on
    each Kueue version. An entry that includes the version replaces, workload by workload,
    the expectations of `base`; entries never overlap (the loader refuses it)."""

    base: Mapping[str, Expectation] | None
    entries: tuple[tuple[KueueVersions, Mapping[str, Expectation]], ...]

    def on(self, version: str | None) -> Mapping[str, Expectation] | None:
        """The expectations on `version` (None: the default, v0.19.2)."""
        for spec, entry in self.entries:
            try:
                if spec.includes(version or DEFAULT_KUEUE):
                    return {**(self.base or {}), **entry}
            except VersionSpecError:  # not a version at all: no entry names it
                break
        return self.base


@dataclass(frozen=True)
class Step:
    """One change to the cluster after the workloads settled (an extension of the contract).

    `action` is one of STEP_ACTIONS; `target` is a name, a Node, a Usage, a Workload, a
    TaintChange or a PodFault.
    """

    action: str
    target: object
    expect: Mapping[str, Expectation] | None = None
    by_version: ByVersion | None = None
    """Where the step has `expectByVersion`: `expect` on each version."""
    at: float | None = None
    """In a stream scenario: the second of the stream's clock it happens at (docs/replay.md,
    "Node faults in a stream"); None in a one-moment scenario, where steps follow each other."""


FAULT_ACTIONS = (
    "node-not-ready",
    "node-ready",
    "taint-node",
    "untaint-node",
    "terminate-pods",
    "fail-pods",
)
"""Steps that act on running workloads the way a failing node or kubelet would
(docs/scenario-extensions.md, "Faults under running workloads")."""

READINESS_ACTIONS = ("pods-not-ready", "pods-ready")
"""Steps that act as the kubelet reporting a workload's running pods not Ready (a readiness
probe failing) and Ready again; their target is the workload's name (docs/scenario-format-v2.md,
"waitForPodsReady")."""

STEP_ACTIONS = (
    "delete-workload",
    "delete-usage",
    "cordon",
    "uncordon",
    "add-node",
    "delete-node",
    "add-usage",
    "submit",
    *FAULT_ACTIONS,
    "upgrade-kueue",
    "set-admission-check",
    *READINESS_ACTIONS,
    "set-stop-policy",
)
"""`upgrade-kueue: VERSION` replaces the running Kueue by a newer one, as a platform team
upgrades (docs/scenario-extensions.md, "Upgrading Kueue in a scenario"); its target is the
version. `set-admission-check: {workload, check, state}` sets a check's state as its
controller would (docs/scenario-format-v2.md, "Admission checks"); its target is a
CheckChange. `set-stop-policy: {localQueue, namespace, stopPolicy}` patches a LocalQueue's
stopPolicy (docs/scenario-format-v2.md, "A LocalQueue's stopPolicy"); its target is a
StopPolicyChange, or with `clusterQueue` instead of `localQueue` a ClusterQueueStopChange."""


@dataclass(frozen=True)
class Scenario:
    """The world as version-2 lists; a version-1 file arrives desugared
    (harness/scenario/shorthand.py), and nothing past the loader tells them apart."""

    name: str
    topologies: tuple[Topology, ...]
    resource_flavors: tuple[Flavor, ...]
    cluster_queues: tuple[ClusterQueue, ...]
    nodes: tuple[Node, ...]
    workloads: tuple[Workload, ...]
    priority_classes: tuple[PriorityClass, ...] = ()
    admitted: tuple[AdmittedWorkload, ...] = ()
    cohorts: tuple[Cohort, ...] = ()
    """Top-level `cohorts:` (Kueue Cohort objects), in file order."""
    admission_checks: tuple[AdmissionCheck, ...] = ()
    local_queues: tuple[LocalQueue, ...] = ()
    """`localQueues:` (empty: each ClusterQueue has one LocalQueue of its own name)."""
    namespaces: tuple[Namespace, ...] = ()
    """`namespaces:` besides the scenario's own."""
    usage: tuple[Usage, ...] = ()
    description: str = ""
    source: str = ""
    kueue: str | None = None
    """The Kueue version it is checked as and runs on (None: the default, v0.19.2)."""
    kueue_versions: KueueVersions | None = None
    """The versions the file's `kueue:` says its expectations hold for (None: not said)."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    kueue_config: KueueConfig = field(default_factory=KueueConfig)
    """`kueueConfig`: the sections of Kueue's Configuration the file sets."""
    expect: Mapping[str, Expectation] | None = None
    steps: tuple[Step, ...] = ()
    path: str = "<scenario>"
    by_version: ByVersion | None = None
    """Where the file has `expectByVersion`: `expect` on each version."""
    undetermined: tuple[tuple[KueueVersions, str], ...] = ()
    """`undeterminedOn`: versions on which Kueue gives no single answer, with the reason."""
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """`FILE: key.path: problem` for states Kueue accepts that a hand-written file most likely
    did not mean (harness.scenario.notices); none for a snapshot."""
    expect_for: str | None = field(default="", repr=False, compare=False)
    """The version `expect` and the steps' expect were derived for ("": not yet)."""

    def __post_init__(self) -> None:
        """Keep `expect` and each step's the expectations on `kueue`: replacing `kueue`
        (--kueue-version) derives them again from expectByVersion. Replacing `expect` alone
        leaves it as given."""
        if self.expect_for == self.kueue:
            return
        if self.by_version is not None:
            object.__setattr__(self, "expect", self.by_version.on(self.kueue))
        if any(step.by_version is not None for step in self.steps):
            steps = tuple(
                replace(step, expect=step.by_version.on(self.kueue)) if step.by_version else step
                for step in self.steps
            )
            object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "expect_for", self.kueue)

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def undetermined_on(self, version: str | None = None) -> str | None:
        """Why Kueue `version` (default: the one the scenario is checked as) gives no single
        answer for this scenario, as the file's `undeterminedOn` says; None when it does."""
        running = version or self.kueue or DEFAULT_KUEUE
        for spec, reason in self.undetermined:
            if spec.includes(running):
                return f"Kueue {running} gives no single answer here: {reason} (undeterminedOn)"
        return None

    def no_upgrade(self) -> str | None:
        """Why an `upgrade-kueue` step is no upgrade when the scenario starts on the version it
        is checked as (--kueue-version at or past the step's version), or None."""
        running = self.kueue or DEFAULT_KUEUE
        for step in self.steps:
            if step.action != "upgrade-kueue":
                continue
            if version_key(str(step.target)) <= version_key(running):
                return (
                    f"steps: upgrade-kueue: {step.target} is not newer than {running}, the "
                    "version the scenario starts on here: there is no upgrade to check"
                )
            running = str(step.target)
        return None

    def fault_features(self) -> tuple[str, ...]:
        """The fault steps and fault expectations (replaced, evicted, drift) this scenario
        uses, for engines that do not model Kueue's node replacement yet to refuse by name."""
        actions = {s.action for s in self.steps if s.action in FAULT_ACTIONS}
        keys: set[str] = set()
        for expect in [self.expect or {}, *(s.expect or {} for s in self.steps)]:
            for want in expect.values():
                keys.update(want.fault_keys())
        found = [f"steps {', '.join(a for a in FAULT_ACTIONS if a in actions)}"] if actions else []
        if keys:
            found.append(f"expectations {', '.join(sorted(keys))}")
        return tuple(found)

    def priority(self, workload: Workload | AdmittedWorkload) -> int:
        """Its WorkloadPriorityClass value; 0 without a class."""
        for pc in self.priority_classes:
            if pc.name == workload.priority_class:
                return pc.value
        return 0

    def resource_flavor(self, name: str) -> Flavor:
        for flavor in self.resource_flavors:
            if flavor.name == name:
                return flavor
        raise KeyError(name)

    def topology_of(self, flavor: Flavor) -> Topology | None:
        for topology in self.topologies:
            if topology.name == flavor.topology_name:
                return topology
        return None

    def queues(self) -> tuple[LocalQueue, ...]:
        """Every LocalQueue: `localQueues`, else one per ClusterQueue of the same name."""
        if self.local_queues:
            return self.local_queues
        return tuple(LocalQueue(cq.name, cq.name) for cq in self.cluster_queues)

    def local_queue_of(self, w: Workload | AdmittedWorkload) -> LocalQueue:
        for lq in self.queues():
            if lq.name == w.queue_name and lq.namespace == w.namespace:
                return lq
        raise KeyError(w.queue_name)

    def namespace_labels(self, name: str) -> dict[str, str]:
        """A namespace's labels. The scenario's own ("") has none but its name label, whose
        value no scenario names (each engine gives it a name of its own)."""
        for ns in self.namespaces:
            if ns.name == name:
                return ns.all_labels()
        return {NAMESPACE_NAME_LABEL: ""}

    def cluster_queue(self, name: str) -> ClusterQueue:
        for cq in self.cluster_queues:
            if cq.name == name:
                return cq
        raise KeyError(name)

    def flavors_of(self, node: Node) -> tuple[Flavor, ...]:
        """Every flavor whose nodeLabels the node carries."""
        return tuple(
            f
            for f in self.resource_flavors
            if all(node.labels.get(k) == v for k, v in f.node_labels.items())
        )
