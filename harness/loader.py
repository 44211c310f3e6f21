"""YAML scenario file -> validated `Scenario`, or one `ScenarioError` naming file, key and problem.

The contract is shared/scenario-format.md (version 1); `steps` and `usage[].name` are our
documented extensions (docs/scenario-extensions.md). Unknown keys are errors, never ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import yaml

from harness.errors import ScenarioError
from harness.kueue_gates import KUEUE_V0_19_GATES
from harness.quantity import QuantityError, parse_quantity
from harness.scenario import (
    HOSTNAME,
    MODES,
    STEP_ACTIONS,
    TAINT_EFFECTS,
    Expectation,
    Flavor,
    Node,
    PodSet,
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

T = TypeVar("T")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class _At:
    """A value from a YAML file together with the key path that leads to it; shared by every
    loader of user files (scenarios, cluster shapes) so all report `FILE: key.path: problem`."""

    def __init__(
        self,
        file: str,
        path: str,
        value: Any,
        error: Callable[[str, str, str], Exception] = ScenarioError,
    ) -> None:
        self.file, self.path, self.value, self.error = file, path, value, error

    def fail(self, problem: str) -> NoReturn:
        raise self.error(self.file, self.path or "(top level)", problem)

    def child(self, key: str | int, value: Any) -> _At:
        sub = f"[{key}]" if isinstance(key, int) else (f".{key}" if self.path else key)
        return _At(self.file, self.path + sub, value, self.error)

    def mapping(self, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, _At]:
        if not isinstance(self.value, dict):
            self.fail(f"must be a mapping, got {_kind(self.value)}")
        for key in self.value:
            if not isinstance(key, str):
                self.fail(f"keys must be strings, got {key!r}")
            if key not in allowed:
                self.fail(f"unknown key {key!r} (allowed: {', '.join(allowed)})")
        for key in required:
            if key not in self.value:
                self.fail(f"missing required key {key!r}")
        return {k: self.child(k, v) for k, v in self.value.items()}

    def items(self) -> list[_At]:
        if not isinstance(self.value, list):
            self.fail(f"must be a list, got {_kind(self.value)}")
        return [self.child(i, v) for i, v in enumerate(self.value)]

    def string(self, pattern: re.Pattern[str] | None = None, what: str = "") -> str:
        if not isinstance(self.value, str) or not self.value:
            self.fail(f"must be a non-empty string, got {_kind(self.value)}")
        if pattern is not None and (len(self.value) > 253 or not pattern.match(self.value)):
            self.fail(f"{self.value!r} is not a valid {what}")
        return self.value

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            self.fail(f"must be true or false, got {_kind(self.value)}")
        return self.value

    def integer(self, minimum: int) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.fail(f"must be a whole number, got {_kind(self.value)}")
        if self.value < minimum:
            self.fail(f"must be at least {minimum}, got {self.value}")
        return self.value

    def positive_int(self) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.fail(f"must be a whole number, got {_kind(self.value)}")
        if self.value <= 0:
            self.fail(f"must be at least 1, got {self.value}")
        return self.value

    def labels(self, keys_only_valid: bool = True) -> dict[str, str]:
        if self.value is None:
            return {}
        if not isinstance(self.value, dict):
            self.fail(f"must be a mapping of label key to string value, got {_kind(self.value)}")
        out: dict[str, str] = {}
        for key, value in self.value.items():
            at = self.child(str(key), value)
            if not isinstance(key, str) or (keys_only_valid and not _LABEL_KEY.match(key)):
                at.fail(f"{key!r} is not a valid label key")
            if not isinstance(value, str):
                at.fail(f"label values must be strings (quote it), got {_kind(value)}")
            if len(value) > 63 or not _LABEL_VALUE.match(value):
                at.fail(f"{value!r} is not a valid label value")
            out[key] = value
        return out

    def resources(self, allow_zero: bool = True) -> dict[str, Fraction]:
        if not isinstance(self.value, dict):
            self.fail(f"must be a mapping of resource name to quantity, got {_kind(self.value)}")
        out: dict[str, Fraction] = {}
        for key, value in self.value.items():
            at = self.child(str(key), value)
            if not isinstance(key, str) or not key:
                at.fail("resource names must be non-empty strings")
            try:
                quantity = parse_quantity(value)
            except QuantityError as err:
                at.fail(str(err))
            if quantity < 0 or (quantity == 0 and not allow_zero):
                at.fail(f"must not be negative, got {value}")
            out[key] = quantity
        return out


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: f"{value!r}", bool: f"{value}"}.get(
        type(value), repr(value)
    )


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def parse_yaml(text: str, file: str) -> Any:
    """Parse YAML text; a syntax error becomes one ScenarioError line with the position."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        raise ScenarioError(file, where, f"invalid YAML: {err.problem}") from None
    except yaml.YAMLError as err:
        raise ScenarioError(file, "", f"invalid YAML: {err}") from None


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
    "topology",
    "flavor",
    "queue",
    "nodes",
    "usage",
    "workloads",
    "expect",
    "steps",
)


def scenario_from_data(data: Any, file: str = "<scenario>") -> Scenario:
    """Validate already-parsed YAML/JSON data against the contract."""
    top = _At(file, "", data).mapping(TOP_KEYS, ("name", "topology", "nodes", "workloads"))
    topology = _topology(top["topology"])
    nodes = _unique([_node(n, topology) for n in top["nodes"].items()], top["nodes"], "node")
    node_names = {n.name for n in nodes}
    usage = tuple(_usage(u, node_names) for u in top["usage"].items()) if "usage" in top else ()
    _unique([u for u in usage if u.name], top.get("usage"), "usage")
    levels = topology.levels
    workloads = _unique(
        [_workload(w, levels) for w in top["workloads"].items()], top["workloads"], "workload"
    )
    steps = _steps(top["steps"], topology, node_names, usage, workloads) if "steps" in top else ()
    known = {w.name: w for w in workloads}
    for step in steps:
        if step.action == "submit" and isinstance(step.target, Workload):
            known[step.target.name] = step.target
    return Scenario(
        name=top["name"].string(),
        description=_text(top.get("description")),
        source=_text(top.get("source")),
        kueue=top["kueue"].string() if "kueue" in top else None,
        feature_gates=_gates(top["featureGates"]) if "featureGates" in top else {},
        topology=topology,
        flavor=_flavor(top.get("flavor"), topology),
        queue=_queue(top.get("queue")),
        nodes=tuple(nodes),
        usage=usage,
        workloads=tuple(workloads),
        expect=_expectations(top["expect"], known) if "expect" in top else None,
        steps=steps,
        path=file,
    )


def _text(at: _At | None) -> str:
    if at is None or at.value is None:
        return ""
    if not isinstance(at.value, str):
        at.fail(f"must be text, got {_kind(at.value)}")
    return at.value


def _unique(items: list[T], at: _At | None, what: str) -> list[T]:
    seen: set[str] = set()
    for index, item in enumerate(items):
        name = str(getattr(item, "name", ""))
        if name in seen and at is not None:
            at.child(index, None).child("name", None).fail(f"duplicate {what} name {name!r}")
        seen.add(name)
    return items


def _gates(at: _At) -> dict[str, bool]:
    fields = at.mapping(tuple(sorted(KUEUE_V0_19_GATES)))
    return {name: value.boolean() for name, value in fields.items()}


def _topology(at: _At) -> Topology:
    fields = at.mapping(("name", "levels"), ("name", "levels"))
    levels = [lv.string(_LABEL_KEY, "label key") for lv in fields["levels"].items()]
    if not levels:
        fields["levels"].fail("must list at least one level")
    for index, level in enumerate(levels):
        if level in levels[:index]:
            fields["levels"].child(index, level).fail(f"duplicate level {level!r}")
    return Topology(
        name=fields["name"].string(_DNS_SUBDOMAIN, "Topology name"), levels=tuple(levels)
    )


def _flavor(at: _At | None, topology: Topology) -> Flavor:
    if at is None or at.value is None:
        return Flavor(name=topology.name)
    fields = at.mapping(("name", "nodeLabels", "tolerations"))
    return Flavor(
        name=fields["name"].string(_DNS_SUBDOMAIN, "ResourceFlavor name")
        if "name" in fields
        else topology.name,
        node_labels=fields["nodeLabels"].labels() if "nodeLabels" in fields else {},
        tolerations=_tolerations(fields.get("tolerations")),
    )


def _queue(at: _At | None) -> Queue:
    if at is None or at.value is None:
        return Queue()
    fields = at.mapping(("nominalQuota",))
    quota = fields["nominalQuota"].resources() if "nominalQuota" in fields else {}
    return Queue(nominal_quota=quota)


def _taint(at: _At) -> Taint:
    fields = at.mapping(("key", "value", "effect"), ("key", "effect"))
    effect = fields["effect"].string()
    if effect not in TAINT_EFFECTS:
        fields["effect"].fail(f"{effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
    value = fields["value"].value if "value" in fields else ""
    if not isinstance(value, str):
        fields["value"].fail(f"must be a string (quote it), got {_kind(value)}")
    return Taint(key=fields["key"].string(_LABEL_KEY, "taint key"), value=value, effect=effect)


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
            fields[name].fail(f"must be a string (quote it), got {_kind(got)}")
    if operator not in ("Equal", "Exists"):
        (fields.get("operator") or at).fail(f"operator must be Equal or Exists, got {operator!r}")
    if operator == "Exists" and value:
        at.fail("value must be empty when operator is Exists")
    if not key and operator != "Exists":
        at.fail("an empty key needs operator Exists")
    if effect and effect not in TAINT_EFFECTS:
        fields["effect"].fail(f"{effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
    seconds = fields["tolerationSeconds"].value if "tolerationSeconds" in fields else None
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        fields["tolerationSeconds"].fail("must be a whole number of seconds")
    return Toleration(
        key=key, operator=operator, value=value, effect=effect, toleration_seconds=seconds
    )


NODE_KEYS = ("name", "labels", "allocatable", "taints", "ready", "unschedulable")


def _node(at: _At, topology: Topology) -> Node:
    fields = at.mapping(NODE_KEYS, ("name", "allocatable"))
    name = fields["name"].string(_DNS_SUBDOMAIN, "node name")
    if len(name) > 63:
        fields["name"].fail("node names are hostname label values: at most 63 characters")
    labels = fields["labels"].labels() if "labels" in fields else {}
    if labels.get(HOSTNAME, name) != name:
        fields["labels"].child(HOSTNAME, None).fail(f"must equal the node name {name!r}")
    return Node(
        name=name,
        labels={**labels, HOSTNAME: name},
        allocatable=fields["allocatable"].resources(),
        taints=tuple(_taint(t) for t in fields["taints"].items()) if "taints" in fields else (),
        ready=fields["ready"].boolean() if "ready" in fields else True,
        unschedulable=fields["unschedulable"].boolean() if "unschedulable" in fields else False,
    )


def _usage(at: _At, node_names: set[str]) -> Usage:
    fields = at.mapping(("node", "requests", "count", "name"), ("node", "requests"))
    node = fields["node"].string()
    if node not in node_names:
        fields["node"].fail(f"no node named {node!r} in nodes")
    return Usage(
        node=node,
        requests=fields["requests"].resources(),
        count=fields["count"].positive_int() if "count" in fields else 1,
        name=fields["name"].string(_DNS_SUBDOMAIN, "usage name") if "name" in fields else None,
    )


def _workload(at: _At, levels: tuple[str, ...]) -> Workload:
    fields = at.mapping(("name", "podSets"), ("name", "podSets"))
    pod_sets = [_pod_set(p, levels) for p in fields["podSets"].items()]
    if not pod_sets:
        fields["podSets"].fail("must list at least one pod set")
    _unique(pod_sets, fields["podSets"], "pod set")
    name = fields["name"].string(_DNS_LABEL, "workload name (a DNS label)")
    if len(name) > 63:
        fields["name"].fail("at most 63 characters")
    return Workload(name=name, pod_sets=tuple(pod_sets))


POD_SET_KEYS = ("name", "count", "requests", "topology", "nodeSelector", "tolerations")


def _pod_set(at: _At, levels: tuple[str, ...]) -> PodSet:
    fields = at.mapping(POD_SET_KEYS, ("name", "count", "requests"))
    return PodSet(
        name=fields["name"].string(_DNS_LABEL, "pod set name (a DNS label)"),
        count=fields["count"].positive_int(),
        requests=fields["requests"].resources(),
        topology=_topology_request(fields["topology"], levels) if "topology" in fields else None,
        node_selector=fields["nodeSelector"].labels() if "nodeSelector" in fields else {},
        tolerations=_tolerations(fields.get("tolerations")),
    )


def _topology_request(at: _At, levels: tuple[str, ...]) -> TopologyRequest:
    keys = ("mode", "level", "sliceLevel", "sliceSize", "podSetGroupName")
    fields = at.mapping(keys)

    def level_of(key: str) -> str | None:
        if key not in fields:
            return None
        level = fields[key].string()
        if level not in levels:
            fields[key].fail(f"{level!r} is not a level of the topology ({', '.join(levels)})")
        return level

    mode = fields["mode"].string() if "mode" in fields else None
    if mode is not None and mode not in MODES:
        fields["mode"].fail(f"{mode!r} is not one of {', '.join(MODES)}")
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


def _expectations(at: _At, workloads: Mapping[str, Workload]) -> dict[str, Expectation]:
    if at.value is None:
        return {}
    fields = at.mapping(tuple(workloads))
    return {name: _expectation(value, workloads[name]) for name, value in fields.items()}


def _expectation(at: _At, workload: Workload) -> Expectation:
    fields = at.mapping(
        ("admitted", "placement", "message", "rejected", "unschedulable"), ("admitted",)
    )
    placement = None
    if "placement" in fields:
        pod_set_names = tuple(p.name for p in workload.pod_sets)
        placement = {}
        for ps_name, per_domain in fields["placement"].mapping(pod_set_names).items():
            if not isinstance(per_domain.value, dict):
                per_domain.fail("must map each lowest-level domain to a pod count")
            placement[ps_name] = {
                str(domain): per_domain.child(str(domain), count).positive_int()
                for domain, count in per_domain.value.items()
            }
    admitted = fields["admitted"].boolean()
    if admitted and "message" in fields:
        fields["message"].fail("a message is only expected for a pending workload")
    if not admitted and placement is not None:
        fields["placement"].fail("a pending workload has no placement")
    unschedulable = None
    if "unschedulable" in fields:
        if not admitted:
            fields["unschedulable"].fail("only an admitted workload has unschedulable pods")
        unschedulable = _unschedulable(fields["unschedulable"], workload)
    return Expectation(
        admitted=admitted,
        placement=placement,
        message=fields["message"].string() if "message" in fields else None,
        rejected=fields["rejected"].boolean() if "rejected" in fields else None,
        unschedulable=unschedulable,
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
    node_names: set[str],
    usage: tuple[Usage, ...],
    workloads: list[Workload],
) -> tuple[Step, ...]:
    nodes = set(node_names)
    usages: set[str | None] = {u.name for u in usage if u.name}
    known = {w.name: w for w in workloads}
    steps = []
    for item in at.items():
        fields = item.mapping((*STEP_ACTIONS, "expect"))
        actions = [k for k in fields if k != "expect"]
        if len(actions) != 1:
            item.fail(f"needs exactly one action ({', '.join(STEP_ACTIONS)})")
        action, value = actions[0], fields[actions[0]]
        target = _step_target(action, value, topology, nodes, usages, known)
        expect = _expectations(fields["expect"], known) if "expect" in fields else None
        steps.append(Step(action=action, target=target, expect=expect))
    return tuple(steps)


def _step_target(
    action: str,
    at: _At,
    topology: Topology,
    nodes: set[str],
    usages: set[str | None],
    known: dict[str, Workload],
) -> object:
    def existing(names: Mapping[str, object] | set[str] | set[str | None], what: str) -> str:
        name = at.string()
        if name not in names:
            at.fail(f"no {what} named {name!r}")
        return name

    handlers: dict[str, Callable[[], object]] = {
        "delete-workload": lambda: existing(known, "workload"),
        "delete-usage": lambda: existing(usages, "usage (give usage entries a name)"),
        "cordon": lambda: existing(nodes, "node"),
        "uncordon": lambda: existing(nodes, "node"),
        "delete-node": lambda: existing(nodes, "node"),
        "add-node": lambda: _node(at, topology),
        "add-usage": lambda: _usage(at, nodes),
        "submit": lambda: _workload(at, topology.levels),
    }
    target = handlers[action]()
    if isinstance(target, Node):
        if target.name in nodes:
            at.fail(f"node {target.name!r} already exists")
        nodes.add(target.name)
    if isinstance(target, Usage) and target.name:
        if target.name in usages:
            at.fail(f"usage {target.name!r} already exists")
        usages.add(target.name)
    if isinstance(target, Workload):
        if target.name in known:
            at.fail(f"workload {target.name!r} already exists")
        known[target.name] = target
    return target


KeyPath = _At
"""Public name of the key-path reader for other loaders of user files."""
