"""Replay a stream on Kueue's scheduler in process (kueue-sim, harness/sim/go) with a fake
clock: the stream becomes one scenario whose steps are its events in time order (a finish
is `delete-workload`, a submission `submit`), Kueue settles after each, and the admissions
it made at each step are read back with the step's moment.

A finish's moment depends on when the job was admitted, so the events come first from the
fit model's replay; when the sim admits a job at another moment, the finishes are taken
again from the sim's own admissions and the scenario is run again, until the events the
sim was given are the ones its admissions imply (at most MAX_ROUNDS runs).

The sim settles after every step, where the fit model's replay settles once after all the
finishes of a moment and once after all its submissions: streams whose events never share a
moment are decided the same way by both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from harness.errors import HarnessError
from harness.replay.engine import (
    FINISH,
    STEP,
    SUBMIT,
    Admission,
    JobRecord,
    Moment,
    Timeline,
    replay,
)
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario, Step

MAX_ROUNDS = 20
Run = Callable[[Scenario], list[dict[str, Outcome]]]
"""The outcomes after each step of a scenario (a backend's Observation.steps)."""
Event = tuple[float, int, int, str]
"""(moment, FINISH | STEP | SUBMIT, stream order (a step's: its index), workload or "")."""


def replay_on(scenario: Scenario, run: Run) -> Timeline:
    """The stream's timeline as `run` (kueue-sim) decides it."""
    order = {w.name: i for i, w in enumerate(scenario.workloads)}
    submits = [(round(w.submit_at or 0.0, 6), SUBMIT, order[w.name], w.name)
               for w in scenario.workloads]  # fmt: skip
    submits += [(round(s.at, 6), STEP, i, "") for i, s in enumerate(scenario.steps)
                if s.at is not None]  # fmt: skip
    finishes = _finishes(replay(scenario).jobs, order)
    for _ in range(MAX_ROUNDS):
        events = sorted(submits + finishes)
        timeline = _timeline(scenario, events, run(_as_steps(scenario, events)))
        implied = _finishes(timeline.jobs, order)
        if implied == finishes:
            return timeline
        finishes = implied
    raise HarnessError(
        f"{scenario.path}: the sim's admission times did not settle in {MAX_ROUNDS} runs"
    )


def _finishes(jobs: Mapping[str, JobRecord], order: Mapping[str, int]) -> list[Event]:
    """Each job's finish: its last admission plus its run time."""
    out = []
    for name, job in jobs.items():
        run_for = job.workload.run_for
        if job.admissions and run_for is not None:
            out.append((round(job.admissions[-1].at + run_for, 6), FINISH, order[name], name))
    return sorted(out)


def _as_steps(scenario: Scenario, events: list[Event]) -> Scenario:
    plain = {w.name: dataclasses.replace(w, submit_at=None, run_for=None)
             for w in scenario.workloads}  # fmt: skip
    steps = tuple(
        Step("submit", plain[name]) if kind == SUBMIT
        else scenario.steps[index] if kind == STEP
        else Step("delete-workload", name)
        for _, kind, index, name in events
    )  # fmt: skip
    return dataclasses.replace(scenario, workloads=(), steps=steps, expect=None, by_version=None)


def _timeline(scenario: Scenario, events: list[Event], after: list[dict[str, Outcome]]) -> Timeline:
    jobs = {w.name: JobRecord(w, round(w.submit_at or 0.0, 6)) for w in scenario.workloads}
    running: dict[str, Outcome] = {}
    moments: list[Moment] = []
    for (at, kind, _, name), outcomes in zip(events, after, strict=True):
        if kind == FINISH and name in running:
            del running[name]
            jobs[name].finished_at = at
        for job_name, outcome in outcomes.items():
            if job_name not in jobs:
                continue
            was = running.get(job_name)
            if was is not None and outcome.admitted and outcome.replaced and not outcome.evicted:
                running[job_name] = outcome  # repaired in place (a node event's second pass)
                jobs[job_name].replacements.append(_admission(at, outcome))
                continue
            again = (
                was is not None
                and outcome.admitted
                and (
                    outcome.placement != was.placement
                    or outcome.preempted != was.preempted
                    or outcome.evicted is not None
                )
            )
            if was is not None and (not outcome.admitted or again):
                job = jobs[job_name]
                (job.evicted_at if outcome.evicted else job.preempted_at).append(at)
                del running[job_name]
            if outcome.admitted and job_name not in running:
                running[job_name] = outcome
                jobs[job_name].admissions.append(_admission(at, outcome))
        pending = tuple(n for n, j in jobs.items() if n not in running and j.finished_at is None
                        and j.submitted_at <= at)  # fmt: skip
        if moments and moments[-1].at == at:
            moments.pop()
        moments.append(Moment(at, tuple(running), pending))
    return Timeline(jobs, moments)


def _admission(at: float, outcome: Outcome) -> Admission:
    placement = {ps: dict(sorted(d.items())) for ps, d in outcome.placement.items()}
    return Admission(at, dict(outcome.flavors), placement)
