"""Kueue's scheduler-performance summary computed on a replay: ClusterQueue usage per
ClusterQueue and per ClusterQueue class, and time to admission per workload class, with the
definitions of Kueue v0.19.2 `test/performance/scheduler` (the figures its checker holds to
`configs/*/rangespec.yaml`).

- A ClusterQueue's record (runner/recorder/recorder.go `recordCQEvent`, `CQState`): at each
  of its status events, `CPUUsed` adds the previous event's usage
  (`status.flavorsUsage[0].resources[0]`, milli-units) times the milliseconds since; it is
  watched from its first event (its creation) to its last (its last status change).
  Here a ClusterQueue is created at the stream's 0 (the world exists before the first
  submission, as Kueue's generator creates the queues before their workloads) and its status
  changes when one of its workloads is submitted, admitted, preempted or evicted, or finishes.
- Per ClusterQueue class (`WriteSummary`, `CQGroupSummary`; the class is the ClusterQueue's
  label kueue.x-k8s.io/performance-scheduler-class): `cpuUsed` and `nominalQuota`
  (`spec.resourceGroups[0].flavors[0].resources[0]`, milli-units) summed over its queues,
  watched from the earliest first event to the latest last one, `cpuAverageUsage` = cpuUsed /
  that time in ms (Go's integer division); checker/checker_test.go's usage in percent =
  cpuUsed x 100 / (nominalQuota x ms), held to `clusterQueueClassesMinUsage`.
- Per workload class (`recordWLEvent`, `WorkloadsClassSummary`): `count`, `totalEvictions`
  (each change to Evicted: preemptions and node-failure evictions), and
  `averageTimeToAdmissionMs` = the sum over its workloads of (latest admission - creation)
  in whole ms, divided by `count` (integer division); a workload never admitted adds 0, as
  the recorder's zero does. `averageTimeToFinishMs` likewise from the finish. The checker
  holds `averageTimeToAdmissionMs` to `wlClassesMaxAvgTimeToAdmissionMs`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from harness.replay.engine import Admission, JobRecord, Timeline
from harness.replay.figures import placement_at
from harness.scenario.model import ClusterQueue, Scenario

NO_CLASS = "default"
"""The class of a workload or ClusterQueue the stream gives none (Kueue's recorder groups
those under the empty label value)."""
QUEUE_CLASS_PREFIX = "ClusterQueue/"
"""A ClusterQueue's class in a stream's `classes` is under `ClusterQueue/<name>`; a workload's
under its name, which cannot hold a '/'."""


def queue_class_key(name: str) -> str:
    return QUEUE_CLASS_PREFIX + name


@dataclass(frozen=True)
class QueueRecord:
    """One ClusterQueue as Kueue's recorder keeps it (`CQState`), in stream seconds."""

    name: str
    nominal_quota: int
    """Milli-units of the first resource of its first resource group's first flavor."""
    used: Fraction
    """That resource's usage integrated over time: milli-units x seconds."""
    first: float
    last: float

    def usage(self) -> Fraction | None:
        """In percent of its quota over its own watch (None: no quota or no time)."""
        return _percent(self.used, self.nominal_quota, exact(self.last) - exact(self.first))


def queue_records(scenario: Scenario, timeline: Timeline) -> dict[str, QueueRecord]:
    """Every ClusterQueue of the world, in the world's order."""
    last = _last_changes(timeline.jobs.values())
    measured = {cq.name: _measured(cq) for cq in scenario.cluster_queues}
    used = {name: Fraction(0) for name in measured}
    held: dict[tuple[str, float], Fraction] = {}
    for now, after in itertools.pairwise(timeline.moments):
        for name in now.running:
            job = timeline.jobs[name]
            queue = job.workload.queue
            admission = placement_at(job, now.at)
            end = min(after.at, last.get(queue, 0.0))
            if measured.get(queue) is None or admission is None or end <= now.at:
                continue
            key = (name, admission.at)
            if key not in held:
                flavor, resource, _ = measured[queue] or ("", "", 0)
                held[key] = _held(job, admission, flavor, resource)
            used[queue] += held[key] * (exact(end) - exact(now.at))
    return {
        name: QueueRecord(name, m[2] if m else 0, used[name], 0.0, last.get(name, 0.0))
        for name, m in measured.items()
    }


def _measured(cq: ClusterQueue) -> tuple[str, str, int] | None:
    """(flavor, resource, nominal quota in milli-units) the recorder reads, None without."""
    if not cq.resource_groups or not cq.resource_groups[0].flavors:
        return None
    first = cq.resource_groups[0].flavors[0]
    if not first.resources:
        return None
    quota = first.resources[0]
    return first.name, quota.name, math.ceil(quota.nominal * 1000)  # Quantity.MilliValue


def _held(job: JobRecord, admission: Admission, flavor: str, resource: str) -> Fraction:
    """What the job holds of (flavor, resource) while it runs under `admission`."""
    total = Fraction(0)
    for ps in job.workload.pod_sets:
        if flavor not in admission.flavors.get(ps.name, "").split(","):
            continue
        if resource == "pods":
            total += ps.count
        elif resource in ps.requests:
            total += ps.requests[resource] * ps.count
    return 1000 * total


def _last_changes(jobs: Iterable[JobRecord]) -> dict[str, float]:
    """Per ClusterQueue: the last moment one of its workloads changed its status."""
    out: dict[str, float] = {}
    for job in jobs:
        finished = [job.finished_at] if job.finished_at is not None else []
        times = [job.submitted_at, *(a.at for a in job.admissions), *job.preempted_at,
                 *job.evicted_at, *finished]  # fmt: skip
        queue = job.workload.queue
        out[queue] = max(out.get(queue, 0.0), *times)
    return out


def cluster_queue_usage(records: Mapping[str, QueueRecord]) -> dict[str, float | None]:
    """Per ClusterQueue: its usage in percent, rounded to 0.01."""
    return {name: _rounded(r.usage(), 2) for name, r in records.items()}


def cluster_queue_classes(
    records: Mapping[str, QueueRecord], classes: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """recorder.go's `clusterQueueClasses` per class, with the checker's `usage` (%)."""
    groups: dict[str, list[QueueRecord]] = {}
    for name, record in records.items():
        groups.setdefault(classes.get(queue_class_key(name)) or NO_CLASS, []).append(record)
    out = {}
    for name, group in sorted(groups.items()):
        first, last = min(r.first for r in group), max(r.last for r in group)
        used = _milliseconds(sum((r.used for r in group), Fraction(0)))
        quota = sum(r.nominal_quota for r in group)
        watched = _milliseconds(exact(last) - exact(first))
        out[name] = {
            "cpuUsed": used,
            "cpuAverageUsage": used // watched if watched > 0 else 0,
            "nominalQuota": quota,
            "firstEventTime": first,
            "lastEventTime": last,
            "usage": _rounded(_percent(Fraction(used), quota, Fraction(watched)), 4),
        }
    return out


def workload_classes(
    jobs: Mapping[str, JobRecord], classes: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    """recorder.go's `workloadClasses`: count, evictions, mean ms to admission and finish."""
    out: dict[str, dict[str, int]] = {}
    totals = ("count", "totalEvictions", "totalTimeToAdmissionMs", "totalTimeToFinishMs")
    for name, job in jobs.items():
        figures = out.setdefault(class_of(name, job, classes), dict.fromkeys(totals, 0))
        figures["count"] += 1
        figures["totalEvictions"] += len(job.preempted_at) + len(job.evicted_at)
        if job.admissions:
            figures["totalTimeToAdmissionMs"] += _ms_since(job.submitted_at, job.admissions[-1].at)
        if job.finished_at is not None:
            figures["totalTimeToFinishMs"] += _ms_since(job.submitted_at, job.finished_at)
    return {
        name: {
            "count": f["count"],
            "totalEvictions": f["totalEvictions"],
            "averageTimeToAdmissionMs": f["totalTimeToAdmissionMs"] // f["count"],
            "averageTimeToFinishMs": f["totalTimeToFinishMs"] // f["count"],
        }
        for name, f in sorted(out.items())
    }


def class_of(name: str, job: JobRecord, classes: Mapping[str, str]) -> str:
    """A workload's class: the stream's, else its priority class, else `default`."""
    return classes.get(name) or job.workload.priority_class or NO_CLASS


def perf_summary(
    scenario: Scenario, timeline: Timeline, classes: Mapping[str, str]
) -> tuple[dict[str, float | None], dict[str, Any]]:
    """The summary's `clusterQueueUsage` and `kueuePerf` (recorder.go's summary.yaml)."""
    records = queue_records(scenario, timeline)
    return cluster_queue_usage(records), {
        "clusterQueueClasses": cluster_queue_classes(records, classes),
        "workloadClasses": workload_classes(timeline.jobs, classes),
    }


def _ms_since(start: float, end: float) -> int:
    """time.Duration.Milliseconds of end - start (stream times are kept to the microsecond)."""
    return _milliseconds(exact(end) - exact(start))


def _milliseconds(seconds: Fraction) -> int:
    return math.floor(seconds * 1000)


def exact(at: float) -> Fraction:
    """A moment of the stream (kept to the microsecond) as the decimal it is: 0.3 s is 300 ms."""
    return Fraction(repr(at))


def _percent(used: Fraction, quota: int, span: Fraction) -> Fraction | None:
    """used x 100 / (quota x span), the checker's usage (None where it refuses the data)."""
    if not quota or span <= 0:
        return None
    return 100 * used / (quota * span)


def _rounded(value: Fraction | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)
