"""Kueue's own scheduler-performance configuration (`test/performance/scheduler/configs/*/
generator.yaml`, read by runner/generator/generator.go and topology_generator.go) as a
stream: the same objects and the same clock, so Kueue's published configurations replay as
they are written.

What the generator makes, and what this turns it into (Kueue v0.19.2):
- `topology`: one Topology of the levels' `nodeLabel`s and count_1 x ... x count_n nodes
  named node-b0-r2-n15 (the first letter and index of each level), labelled
  `<resourceFlavor.nodeLabel>: tas` and `<level.nodeLabel>: <level.name>-<i>`, allocatable
  the last level's capacity (default 96 CPU, 256Gi) and 110 pods. The generator sets the
  hostname label to `node-<i>` (equal on every rack); here it is the node's name, as
  Kubernetes sets it (the leaves are distinct domains either way).
- `cohorts[].count` cohorts `<className>-<i>`, each with `queuesSets[].count` ClusterQueues
  `<className>-<set>-<i>-<cohort>`: one resource group covering cpu on the one flavor with
  `nominalQuota`/`borrowingLimit`, and the two preemption policies given.
- each workloads set creates, one after another, `count` rounds of its `workloads`, waiting
  `creationIntervalMs` before each creation (so the k-th is created at (k+1) x interval),
  all sets of all queues at once from 0; a workload runs `runtimeMs` from its admission
  (runner/controller: from its latest admission, so a preempted one runs in full again).
  Its priority is `spec.priority` there; here a WorkloadPriorityClass `priority-<value>`.
  With `tasLevel`, one pod set `main` of `podCount` pods requesting `request` cpu, with
  `tasConstraint` required | preferred | balanced (a required slice at that level of
  `sliceSize` pods); without, one pod requesting `request` cpu.
Names of workloads are `<ClusterQueue>-<generator name>` (the generator's names repeat in
each ClusterQueue's namespace). Unknown keys are refused (the generator ignores them).
"""

from __future__ import annotations

from math import prod
from typing import Any

from harness.replay.perf_summary import queue_class_key
from harness.scenario.keypath import KeyPath

LEVEL_KEYS = ("name", "count", "nodeLabel", "capacity")
TEMPLATE_KEYS = ("className", "runtimeMs", "priority", "request", "podCount", "tasConstraint",
                 "tasLevel", "sliceSize")  # fmt: skip
CONSTRAINTS = ("required", "preferred", "balanced")
DEFAULT_FLAVOR = "rf"
"""generator.go defaultResourceFlavorName, used when the file has no `resourceFlavor`."""
NODE_PODS = 110


def is_generator_config(data: Any) -> bool:
    """A generator.yaml has `cohorts` at the top, which no scenario has."""
    return isinstance(data, dict) and "cohorts" in data


def scenario_data(data: Any, file: str, name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The version-2 scenario (with the stream's workloads) the configuration makes, and each
    workload's class (its template's `className`) and ClusterQueue's (its queues set's
    `className`, under perf_summary.queue_class_key: generator.go labels both)."""
    root = KeyPath(file, "", data)
    top = root.mapping(("topology", "resourceFlavor", "cohorts"), ("cohorts",))
    flavor, nodes, topologies = _flavor_and_nodes(top)
    out: dict[str, Any] = {
        "name": name,
        "topologies": topologies,
        "resourceFlavors": [flavor],
        "nodes": nodes,
        "clusterQueues": [],
        "workloadPriorityClasses": [],
        "workloads": [],
    }
    classes: dict[str, str] = {}
    priorities: set[int] = set()
    cohort_sets = top["cohorts"].items()
    if not cohort_sets:
        top["cohorts"].fail("config must contain at least one cohort")
    for cohort_set in cohort_sets:
        fields = cohort_set.mapping(("className", "count", "queuesSets"), ("className", "count"))
        for index in range(fields["count"].integer(0)):
            cohort = f"{fields['className'].string()}-{index}"
            for set_index, queues in enumerate(_items(fields, "queuesSets")):
                _queue_set(queues, cohort, set_index, flavor["name"], out, classes, priorities)
    out["workloadPriorityClasses"] = [
        {"name": f"priority-{p}", "value": p} for p in sorted(priorities)
    ]
    out["workloads"].sort(key=lambda w: w["submitAt"])  # stable: generation order at ties
    return out, classes


def _items(fields: dict[str, KeyPath], key: str) -> list[KeyPath]:
    return fields[key].items() if key in fields else []


def _flavor_and_nodes(
    top: dict[str, KeyPath],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    rf = top["resourceFlavor"].mapping(("name", "nodeLabel", "topologyName"), ("name",)) if (
        "resourceFlavor" in top) else {}  # fmt: skip
    flavor: dict[str, Any] = {"name": rf["name"].string() if "name" in rf else DEFAULT_FLAVOR}
    if "topologyName" not in rf:
        return flavor, [], []
    if "nodeLabel" not in rf:
        top["resourceFlavor"].fail("nodeLabel is required when TAS is enabled (topologyName)")
    label = rf["nodeLabel"].string()
    flavor.update(nodeLabels={label: "tas"}, topologyName=rf["topologyName"].string())
    if "topology" not in top:
        top["resourceFlavor"].child("topologyName", None).fail("needs a `topology` to name")
    topology = top["topology"].mapping(("name", "levels"), ("name", "levels"))
    levels = [lv.mapping(LEVEL_KEYS, ("name", "count", "nodeLabel")) for lv in
              topology["levels"].items()]  # fmt: skip
    if len(levels) < 2:
        topology["levels"].fail(f"topology must have at least 2 levels, got {len(levels)}")
    capacity = levels[-1]["capacity"].mapping(("cpu", "memory")) if "capacity" in levels[-1] \
        else {}  # fmt: skip
    allocatable = {
        "cpu": _quantity(capacity["cpu"]) if "cpu" in capacity else "96",
        "memory": _quantity(capacity["memory"]) if "memory" in capacity else "256Gi",
        "pods": NODE_PODS,
    }
    names = [lv["name"].string() for lv in levels]
    counts = [lv["count"].integer(1) for lv in levels]
    labels = [lv["nodeLabel"].string() for lv in levels]
    topologies = [{"name": topology["name"].string(), "levels": labels}]
    nodes = []
    for flat in range(prod(counts)):
        indices, rest = [], flat
        for count in reversed(counts):
            indices.append(rest % count)
            rest //= count
        indices.reverse()
        node_labels = {label: "tas"}
        for level_label, level_name, i in zip(labels, names, indices, strict=True):
            if level_label != "kubernetes.io/hostname":
                node_labels[level_label] = f"{level_name}-{i}"
        node_name = "node" + "".join(f"-{n[0]}{i}" for n, i in zip(names, indices, strict=True))
        nodes.append({"name": node_name, "labels": node_labels, "allocatable": allocatable})
    return flavor, nodes, topologies


def _queue_set(
    at: KeyPath,
    cohort: str,
    set_index: int,
    flavor: str,
    out: dict[str, Any],
    classes: dict[str, str],
    priorities: set[int],
) -> None:
    keys = ("className", "count", "nominalQuota", "borrowingLimit", "reclaimWithinCohort",
            "withinClusterQueue", "workloadsSets")  # fmt: skip
    fields = at.mapping(keys, ("className", "count", "nominalQuota"))
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": _quantity(fields["nominalQuota"])}
    if "borrowingLimit" in fields and fields["borrowingLimit"].value not in ("", None):
        quota["borrowingLimit"] = _quantity(fields["borrowingLimit"])
    preemption = {key: fields[key].string() for key in ("reclaimWithinCohort",
                  "withinClusterQueue") if key in fields and fields[key].value}  # fmt: skip
    for index in range(fields["count"].integer(0)):
        cq = f"{fields['className'].string()}-{set_index}-{index}-{cohort}"
        spec: dict[str, Any] = {
            "name": cq,
            "cohortName": cohort,
            "resourceGroups": [{"coveredResources": ["cpu"],
                                "flavors": [{"name": flavor, "resources": [quota]}]}],
        }  # fmt: skip
        if preemption:
            spec["preemption"] = preemption
        out["clusterQueues"].append(spec)
        classes[queue_class_key(cq)] = fields["className"].string()
        for wl_set_index, wl_set in enumerate(_items(fields, "workloadsSets")):
            _workloads_set(wl_set, cq, wl_set_index, out, classes, priorities)


def _workloads_set(
    at: KeyPath,
    cq: str,
    set_index: int,
    out: dict[str, Any],
    classes: dict[str, str],
    priorities: set[int],
) -> None:
    fields = at.mapping(("count", "creationIntervalMs", "workloads"), ("count", "workloads"))
    interval = fields["creationIntervalMs"].integer(0) if "creationIntervalMs" in fields else 0
    templates = [_template(t) for t in fields["workloads"].items()]
    created = 0
    for round_index in range(fields["count"].integer(0)):
        for i, (class_name, run_ms, priority, pod_set) in enumerate(templates):
            created += 1
            name = f"{cq}-{class_name}-{set_index}-{round_index}-{i}"
            out["workloads"].append({
                "name": name,
                "queue": cq,
                "priorityClass": f"priority-{priority}",
                "submitAt": created * interval / 1000,
                "runFor": run_ms / 1000,
                "podSets": [pod_set],
            })  # fmt: skip
            classes[name] = class_name
            priorities.add(priority)


def _template(at: KeyPath) -> tuple[str, int, int, dict[str, Any]]:
    fields = at.mapping(TEMPLATE_KEYS, ("className", "runtimeMs", "request"))
    run_ms = fields["runtimeMs"].integer(0)
    if run_ms == 0:
        fields["runtimeMs"].fail("0 is not replayed (a job that finishes as it is admitted)")
    priority = fields["priority"].integer(-(2**31)) if "priority" in fields else 0
    pod_set: dict[str, Any] = {"name": "main", "count": 1,
                               "requests": {"cpu": _quantity(fields["request"])}}  # fmt: skip
    if "tasLevel" in fields and fields["tasLevel"].value:
        pod_set["count"] = fields["podCount"].integer(0) or 1 if "podCount" in fields else 1
        level = fields["tasLevel"].string()
        constraint = fields["tasConstraint"].string() if "tasConstraint" in fields else ""
        if constraint not in CONSTRAINTS:
            fields.get("tasConstraint", at).fail(
                f"tasConstraint must be one of {', '.join(CONSTRAINTS)}"
            )
        if constraint == "balanced":
            topology: dict[str, Any] = {"sliceLevel": level}
            if "sliceSize" in fields and fields["sliceSize"].integer(0) > 0:
                topology["sliceSize"] = fields["sliceSize"].value
        else:
            topology = {"mode": constraint, "level": level}
        pod_set["topology"] = topology
    return fields["className"].string(), run_ms, priority, pod_set


def _quantity(at: KeyPath) -> str:
    """A quantity as the generator reads it: a string, or a YAML number (sigs.k8s.io/yaml
    turns it into the string field's text)."""
    value = at.value
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
        at.fail(f'must be a quantity such as "500m" or 20, got {value!r}')
    return str(value)
