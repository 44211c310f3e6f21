"""Figures over the stream's time: GPUs allocated and allocatable, and fragmentation (per
topology level: the largest free slot, how many domains could take a job of N GPUs) at
evenly spaced moments. ClusterQueue usage as Kueue's scheduler-performance test defines it
is harness/replay/perf_summary.py's."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from harness.k8s.quantity import kueue_units
from harness.replay.engine import Admission, JobRecord, Timeline
from harness.scenario.model import HOSTNAME, Node, Scenario

GPU_SUFFIX = "/gpu"
"""Extended resources named like nvidia.com/gpu or amd.com/gpu count as GPUs."""
SAMPLES = 12
"""Moments at which fragmentation is shown (evenly spaced over the stream)."""


def _admission_at(job: JobRecord, at: float) -> Admission | None:
    """The job's placement at `at`: its latest admission, or a node event's repair of it."""
    current = None
    for admission in sorted([*job.admissions, *job.replacements], key=lambda a: a.at):
        if admission.at <= at:
            current = admission
    return current


def sample_times(timeline: Timeline, count: int = SAMPLES) -> list[float]:
    """`count` evenly spaced moments from the stream's first event to its last: where the
    fragmentation is measured and, by default, where the HTML timeline draws the rack map."""
    moments = timeline.moments
    return spaced(moments[0].at, moments[-1].at, count) if moments else []


def spaced(first: float, last: float, count: int = SAMPLES) -> list[float]:
    """`count` evenly spaced moments from `first` to `last` (one when they are equal)."""
    if last <= first or count < 2:
        return [first]
    return [first + (last - first) * i / (count - 1) for i in range(count)]


def placement_at(job: JobRecord, at: float) -> Admission | None:
    """Where the job runs at `at` if it runs: its latest admission or repair (None before
    its first admission; the caller knows from the moment whether it still runs)."""
    return _admission_at(job, at)


@dataclass(frozen=True)
class Point:
    """The cluster from `at` until the next point: GPUs its running jobs hold, GPUs of its
    Ready nodes then, jobs waiting."""

    at: float
    gpus: Fraction
    allocatable: Fraction
    pending: int


def gpu_series(scenario: Scenario, timeline: Timeline) -> list[Point]:
    """GPUs allocated and allocatable and the queue length after each event, a step
    function over the stream (GPU utilisation, the HTML timeline's chart)."""
    held: dict[str, Fraction] = {}
    capacity = allocatable_series(scenario)
    times = [at for at, _ in capacity]
    out = []
    for moment in timeline.moments:
        used = Fraction(0)
        for name in moment.running:
            if name not in held:
                job = timeline.jobs[name].workload
                held[name] = sum((_gpus(ps.requests) * ps.count for ps in job.pod_sets),
                                 Fraction(0))  # fmt: skip
            used += held[name]
        allocatable = capacity[max(bisect.bisect_right(times, moment.at) - 1, 0)][1]
        out.append(Point(moment.at, used, allocatable, len(moment.pending)))
    return out


def allocatable_series(scenario: Scenario) -> list[tuple[float, Fraction]]:
    """GPUs of the Ready nodes from the start, and after each of the stream's node events
    (timed steps: a node added or deleted, NotReady or Ready again)."""
    nodes = {n.name: n for n in scenario.nodes}
    ready = {n.name: n.ready for n in scenario.nodes}

    def total() -> Fraction:
        return sum((_gpus(n.allocatable) for n in nodes.values() if ready[n.name]), Fraction(0))

    out = [(float("-inf"), total())]
    for step in scenario.steps:
        if step.at is None:
            continue
        target = step.target
        if step.action == "add-node" and isinstance(target, Node):
            nodes[target.name], ready[target.name] = target, target.ready
        elif step.action == "delete-node":
            nodes.pop(str(target), None)
        elif step.action in ("node-not-ready", "node-ready"):
            ready[str(target)] = step.action == "node-ready"
        else:
            continue
        out.append((step.at, total()))
    return out


def allocatable_gpus(scenario: Scenario) -> Fraction:
    """GPUs of the world's Ready nodes at the start."""
    return allocatable_series(scenario)[0][1]


def fragmentation(scenario: Scenario, timeline: Timeline) -> dict[str, Any]:
    """Per TAS flavor's topology and level, at SAMPLES moments: the most free GPUs one domain
    has (`largestFree`) and how many domains have at least N free (`domainsWith`: N = 1, 2,
    4, ... up to the largest domain of the level). Free GPUs of a node: allocatable on a
    Ready node, less pods outside Kueue and the pods Kueue placed there."""
    moments = timeline.moments
    if not moments:
        return {}
    times = sample_times(timeline)
    starts = [m.at for m in moments]
    out: dict[str, Any] = {}
    for flavor in scenario.resource_flavors:
        topology = scenario.topology_of(flavor)
        if topology is None:
            continue
        nodes = [n for n in scenario.nodes if n.ready and flavor in scenario.flavors_of(n)]
        capacity = {n.name: _gpus(n.allocatable) for n in nodes}
        if not any(capacity.values()):
            continue
        for n in scenario.usage:
            if n.node in capacity:
                capacity[n.node] -= _gpus(n.requests) * n.count
        per_level: dict[str, list[dict[str, Any]]] = {lv: [] for lv in topology.levels}
        for at in times:
            moment = moments[bisect.bisect_right(starts, at) - 1]
            free = dict(capacity)
            for name in moment.running:
                _take(free, timeline.jobs[name], at, flavor.name, nodes, topology.levels)
            for index, level in enumerate(topology.levels):
                per_level[level].append({"at": round(at, 3),
                                         **_level_figures(nodes, free, topology.levels[: index + 1],
                                                          capacity)})  # fmt: skip
        out[flavor.name] = per_level
    return out


def _take(
    free: dict[str, Fraction],
    job: JobRecord,
    at: float,
    flavor: str,
    nodes: list[Node],
    levels: tuple[str, ...],
) -> None:
    admission = _admission_at(job, at)
    if admission is None:
        return
    for ps in job.workload.pod_sets:
        if flavor not in admission.flavors.get(ps.name, "").split(","):
            continue
        per_pod = _gpus(ps.requests)
        for where, count in admission.placement.get(ps.name, {}).items():
            if where in free:
                free[where] -= per_pod * count
            elif levels[-1] != HOSTNAME:  # a lowest-level domain: its nodes, in order
                _take_from_domain(free, nodes, levels[-1], where, per_pod * count)


def _take_from_domain(
    free: dict[str, Fraction], nodes: list[Node], level: str, value: str, gpus: Fraction
) -> None:
    for node in nodes:
        if gpus <= 0:
            return
        if node.labels.get(level) == value:
            taken = min(gpus, max(free[node.name], Fraction(0)))
            free[node.name] -= taken
            gpus -= taken


def _level_figures(
    nodes: list[Node], free: Mapping[str, Fraction], path: tuple[str, ...],
    capacity: Mapping[str, Fraction],
) -> dict[str, Any]:  # fmt: skip
    domains: dict[tuple[str, ...], Fraction] = {}
    size: dict[tuple[str, ...], Fraction] = {}
    for node in nodes:
        key = tuple(node.labels.get(lv, "") for lv in path)
        domains[key] = domains.get(key, Fraction(0)) + max(free[node.name], Fraction(0))
        size[key] = size.get(key, Fraction(0)) + max(capacity[node.name], Fraction(0))
    largest = max(domains.values(), default=Fraction(0))
    biggest = max(size.values(), default=Fraction(0))
    sizes, n = [], 1
    while n <= biggest:
        sizes.append(n)
        n *= 2
    return {
        "largestFree": _number(largest),
        "domainsWith": {str(n): sum(1 for f in domains.values() if f >= n) for n in sizes},
    }


def _gpus(resources: Mapping[str, Fraction]) -> Fraction:
    return sum((Fraction(kueue_units(r, q)) for r, q in resources.items()
                if r.endswith(GPU_SUFFIX)), Fraction(0))  # fmt: skip


def _number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)
