"""Figures of a replayed stream: time to admission per ClusterQueue (p50/p90/p99/max), GPU
utilisation over time, preemptions, workloads never admitted, and Kueue's perf-test summary
(harness/replay/perf_summary.py)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from harness.replay.engine import JobRecord, Timeline
from harness.replay.figures import fragmentation, gpu_series
from harness.replay.perf_summary import class_of, perf_summary
from harness.scenario.model import Scenario


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (the smallest value with at least `share` of them at or
    below it): a value some workload really waited, never an interpolation."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def waits(jobs: Mapping[str, JobRecord]) -> dict[str, float]:
    """Seconds from submission to first admission, per admitted workload."""
    return {n: j.admissions[0].at - j.submitted_at for n, j in jobs.items() if j.admissions}


def wait_figures(values: Sequence[float]) -> dict[str, float | int]:
    if not values:
        return {"admitted": 0}
    return {
        "admitted": len(values),
        "p50": percentile(values, 0.5),
        "p90": percentile(values, 0.9),
        "p99": percentile(values, 0.99),
        "max": max(values),
        "mean": round(sum(values) / len(values), 3),
    }


def gpu_utilisation(scenario: Scenario, timeline: Timeline) -> float | None:
    """Allocated GPUs over allocatable GPUs (those of Ready nodes, as the stream's node
    events change them), both integrated over time from the first submission to the last
    event (None when the cluster has no GPUs or the stream takes no time)."""
    points = gpu_series(scenario, timeline)
    used_time = allocatable_time = Fraction(0)
    for now, after in itertools.pairwise(points):
        used_time += now.gpus * Fraction(after.at - now.at)
        allocatable_time += now.allocatable * Fraction(after.at - now.at)
    return round(float(used_time / allocatable_time), 4) if allocatable_time else None


def summary(
    scenario: Scenario, timeline: Timeline, classes: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The stream's figures, as `replay --format json` prints them under "summary";
    `classes`: each workload's class (default: its priorityClass, else "default") and each
    ClusterQueue's (perf_summary.queue_class_key; default "default")."""
    jobs = timeline.jobs
    waited = waits(jobs)
    queues = sorted({j.workload.queue for j in jobs.values()})
    class_of_job = {n: class_of(n, j, classes or {}) for n, j in jobs.items()}
    usage, kueue_perf = perf_summary(scenario, timeline, classes or {})
    finished = [j.finished_at for j in jobs.values() if j.finished_at is not None]
    return {
        "jobs": len(jobs),
        "timeToAdmission": wait_figures(list(waited.values())),
        "timeToAdmissionByClusterQueue": {
            q: wait_figures([w for n, w in waited.items() if jobs[n].workload.queue == q])
            for q in queues
        },
        "timeToAdmissionByClass": {
            c: wait_figures([w for n, w in waited.items() if class_of_job[n] == c])
            for c in sorted(set(class_of_job.values()))
        },
        "preemptions": sum(len(j.preempted_at) for j in jobs.values()),
        "neverAdmitted": sorted(n for n, j in jobs.items() if not j.admissions),
        "gpuUtilisation": gpu_utilisation(scenario, timeline),
        "lastFinish": max(finished) if finished else None,
        "maxPending": max((len(m.pending) for m in timeline.moments), default=0),
        "clusterQueueUsage": usage,
        "kueuePerf": kueue_perf,
        "fragmentation": fragmentation(scenario, timeline),
    }
