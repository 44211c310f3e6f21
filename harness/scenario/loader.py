"""YAML scenario file -> validated `Scenario`, or one `ScenarioError` naming file, key and problem.

The contract is shared/scenario-format.md (version 1); `steps`, `usage[].name`,
`nodeGroups` and top-level `x-` keys are our documented extensions
(docs/scenario-extensions.md). Other unknown keys are errors, never ignored. What Kubernetes
or Kueue would refuse is refused here too (harness/k8s/rules.py, the Topology limits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import ScenarioError, did_you_mean
from harness.gcpause import without_gc_pauses
from harness.k8s.quantity import QuantityError, parse_quantity
from harness.k8s.rules import (
    container_resource_problem,
    hugepages_problem,
    is_dns_label,
    is_dns_subdomain,
    is_qualified_name,
    quantity_problem,
    requests_problem,
)
from harness.kueue.gates import KUEUE_V0_19_GATES, unknown_gate
from harness.kueue.versions import DEFAULT_KUEUE, KueueVersions
from harness.scenario import (
    ample_quota,
    load_admitted,
    load_checks,
    load_cohorts,
    load_faults,
    load_kueue_config,
    load_local_queues,
    load_lws,
    load_queues,
    load_versions,
    node_groups,
    shorthand,
)
from harness.scenario.keypath import KeyPath as KeyPath
from harness.scenario.keypath import kind, yaml_text
from harness.scenario.kueue_config import KueueConfig
from harness.scenario.model import (
    FAULT_ACTIONS,
    HOSTNAME,
    MODES,
    STEP_ACTIONS,
    TAINT_EFFECTS,
    Expectation,
    Flavor,
    Node,
    PodSet,
    PriorityClass,
    Queue,
    Scenario,
    Step,
    Taint,
    Toleration,
    Topology,
    TopologyRequest,
    Usage,
    Workload,
)
from harness.scenario.notices import Notices, for_file
from harness.scenario.strict_yaml import parse_yaml as parse_yaml
from harness.scenario.usage_ledger import UsageLedger

T = TypeVar("T")
_At = KeyPath
MAX_LEVELS = 16
"""Kueue's Topology CRD: `levels` has at most 16 items (apis/kueue/v1beta2/topology_types.go)."""


def _labels(at: _At) -> dict[str, str]:
    """Node labels, node selectors, flavor nodeLabels (null: none)."""
    return {} if at.value is None else at.labels()


_CHECKED: dict[tuple[object, ...], dict[str, Fraction]] = {}
"""`_resources` answers by (container, kubernetes, each key, value and value's type): a
5,000-node snapshot repeats a few request and allocatable maps 25,000 times. Bounded."""


def _resources(at: _At, container: bool = False, kubernetes: bool = True) -> dict[str, Fraction]:
    """Resource name -> quantity. `kubernetes`: the API server's rules for node allocatable
    and pod requests (whole extended resources); `container`: also what a container may
    request (so pod sets and usage pods)."""
    key: tuple[object, ...] | None = None
    if isinstance(at.value, dict):
        key = (container, kubernetes, *((k, type(v), v) for k, v in at.value.items()))
        try:
            known = _CHECKED.get(key)
        except TypeError:  # an unhashable value: checked (and refused) below
            known = key = None
        if known is not None:
            return dict(known)
    out = _checked_resources(at, container, kubernetes)
    if key is not None:
        if len(_CHECKED) >= 4096:
            _CHECKED.clear()
        _CHECKED[key] = dict(out)
    return out


def _checked_resources(at: _At, container: bool, kubernetes: bool) -> dict[str, Fraction]:
    if not isinstance(at.value, dict):
        at.fail(f"must be a mapping of resource name to quantity, got {kind(at.value)}")
    out: dict[str, Fraction] = {}
    for key, value in at.value.items():
        sub = at.child(str(key), value)
        if not isinstance(key, str) or not key:
            sub.fail("resource names must be non-empty strings")
        problem = container_resource_problem(key) if container else None
        if problem:
            sub.fail(problem)
        try:
            quantity = parse_quantity(value)
        except QuantityError as err:
            sub.fail(str(err))
        if quantity < 0:
            sub.fail(f"must not be negative, got {kind(value)}")
        problem = quantity_problem(key, quantity) if kubernetes else None
        if problem:
            sub.fail(f"{problem}, got {kind(value)}")
        problem = hugepages_problem(key, quantity, str(value)) if container else None
        if problem:
            sub.fail(problem)
        out[key] = quantity
    problem = requests_problem(out) if container else None
    if problem:
        at.fail(problem)
    return out


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ScenarioError(file, "", f"cannot read: {err}") from None
    return scenario_from_data(parse_yaml(text, file), file)


TOP_KEYS = (
    "name",
    "description",
    "source",
    "kueue",
    "featureGates",
    "kueueConfig",
    "topology",
    "flavor",
    "queue",
    "topologies",
    "resourceFlavors",
    "clusterQueues",
    "workloadPriorityClasses",
    "cohorts",
    "namespaces",
    "localQueues",
    "admissionChecks",
    "admitted",
    "nodes",
    "nodeGroups",
    "usage",
    "workloads",
    "expect",
    "expectByVersion",
    "undeterminedOn",
    "steps",
)


@without_gc_pauses
def scenario_from_data(data: Any, file: str = "<scenario>") -> Scenario:
    """Validate already-parsed YAML/JSON data against the contract."""
    root = _At(file, "", _without_scratch(data))
    load_queues.refuse_not_in_v2(root, load_queues.NOT_IN_V2)
    top = root.mapping(TOP_KEYS, ("name",))  # no `workloads`: none queued (a state to bring up)
    if "nodes" not in top and "nodeGroups" not in top:
        root.fail("missing required key 'nodes' (or 'nodeGroups')")
    world = _world(root, top)
    # Pod sets and nodes are checked against every level any Topology has.
    topology = Topology(name="", levels=world.levels)
    nodes = _nodes(top.get("nodes"), top.get("nodeGroups"), topology)
    node_names = {n.name for n in nodes}
    ledger = UsageLedger(nodes, world.notices)
    usage = tuple(_usage(u, node_names) for u in top["usage"].items()) if "usage" in top else ()
    _unique(list(usage), top.get("usage"), "usage")
    for entry, entry_at in zip(usage, top["usage"].items() if usage else [], strict=True):
        ledger.add(entry, entry_at, starting=True)
    levels = topology.levels
    admitted = (
        load_admitted.admitted(
            top["admitted"],
            world,
            nodes,
            ledger,
            lambda at: _workload(_without_pods_ready(at, "admitted entries"), levels, world),
        )
        if "admitted" in top
        else ()
    )
    held = _unique(
        [
            Workload(
                a.name,
                tuple(p.pod_set for p in a.pod_sets),
                a.queue,
                local_queue=a.local_queue,
                namespace=a.namespace,
            )
            for a in admitted
        ],
        top.get("admitted"),
        "workload",
    )
    listed = top.get("workloads") or _At(file, "workloads", [])
    workloads = _unique(
        [
            group
            for w in listed.items()
            for group in load_lws.groups(w, lambda at: _workload(at, levels, world))
        ],
        listed,
        "workload",
    )
    for index, w in enumerate(workloads):
        if any(h.name == w.name for h in held):
            listed.child(index, None).child("name", None).fail(
                f"{yaml_text(w.name)} is also the name of an admitted workload"
            )
    lowest = world.lowest
    runs_on, declared = load_versions.kueue(top["kueue"]) if "kueue" in top else (None, None)
    steps = (
        _steps(
            top["steps"],
            topology,
            ledger,
            usage,
            [*held, *workloads],
            _Domains(lowest, nodes),
            world,
            load_faults.FaultState(nodes, [*held, *workloads], usage, _taint),
            declared,
            runs_on,
        )
        if "steps" in top
        else ()
    )
    known = {w.name: w for w in [*held, *workloads]}
    for step in steps:
        if step.action == "submit" and isinstance(step.target, Workload):
            known[step.target.name] = step.target
    domains = _Domains(lowest, nodes)

    def read_expect(at: _At) -> dict[str, Expectation]:
        return _expectations(at, known, domains, world)

    expect = read_expect(top["expect"]) if "expect" in top else None
    by_version = (
        load_versions.by_version(top["expectByVersion"], expect, declared, read_expect)
        if "expectByVersion" in top
        else None
    )
    if world.shorthand is not None:
        topologies, flavors, cluster_queues = shorthand.world(
            world.topologies[0], world.flavors[0], world.shorthand, known.values()
        )
        nodes = list(shorthand.labelled(world.flavors[0], nodes))
        steps = tuple(
            replace(s, target=shorthand.labelled(world.flavors[0], [s.target])[0])
            if isinstance(s.target, Node)
            else s
            for s in steps
        )
    else:
        topologies, flavors, cluster_queues = world.topologies, world.flavors, world.queues
    gates = _gates(top["featureGates"]) if "featureGates" in top else {}
    return Scenario(
        name=top["name"].string(),
        description=_text(top.get("description")),
        source=_text(top.get("source")),
        kueue=runs_on,
        kueue_versions=declared,
        feature_gates=gates,
        kueue_config=(
            load_kueue_config.kueue_config(
                top["kueueConfig"],
                load_kueue_config.quota_check_gate(
                    [runs_on or DEFAULT_KUEUE]
                    + [str(s.target) for s in steps if s.action == "upgrade-kueue"],
                    gates,
                ),
            )
            if "kueueConfig" in top
            else KueueConfig()
        ),
        topologies=topologies,
        resource_flavors=flavors,
        cluster_queues=cluster_queues,
        priority_classes=world.priority_classes,
        cohorts=world.cohorts,
        local_queues=world.local_queues,
        namespaces=world.namespaces,
        admission_checks=(
            load_checks.admission_checks(top["admissionChecks"]) if "admissionChecks" in top else ()
        ),
        admitted=admitted,
        nodes=tuple(nodes),
        usage=usage,
        workloads=tuple(workloads),
        expect=expect,
        steps=steps,
        warnings=for_file(data, world.notices),
        path=file,
        by_version=by_version,
        undetermined=(
            load_versions.undetermined(top["undeterminedOn"], declared, runs_on, by_version)
            if "undeterminedOn" in top
            else ()
        ),
    )


SHORTHAND_KEYS = ("topology", "flavor", "queue")
WORLD_KEYS = (
    "topologies",
    "resourceFlavors",
    "clusterQueues",
    "workloadPriorityClasses",
    "cohorts",
    "namespaces",
    "localQueues",
)


def _world(root: _At, top: dict[str, _At]) -> load_queues.World:
    """Topologies, flavors, ClusterQueues and priority classes: from the version-1 shorthand
    (the ClusterQueue is made once every workload is known) or from the version-2 lists."""
    v1 = [k for k in SHORTHAND_KEYS if k in top]
    v2 = [k for k in WORLD_KEYS if k in top]
    if v1 and v2:
        top[v2[0]].fail(
            f"the version-1 shorthand ({', '.join(v1)}) cannot be mixed with version-2 lists"
            f" ({', '.join(v2)})"
        )
    if not v2:
        if "topology" not in top:
            root.fail("missing required key 'topology' (or version 2's 'clusterQueues')")
        topology = _topology(top["topology"])
        return load_queues.World(
            topologies=(topology,),
            flavors=(_flavor(top.get("flavor"), topology),),
            queues=(),
            priority_classes=(),
            shorthand=_queue(top.get("queue")),
        )
    for key in ("resourceFlavors", "clusterQueues"):
        if key not in top:
            root.fail(f"missing required key {yaml_text(key)} (a version-2 file lists them)")
    topology_items = top["topologies"].items() if "topologies" in top else []
    topologies = _unique([_topology(t) for t in topology_items], top.get("topologies"), "Topology")
    flavor_items = top["resourceFlavors"].items()
    flavors = _unique(
        [_resource_flavor(f) for f in flavor_items], top["resourceFlavors"], "ResourceFlavor"
    )
    load_queues.flavor_topologies(flavor_items, flavors, {t.name for t in topologies})
    classes: tuple[PriorityClass, ...] = ()
    if "workloadPriorityClasses" in top:
        classes = load_queues.priority_classes(top["workloadPriorityClasses"])
    notices = Notices()
    queues = load_queues.cluster_queues(top["clusterQueues"], flavors, notices)
    namespaces = load_local_queues.namespaces(top["namespaces"]) if "namespaces" in top else ()
    local_queues = (
        load_local_queues.local_queues(
            top["localQueues"], {cq.name for cq in queues}, {ns.name for ns in namespaces}
        )
        if "localQueues" in top
        else ()
    )
    return load_queues.World(
        topologies=tuple(topologies),
        flavors=tuple(flavors),
        queues=queues,
        priority_classes=classes,
        shorthand=None,
        cohorts=load_cohorts.cohorts(top["cohorts"], flavors, notices) if "cohorts" in top else (),
        local_queues=local_queues,
        namespaces=namespaces,
        notices=notices,
    )


def _without_scratch(data: Any) -> Any:
    """Drop top-level `x-` keys: scratch space for YAML anchors, as in docker compose."""
    if not isinstance(data, dict):
        return data
    return {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("x-"))}


class _Domains:
    """The lowest-level domain values an `expect` placement may name: node names when the
    lowest level is kubernetes.io/hostname, else that level's label values. Steps add the
    nodes they add; a deleted node's value stays valid (what was placed there keeps its
    assignment)."""

    def __init__(self, level: str, nodes: list[Node]) -> None:
        self.level = level
        self.values = {n.labels[level] for n in nodes if level in n.labels}

    def add(self, node: Node) -> None:
        if self.level in node.labels:
            self.values.add(node.labels[self.level])

    def check(self, at: _At, domain: str) -> None:
        if domain in self.values:
            return
        if self.level == HOSTNAME:
            at.fail(f"no node named {yaml_text(domain)}")
        at.fail(
            f"no node has {self.level}: {yaml_text(domain)} "
            f"(placement keys are values of the lowest level, {self.level})"
        )


def _text(at: _At | None) -> str:
    if at is None or at.value is None:
        return ""
    if not isinstance(at.value, str):
        at.fail(f"must be text, got {kind(at.value)}")
    return at.value


def _unique(items: list[T], at: _At | None, what: str) -> list[T]:
    seen: set[str] = set()
    for index, item in enumerate(items):
        name = str(getattr(item, "name", None) or "")
        if not name:
            continue
        if name in seen and at is not None:
            at.child(index, None).child("name", None).fail(
                f"duplicate {what} name {yaml_text(name)}"
            )
        seen.add(name)
    return items


def _gates(at: _At) -> dict[str, bool]:
    if isinstance(at.value, dict):
        for name in at.value:
            if isinstance(name, str) and name not in KUEUE_V0_19_GATES:
                at.fail(unknown_gate(name))
    fields = at.mapping(tuple(sorted(KUEUE_V0_19_GATES)))
    return {name: value.boolean() for name, value in fields.items()}


def _topology(at: _At) -> Topology:
    fields = at.mapping(("name", "levels"), ("name", "levels"))
    items = fields["levels"].items()
    levels = [lv.string(is_qualified_name, "label key") for lv in items]
    if not levels:
        fields["levels"].fail("must list at least one level")
    if len(levels) > MAX_LEVELS:
        fields["levels"].fail(
            f"at most {MAX_LEVELS} levels (Kueue's Topology limit), got {len(levels)}"
        )
    for index, level in enumerate(levels):
        if level in levels[:index]:
            items[index].fail(f"duplicate level {yaml_text(level)}")
        if level == HOSTNAME and index < len(levels) - 1:
            # Kueue's Topology CEL rule, and its message (topology_types.go).
            items[index].fail(
                "the kubernetes.io/hostname label can only be used at the lowest level of topology"
            )
    return Topology(
        name=fields["name"].string(is_dns_subdomain, "Topology name"), levels=tuple(levels)
    )


def _flavor(at: _At | None, topology: Topology) -> Flavor:
    if at is None or at.value is None:
        return Flavor(name=topology.name)
    fields = at.mapping(("name", "nodeLabels", "tolerations"))
    return Flavor(
        name=fields["name"].string(is_dns_subdomain, "ResourceFlavor name")
        if "name" in fields
        else topology.name,
        node_labels=_labels(fields["nodeLabels"]) if "nodeLabels" in fields else {},
        tolerations=_tolerations(fields.get("tolerations")),
    )


def _resource_flavor(at: _At) -> Flavor:
    """A version-2 `resourceFlavors` entry (Kueue's ResourceFlavor spec fields)."""
    keys = ("name", "nodeLabels", "nodeTaints", "tolerations", "topologyName")
    fields = at.mapping(keys, ("name",))
    return Flavor(
        name=fields["name"].string(is_dns_subdomain, "ResourceFlavor name"),
        node_labels=_labels(fields["nodeLabels"]) if "nodeLabels" in fields else {},
        tolerations=_tolerations(fields.get("tolerations")),
        node_taints=_taints(fields["nodeTaints"])
        if "nodeTaints" in fields and fields["nodeTaints"].value is not None
        else (),
        topology_name=fields["topologyName"].string() if "topologyName" in fields else None,
    )


def _queue(at: _At | None) -> Queue:
    if at is None or at.value is None:
        return Queue()
    fields = at.mapping(("nominalQuota",))
    quota = _resources(fields["nominalQuota"], kubernetes=False) if "nominalQuota" in fields else {}
    return Queue(nominal_quota=quota)


def _taints(at: _At) -> tuple[Taint, ...]:
    """A node's or a flavor's taints; the API server (ValidateNodeSpec) and Kueue's
    ResourceFlavor webhook both refuse two taints with the same key and effect."""
    taints: list[Taint] = []
    for item in at.items():
        taint = _taint(item)
        if any((t.key, t.effect) == (taint.key, taint.effect) for t in taints):
            item.fail("taints must be unique by key and effect pair")
        taints.append(taint)
    return tuple(taints)


def _taint(at: _At) -> Taint:
    fields = at.mapping(("key", "value", "effect"), ("key", "effect"))
    effect = fields["effect"].string()
    if effect not in TAINT_EFFECTS:
        fields["effect"].fail(f"{yaml_text(effect)} is not one of {', '.join(TAINT_EFFECTS)}")
    value = fields["value"].value if "value" in fields else ""
    if not isinstance(value, str):
        fields["value"].fail(f"must be a string (quote it), got {kind(value)}")
    return Taint(
        key=fields["key"].string(is_qualified_name, "taint key"), value=value, effect=effect
    )


def _tolerations(at: _At | None) -> tuple[Toleration, ...]:
    if at is None or at.value is None:
        return ()
    return tuple(_toleration(t) for t in at.items())


def _toleration(at: _At) -> Toleration:
    fields = at.mapping(("key", "operator", "value", "effect", "tolerationSeconds"))
    key = fields["key"].value if "key" in fields else ""
    operator = fields["operator"].value if "operator" in fields else "Equal"
    value = fields["value"].value if "value" in fields else ""
    effect = fields["effect"].value if "effect" in fields else ""
    for name, got in (("key", key), ("value", value), ("effect", effect)):
        if not isinstance(got, str):
            fields[name].fail(f"must be a string (quote it), got {kind(got)}")
    if operator not in ("Equal", "Exists"):
        (fields.get("operator") or at).fail(
            f"operator must be Equal or Exists, got {yaml_text(operator)}"
        )
    if operator == "Exists" and value:
        at.fail("value must be empty when operator is Exists")
    if not key and operator != "Exists":
        at.fail("an empty key needs operator Exists")
    if effect and effect not in TAINT_EFFECTS:
        fields["effect"].fail(f"{yaml_text(effect)} is not one of {', '.join(TAINT_EFFECTS)}")
    seconds = fields["tolerationSeconds"].value if "tolerationSeconds" in fields else None
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        fields["tolerationSeconds"].fail("must be a whole number of seconds")
    return Toleration(
        key=key, operator=operator, value=value, effect=effect, toleration_seconds=seconds
    )


NODE_KEYS = ("name", "labels", "allocatable", "taints", "ready", "unschedulable")


def _nodes(listed: _At | None, groups: _At | None, topology: Topology) -> list[Node]:
    """`nodes` in order, then every `nodeGroups` entry's nodes; a name made twice is refused."""
    nodes = [_node(n, topology) for n in listed.items()] if listed is not None else []
    _unique(nodes, listed, "node")
    made_by = {n.name: f"nodes[{i}]" for i, n in enumerate(nodes)}
    for group in groups.items() if groups is not None else []:
        for node_at in node_groups.expand(group, NODE_KEYS):
            node = _node(node_at, topology)
            if node.name in made_by:
                by = made_by[node.name]
                group.child("name", None).fail(
                    f"makes {yaml_text(node.name)} twice (put {{index}} or every counter in it)"
                    if by == group.path
                    else f"makes {yaml_text(node.name)}, which {by} already names"
                )
            made_by[node.name] = group.path
            nodes.append(node)
    return nodes


def _node(at: _At, topology: Topology) -> Node:
    fields = at.mapping(NODE_KEYS, ("name", "allocatable"))
    name = fields["name"].string(is_dns_subdomain, "node name")
    if len(name) > 63:
        fields["name"].fail("node names are hostname label values: at most 63 characters")
    labels = _labels(fields["labels"]) if "labels" in fields else {}
    if labels.get(HOSTNAME, name) != name:
        fields["labels"].child(HOSTNAME, None).fail(f"must equal the node name {yaml_text(name)}")
    return Node(
        name=name,
        labels={**labels, HOSTNAME: name},
        allocatable=_resources(fields["allocatable"]),
        taints=_taints(fields["taints"]) if "taints" in fields else (),
        ready=fields["ready"].boolean() if "ready" in fields else True,
        unschedulable=fields["unschedulable"].boolean() if "unschedulable" in fields else False,
    )


def _usage(at: _At, node_names: set[str]) -> Usage:
    fields = at.mapping(("node", "requests", "count", "name"), ("node", "requests"))
    node = fields["node"].string()
    if node not in node_names:
        fields["node"].fail(f"no node named {yaml_text(node)} in nodes")
    return Usage(
        node=node,
        requests=_resources(fields["requests"], container=True),
        count=fields["count"].positive_int() if "count" in fields else 1,
        name=fields["name"].string(is_dns_subdomain, "usage name") if "name" in fields else None,
    )


def _workload(at: _At, levels: tuple[str, ...], world: load_queues.World) -> Workload:
    fields = at.mapping(
        (
            "name",
            "podSets",
            "queue",
            "namespace",
            "priorityClass",
            "submitAt",
            "runFor",
            "podsReady",
        ),
        ("name", "podSets"),
    )
    pod_sets = [_pod_set(p, levels) for p in fields["podSets"].items()]
    if not pod_sets:
        fields["podSets"].fail("must list at least one pod set")
    _unique(pod_sets, fields["podSets"], "pod set")
    name = fields["name"].string(is_dns_label, "workload name (a DNS label)")
    if len(name) > 63:
        fields["name"].fail("at most 63 characters")
    queue, priority_class, local_queue, namespace = world.references(at, fields)
    _note_missing_levels(fields["podSets"], pod_sets, world.levels_of(queue), world.notices)
    return Workload(
        name=name,
        pod_sets=tuple(pod_sets),
        queue=queue,
        priority_class=priority_class,
        submit_at=fields["submitAt"].seconds(above_zero=False) if "submitAt" in fields else None,
        run_for=fields["runFor"].seconds(above_zero=True) if "runFor" in fields else None,
        local_queue=local_queue,
        namespace=namespace,
        pods_ready=fields["podsReady"].boolean() if "podsReady" in fields else True,
    )


def _without_pods_ready(at: _At, where: str) -> _At:
    """`podsReady` (a harness extension: pods that never pass their readiness probe) is
    taken on `workloads` entries and `submit` steps only."""
    if isinstance(at.value, dict) and "podsReady" in at.value:
        at.child("podsReady", at.value["podsReady"]).fail(
            f"not supported in {where} (only in workloads entries and submit steps)"
        )
    return at


def _note_missing_levels(
    listed: _At, pod_sets: list[PodSet], levels: tuple[str, ...], notices: Notices
) -> None:
    """A level none of the ClusterQueue's flavors has: Kueue's webhook checks only that it is
    a label key (jobframework/tas_validation.go), then skips each flavor, "Flavor X does not
    contain the requested level" (flavorassigner/tas_flavorassigner.go), and the workload
    waits. Accepted as Kueue does; a hand-written file is warned (a typo, most likely)."""
    for ps_at, ps in zip(listed.items(), pod_sets, strict=True):
        request = ps.topology
        asked = (("level", request.level), ("sliceLevel", request.slice_level)) if request else ()
        for key, level in asked:
            if level is None or level in levels:
                continue
            at = ps_at.child("topology", None).child(key, level)
            hint = did_you_mean(level, levels)
            notices.add(
                at,
                f"{yaml_text(level)} is not a level of its ClusterQueue's flavors"
                f" ({', '.join(dict.fromkeys(levels)) or 'none'}): Kueue keeps the workload"
                f" pending{'; ' + hint if hint else ''}",
            )


POD_SET_KEYS = ("name", "count", "requests", "topology", "nodeSelector", "tolerations")


def _pod_set(at: _At, levels: tuple[str, ...]) -> PodSet:
    fields = at.mapping(POD_SET_KEYS, ("name", "count", "requests"))
    return PodSet(
        name=fields["name"].string(is_dns_label, "pod set name (a DNS label)"),
        count=fields["count"].positive_int(),
        requests=_resources(fields["requests"], container=True),
        topology=(_topology_request(fields["topology"], levels) if "topology" in fields else None),
        node_selector=_labels(fields["nodeSelector"]) if "nodeSelector" in fields else {},
        tolerations=_tolerations(fields.get("tolerations")),
    )


def _topology_request(at: _At, levels: tuple[str, ...]) -> TopologyRequest:
    """`levels`: those of every Topology; the ClusterQueue's are checked by the caller."""
    keys = ("mode", "level", "sliceLevel", "sliceSize", "podSetGroupName")
    fields = at.mapping(keys)

    def level_of(key: str) -> str | None:
        if key not in fields:
            return None
        if fields[key].value in levels:
            return str(fields[key].value)
        # Any label key, as Kueue's webhook (jobframework/tas_validation.go ValidateLabelName).
        return fields[key].string(is_qualified_name, "label key")

    mode = fields["mode"].string() if "mode" in fields else None
    if mode is not None and mode not in MODES:
        fields["mode"].fail(f"{yaml_text(mode)} is not one of {', '.join(MODES)}")
    level, slice_level = level_of("level"), level_of("sliceLevel")
    if mode in ("required", "preferred") and level is None:
        at.fail(f"mode {mode} needs a level")
    if mode == "unconstrained" and level is not None:
        fields["level"].fail("unconstrained takes no level")
    if mode is None and level is not None:
        fields["level"].fail("a level needs a mode (required or preferred)")
    if mode is None and slice_level is None:
        at.fail("needs a mode (required, preferred or unconstrained) or a sliceLevel")
    return TopologyRequest(
        mode=mode,
        level=level,
        slice_level=slice_level,
        slice_size=fields["sliceSize"].positive_int() if "sliceSize" in fields else None,
        group=fields["podSetGroupName"].string() if "podSetGroupName" in fields else None,
    )


def _expectations(
    at: _At, workloads: Mapping[str, Workload], domains: _Domains, world: load_queues.World
) -> dict[str, Expectation]:
    if at.value is None:
        return {}
    fields = at.mapping(tuple(workloads))
    return {
        name: _expectation(value, workloads[name], domains, world) for name, value in fields.items()
    }


EXPECT_KEYS = ("admitted", "placement", "message", "rejected", "unschedulable", "flavors")
FAULT_EXPECT_KEYS = ("replaced", "evicted", "drift")
"""What a fault step did (docs/scenario-extensions.md, "Faults under running workloads")."""


def _expectation(
    at: _At, workload: Workload, domains: _Domains, world: load_queues.World
) -> Expectation:
    fields = at.mapping(
        (*EXPECT_KEYS, "preempted", *FAULT_EXPECT_KEYS, "quotaReserved"), ("admitted",)
    )
    placement = None
    if "placement" in fields:
        pod_set_names = tuple(p.name for p in workload.pod_sets)
        placement = {}
        for ps_name, per_domain in fields["placement"].mapping(pod_set_names).items():
            if not isinstance(per_domain.value, dict):
                per_domain.fail("must map each lowest-level domain to a pod count")
            pods: dict[str, int] = {}
            for domain, count in per_domain.value.items():
                where = per_domain.child(str(domain), count)
                domains.check(where, str(domain))
                pods[str(domain)] = where.positive_int()
            placement[ps_name] = pods
    admitted = fields["admitted"].boolean()
    reserved = fields["quotaReserved"].boolean() if "quotaReserved" in fields else None
    if admitted and reserved is not None:
        fields["quotaReserved"].fail("only a workload not admitted waits for admission checks")
    if admitted and "message" in fields:
        fields["message"].fail("a message is only expected for a pending workload")
    if not admitted and not reserved and placement is not None:
        fields["placement"].fail("a pending workload has no placement")
    unschedulable = None
    if "unschedulable" in fields:
        if not admitted:
            fields["unschedulable"].fail("only an admitted workload has unschedulable pods")
        unschedulable = _unschedulable(fields["unschedulable"], workload)
    for key in ("replaced", "drift"):
        if key in fields and not admitted:
            fields[key].fail(f"only an admitted workload has {key} nodes")
    return Expectation(
        admitted=admitted,
        placement=placement,
        message=fields["message"].string() if "message" in fields else None,
        rejected=fields["rejected"].boolean() if "rejected" in fields else None,
        unschedulable=unschedulable,
        flavors=world.expected_flavors(fields["flavors"], workload)
        if "flavors" in fields
        else None,
        preempted=fields["preempted"].boolean() if "preempted" in fields else None,
        replaced=load_faults.replaced(fields["replaced"], workload, domains.level, domains.values)
        if "replaced" in fields
        else None,
        evicted=load_faults.evicted(fields["evicted"]) if "evicted" in fields else None,
        drift=load_faults.drift(fields["drift"], workload, domains.level, domains.values)
        if "drift" in fields
        else None,
        quota_reserved=reserved,
    )


def _unschedulable(at: _At, workload: Workload) -> dict[str, int]:
    """Pod set -> admitted pods that never run (0 allowed: says so explicitly)."""
    counts = {p.name: p.count for p in workload.pod_sets}
    out: dict[str, int] = {}
    for name, value in at.mapping(tuple(counts)).items():
        out[name] = value.integer(0)
        if out[name] > counts[name]:
            value.fail(f"pod set {name} has only {counts[name]} pods")
    return out


def _steps(
    at: _At,
    topology: Topology,
    ledger: UsageLedger,
    usage: tuple[Usage, ...],
    workloads: list[Workload],
    domains: _Domains,
    world: load_queues.World,
    faults: load_faults.FaultState,
    declared: KueueVersions | None,
    runs_on: str | None,
) -> tuple[Step, ...]:
    nodes = set(ledger.allocatable)
    running = runs_on or DEFAULT_KUEUE
    usages: set[str | None] = {u.name for u in usage if u.name}
    known = {w.name: w for w in workloads}
    steps = []
    for item in at.items():
        fields = item.mapping((*STEP_ACTIONS, "expect", "expectByVersion"))
        actions = [k for k in fields if k not in ("expect", "expectByVersion")]
        if len(actions) != 1:
            item.fail(f"needs exactly one action ({', '.join(STEP_ACTIONS)})")
        action, value = actions[0], fields[actions[0]]
        if action in FAULT_ACTIONS:
            target = faults.target(action, value)
        elif action == "upgrade-kueue":
            target = running = load_versions.upgrade(value, running)
        else:
            target = _step_target(action, value, topology, nodes, usages, known, world)
        _track(action, target, value, ledger, domains)
        faults.follow(action, target)
        expect = (
            _expectations(fields["expect"], known, domains, world) if "expect" in fields else None
        )
        by_version = None
        if "expectByVersion" in fields:
            by_version = load_versions.by_version(
                fields["expectByVersion"],
                expect,
                declared,
                lambda at: _expectations(at, known, domains, world),
            )
        steps.append(Step(action=action, target=target, expect=expect, by_version=by_version))
    return tuple(steps)


def _track(action: str, target: object, at: _At, ledger: UsageLedger, domains: _Domains) -> None:
    """Follow what a step does to node capacity and to the domains a placement may name."""
    if isinstance(target, Node):
        ledger.add_node(target)
        domains.add(target)
    elif isinstance(target, Usage):
        ledger.add(target, at)
    elif action == "delete-node" and isinstance(target, str):
        ledger.delete_node(target)
    elif action == "delete-usage" and isinstance(target, str):
        ledger.delete_usage(target)


def _step_target(
    action: str,
    at: _At,
    topology: Topology,
    nodes: set[str],
    usages: set[str | None],
    known: dict[str, Workload],
    world: load_queues.World,
) -> object:
    def existing(names: Mapping[str, object] | set[str] | set[str | None], what: str) -> str:
        name = at.string()
        if name not in names:
            at.fail(f"no {what} named {yaml_text(name)}")
        return name

    handlers: dict[str, Callable[[], object]] = {
        "delete-workload": lambda: existing(known, "workload"),
        "delete-usage": lambda: existing(usages, "usage (give usage entries a name)"),
        "cordon": lambda: existing(nodes, "node"),
        "uncordon": lambda: existing(nodes, "node"),
        "delete-node": lambda: existing(nodes, "node"),
        "add-node": lambda: _node(at, topology),
        "add-usage": lambda: _usage(at, nodes),
        "submit": lambda: _workload(at, topology.levels, world),
        "set-admission-check": lambda: load_checks.change(at, known, world.queues),
        "pods-not-ready": lambda: existing(known, "workload"),
        "pods-ready": lambda: existing(known, "workload"),
        "set-stop-policy": lambda: load_local_queues.stop_policy_change(
            at, world.all_queues(), [cq.name for cq in world.queues]
        ),
    }
    target = handlers[action]()
    if isinstance(target, Node):
        if target.name in nodes:
            at.fail(f"node {yaml_text(target.name)} already exists")
        nodes.add(target.name)
    if isinstance(target, Usage) and target.name:
        if target.name in usages:
            at.fail(f"usage {yaml_text(target.name)} already exists")
        usages.add(target.name)
    if isinstance(target, Workload):
        if target.name in known:
            at.fail(f"workload {yaml_text(target.name)} already exists")
        known[target.name] = target
    return target


def with_stream(world: Scenario, rows: list[tuple[str, Any]], file: str) -> Scenario:
    """`world` with the workloads of a stream file (`replay STREAM --world SCENARIO`): each
    row is (where it is in `file`, e.g. "line 4", a workload as `workloads[]` takes it),
    validated as the loader validates a scenario's workloads; the world's own workloads,
    expectations and steps are not part of it. An ample-quota ClusterQueue (a `queue`
    shorthand's) also covers what the stream's workloads request."""
    levels = tuple(dict.fromkeys(lv for t in world.topologies for lv in t.levels))
    ref = load_queues.World(
        topologies=world.topologies,
        flavors=world.resource_flavors,
        queues=world.cluster_queues,
        priority_classes=world.priority_classes,
        shorthand=None,
        local_queues=world.local_queues,
        namespaces=world.namespaces,
    )
    seen: set[str] = {a.name for a in world.admitted}
    workloads = []
    for where, data in rows:
        at = _At(file, where, data)
        w = _workload(at, levels, ref)
        if w.name in seen:
            at.child("name", w.name).fail(f"workload {yaml_text(w.name)} is named twice")
        seen.add(w.name)
        workloads.append(w)
    asked = {r for w in workloads for ps in w.pod_sets for r in ps.requests}
    queues = ample_quota.covering(replace(world, workloads=tuple(workloads)), asked).cluster_queues
    return replace(
        world,
        workloads=tuple(workloads),
        cluster_queues=queues,
        expect=None,
        by_version=None,
        steps=(),
    )
