"""A replay on a real cluster (harness/runner/streaming.py) as the fit model's Timeline, so the
same figures (harness.replay.summary) come out of it: the runner reports each job's record in
the replay's JSON form, in stream seconds; the moments between are rebuilt from them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.replay.engine import Admission, JobRecord, Moment, Timeline
from harness.scenario.model import Scenario


def timeline_of(scenario: Scenario, jobs: Mapping[str, Mapping[str, Any]]) -> Timeline:
    """The Timeline of the jobs' records (`{"submittedAt", "admissions", "preemptedAt",
    "finishedAt"}` each): who runs and who waits after every moment something happened."""
    records = {}
    for w in scenario.workloads:
        job = jobs[w.name]
        records[w.name] = JobRecord(
            w,
            float(job["submittedAt"]),
            [_admission(a) for a in job["admissions"]],
            [float(t) for t in job["preemptedAt"]],
            None if job["finishedAt"] is None else float(job["finishedAt"]),
            [float(t) for t in job.get("evictedAt", [])],
            [_admission(a) for a in job.get("replacements", [])],
        )
    spans = {name: _spans(job) for name, job in records.items()}
    times = sorted({t for job in records.values() for t in _moments(job)})
    moments = []
    for at in times:
        running = tuple(n for n, s in spans.items() if any(a <= at < b for a, b in s))
        pending = tuple(
            n
            for n, job in records.items()
            if job.submitted_at <= at
            and n not in running
            and (job.finished_at is None or job.finished_at > at)
        )
        moments.append(Moment(at, running, pending))
    return Timeline(records, moments)


def _admission(a: Mapping[str, Any]) -> Admission:
    return Admission(
        float(a["at"]), dict(a["flavors"]), {p: dict(d) for p, d in a["placement"].items()}
    )


def _spans(job: JobRecord) -> list[tuple[float, float]]:
    """[admitted, ended) of each admission: ended by the next preemption or node-failure
    eviction, else the finish."""
    out = []
    ends = sorted([*job.preempted_at, *job.evicted_at])
    for i, admission in enumerate(job.admissions):
        if i < len(ends):
            end = ends[i]
        else:
            end = job.finished_at if job.finished_at is not None else float("inf")
        out.append((admission.at, end))
    return out


def _moments(job: JobRecord) -> list[float]:
    out = [job.submitted_at, *(a.at for a in job.admissions), *job.preempted_at]
    out += [*job.evicted_at, *(r.at for r in job.replacements)]
    return out if job.finished_at is None else [*out, job.finished_at]
