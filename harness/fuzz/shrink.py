"""Delta debugging over scenario dicts: the smallest scenario that still shows a disagreement.

Candidates go from big cuts to small ones: workloads, pod sets, chunks of nodes and usage,
topology levels, taints and node states, optional keys, then counts and capacities. A
candidate is kept when the loader accepts it and `interesting` still holds; passes repeat
until nothing more can be removed or the evaluation budget runs out.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from harness.errors import HarnessError
from harness.scenario.loader import scenario_from_data

Data = dict[str, Any]
Interesting = Callable[[Data], bool]
Edit = Callable[[Data], bool]
"""Changes the (copied) data in place; False when it does not apply."""

_NUMBER = re.compile(r"^(\d+)([A-Za-z]*)$")


def shrink(data: Data, interesting: Interesting, budget: int = 400) -> tuple[Data, int]:
    """The reduced scenario and the number of `interesting` calls spent on it."""
    current = copy.deepcopy(data)
    calls = 0
    changed = True
    while changed and calls < budget:
        changed = False
        index = 0
        while calls < budget:
            edits = list(_edits(current))
            if index >= len(edits):
                break
            candidate = copy.deepcopy(current)
            if not edits[index](candidate) or candidate == current or not _valid(candidate):
                index += 1
                continue
            calls += 1
            if interesting(candidate):
                current, changed = candidate, True  # same index: the next edit moved into it
            else:
                index += 1
    return _tidy(current), calls


def _tidy(data: Data) -> Data:
    """Leave out empty node label maps: the same scenario, shorter to read."""
    for node in data["nodes"]:
        if not node.get("labels", True):
            del node["labels"]
    return data


def _valid(data: Data) -> bool:
    try:
        scenario_from_data(data)
    except HarnessError:
        return False
    return True


# ---- the edits, biggest first ---------------------------------------------------------------


def _drop(*path: Any) -> Edit:
    return partial(_drop_path, path=path)


def _edits(data: Data) -> Iterator[Edit]:
    workloads = data["workloads"]
    for i in range(len(workloads)):
        yield partial(_drop_workload, index=i)
    for i, wl in enumerate(workloads):
        for j in range(len(wl["podSets"])):
            yield partial(_drop_pod_set, wl=i, index=j)
    yield from _chunk_edits(len(data["nodes"]), _drop_nodes)
    yield from _chunk_edits(len(data.get("usage", [])), _drop_usage)
    yield from _world_edits(data)
    for level in data.get("topology", {}).get("levels", []):
        yield partial(_drop_level, level=level)
    for key in ("featureGates", "queue", "flavor"):
        yield _drop(key)
    for gate in list(data.get("featureGates", {})):
        yield _drop("featureGates", gate)
    for key in ("nodeLabels", "tolerations"):
        yield _drop("flavor", key)
    for i in range(len(data["nodes"])):
        for key in ("taints", "ready", "unschedulable"):
            yield _drop("nodes", i, key)
    for i, wl in enumerate(workloads):
        for j in range(len(wl["podSets"])):
            yield from _pod_set_edits(i, j)
    for i, node in enumerate(data["nodes"]):
        for label in list(node.get("labels", {})):
            yield _drop("nodes", i, "labels", label)
        for name in list(node["allocatable"]):
            yield _drop("nodes", i, "allocatable", name)
    for i, usage in enumerate(data.get("usage", [])):
        for name in list(usage["requests"]):
            yield _drop("usage", i, "requests", name)
    yield from _number_edits(data)


def _world_edits(data: Data) -> Iterator[Edit]:
    """Version-2 cuts: admitted workloads, steps, whole ClusterQueues and flavors (the loader
    refuses a cut that leaves a reference dangling), queue settings, priorities."""
    yield from _chunk_edits(len(data.get("admitted", [])), partial(_drop_items, key="admitted"))
    yield _drop("steps")
    yield from _chunk_edits(len(data.get("steps", [])), partial(_drop_items, key="steps"))
    queues = data.get("clusterQueues", [])
    for key in ("workloads", "admitted"):
        for i, wl in enumerate(data.get(key, [])):
            if len(queues) > 1 and wl.get("queue") != queues[0]["name"]:
                yield partial(_set, path=(key, i, "queue"), value=queues[0]["name"])
    for key in (
        "clusterQueues",
        "resourceFlavors",
        "topologies",
        "workloadPriorityClasses",
        "cohorts",
        "admissionChecks",
    ):
        for i in range(len(data.get(key, []))):
            yield partial(_drop_items, key=key, start=i, stop=i + 1)
    yield _drop("kueueConfig")
    for i in range(len(data.get("cohorts", []))):
        for key in ("parentName", "resourceGroups", "fairSharing"):
            yield _drop("cohorts", i, key)
    for i in range(len(data.get("admissionChecks", []))):
        yield _drop("admissionChecks", i, "active")
    for i, cq in enumerate(queues):
        for key in (
            "cohortName",
            "queueingStrategy",
            "preemption",
            "flavorFungibility",
            "admissionChecks",
            "admissionChecksStrategy",
            "stopPolicy",
            "fairSharing",
        ):
            yield _drop("clusterQueues", i, key)
        for key in ("withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"):
            yield _drop("clusterQueues", i, "preemption", key)
        for g, group in enumerate(cq.get("resourceGroups", [])):
            for f in range(len(group.get("flavors", []))):
                yield partial(_drop_group_flavor, cq=i, group=g, index=f)
    for key in ("workloads", "admitted"):
        for i in range(len(data.get(key, []))):
            yield _drop(key, i, "priorityClass")


def _drop_items(data: Data, key: str, start: int, stop: int) -> bool:
    """Remove items [start, stop) of a top-level list; the key goes when it empties."""
    items = data.get(key, [])
    if start >= len(items):
        return False
    data[key] = items[:start] + items[stop:]
    if not data[key] and key != "workloads":
        del data[key]
    return True


def _drop_group_flavor(data: Data, cq: int, group: int, index: int) -> bool:
    flavors = data["clusterQueues"][cq]["resourceGroups"][group]["flavors"]
    if len(flavors) < 2:
        return False
    del flavors[index]
    return True


def _chunk_edits(length: int, drop: Callable[..., bool]) -> Iterator[Edit]:
    """Remove halves, then quarters, ... then single items (ddmin's granularity)."""
    size = length // 2
    while size >= 1:
        for start in range(0, length, size):
            yield partial(drop, start=start, stop=start + size)
        size //= 2


def _drop_path(data: Data, path: tuple[Any, ...]) -> bool:
    """Delete the mapping key at `path`; False when it is not there."""
    parent: Any = data
    for key in path[:-1]:
        if isinstance(parent, dict):
            if key not in parent:
                return False
        elif not isinstance(parent, list) or key >= len(parent):
            return False
        parent = parent[key]
    if not isinstance(parent, dict) or path[-1] not in parent:
        return False
    del parent[path[-1]]
    return True


def _drop_workload(data: Data, index: int) -> bool:
    if len(data["workloads"]) < 2:
        return False
    del data["workloads"][index]
    return True


def _drop_pod_set(data: Data, wl: int, index: int) -> bool:
    pod_sets = data["workloads"][wl]["podSets"]
    if len(pod_sets) < 2:
        return False
    del pod_sets[index]
    return True


def _drop_nodes(data: Data, start: int, stop: int) -> bool:
    nodes = data["nodes"]
    if stop - start >= len(nodes) or start >= len(nodes):
        return False
    gone = {n["name"] for n in nodes[start:stop]}
    data["nodes"] = nodes[:start] + nodes[stop:]
    if "usage" in data:
        data["usage"] = [u for u in data["usage"] if u["node"] not in gone]
        if not data["usage"]:
            del data["usage"]
    return True


def _drop_usage(data: Data, start: int, stop: int) -> bool:
    usage = data.get("usage", [])
    if start >= len(usage):
        return False
    data["usage"] = usage[:start] + usage[stop:]
    if not data["usage"]:
        del data["usage"]
    return True


def _drop_level(data: Data, level: str) -> bool:
    """Remove a level; requests at that level move to the level below it (or above)."""
    levels: list[str] = data["topology"]["levels"]
    if len(levels) < 2:
        return False
    at = levels.index(level)
    levels.remove(level)
    replacement = levels[min(at, len(levels) - 1)]
    for node in data["nodes"]:
        node.get("labels", {}).pop(level, None)
    for wl in data["workloads"]:
        for pod_set in wl["podSets"]:
            topology = pod_set.get("topology", {})
            for key in ("level", "sliceLevel"):
                if topology.get(key) == level:
                    topology[key] = replacement
    return True


def _pod_set_edits(i: int, j: int) -> Iterator[Edit]:
    base = ("workloads", i, "podSets", j)
    yield _drop(*base, "topology")
    yield partial(_drop_topology_keys, path=base, keys=("sliceLevel", "sliceSize"))
    yield _drop(*base, "topology", "podSetGroupName")
    yield _drop(*base, "tolerations")
    yield _drop(*base, "nodeSelector")
    for resource in ("memory", "cpu", "nvidia.com/gpu"):
        yield _drop(*base, "requests", resource)


def _drop_topology_keys(data: Data, path: tuple[Any, ...], keys: tuple[str, ...]) -> bool:
    """Drop keys that only make sense together (the two slice annotations)."""
    pod_set = data
    for key in path:
        pod_set = pod_set[key]
    topology = pod_set.get("topology", {})
    if not all(k in topology for k in keys):
        return False
    for k in keys:
        del topology[k]
    return True


def _number_edits(data: Data) -> Iterator[Edit]:
    """Smaller counts, sizes and quantities, one value at a time."""
    for path, value in _numbers(data):
        for smaller in _smaller(value):
            yield partial(_set, path=path, value=smaller)


def _numbers(data: Data) -> Iterator[tuple[tuple[Any, ...], Any]]:
    for i, wl in enumerate(data["workloads"]):
        for j, pod_set in enumerate(wl["podSets"]):
            base = ("workloads", i, "podSets", j)
            yield (*base, "count"), pod_set["count"]
            if "sliceSize" in pod_set.get("topology", {}):
                yield (*base, "topology", "sliceSize"), pod_set["topology"]["sliceSize"]
            for name, q in pod_set["requests"].items():
                yield (*base, "requests", name), q
    for i, node in enumerate(data["nodes"]):
        for name, q in node["allocatable"].items():
            yield ("nodes", i, "allocatable", name), q
    for i, usage in enumerate(data.get("usage", [])):
        if "count" in usage:
            yield ("usage", i, "count"), usage["count"]
        for name, q in usage["requests"].items():
            yield ("usage", i, "requests", name), q
    for name, q in data.get("queue", {}).get("nominalQuota", {}).items():
        yield ("queue", "nominalQuota", name), q
    for i, cq in enumerate(data.get("clusterQueues", [])):
        for g, group in enumerate(cq.get("resourceGroups", [])):
            for f, flavor in enumerate(group.get("flavors", [])):
                for r, quota in enumerate(flavor.get("resources", [])):
                    at = ("clusterQueues", i, "resourceGroups", g, "flavors", f, "resources", r)
                    for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        if key in quota:
                            yield (*at, key), quota[key]


def _smaller(value: Any) -> list[Any]:
    """A few smaller values of the same shape: 1, half, minus one."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [v for v in dict.fromkeys((1, value // 2, value - 1)) if 1 <= v < value]
    if isinstance(value, str):
        match = _NUMBER.match(value)
        if match:
            number, unit = int(match.group(1)), match.group(2)
            return [f"{v}{unit}" for v in _smaller(number)]
    return []


def _set(data: Data, path: tuple[Any, ...], value: Any) -> bool:
    parent: Any = data
    for key in path[:-1]:
        parent = parent[key]
    if parent[path[-1]] == value:
        return False
    parent[path[-1]] = value
    return True
