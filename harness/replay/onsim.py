"""Replay a stream on Kueue's scheduler in process (kueue-sim, harness/sim/go) with a fake
clock: one kueue-sim session (harness/sim/go/session.go) keeps the stream's world running,
and this clock gives it the stream's events in time order, one at a time, as the fit
model's replay (harness/replay/engine.py) takes them: a submission is a `submit` step, a
node event its step, a finish a `delete-workload` step (the Job completes: its Workload
goes, its quota and nodes are freed). Kueue settles after each, and the outcomes that step
changed are read back with the step's moment; a job Kueue admits gets its finish at the
admission's moment plus its `runFor`, unless Kueue preempts or evicts it before.

The sim settles after every step, where the fit model's replay settles once after all the
finishes of a moment and once after all its submissions: streams whose events never share a
moment are decided the same way by both.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from harness.replay.engine import (
    FINISH,
    STEP,
    SUBMIT,
    Admission,
    JobRecord,
    Moment,
    Timeline,
)
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario, Step, Workload


class Stepper(Protocol):
    """A running world that takes one step and answers the outcomes it changed."""

    def step(self, step: Step) -> dict[str, Outcome]: ...


Open = Callable[[Scenario, Sequence[Workload]], AbstractContextManager[Stepper]]
"""Opens a world (a scenario without workloads or steps) on the sim, told the workloads the
stream will submit: SimBackend.session."""
Event = tuple[float, int, int, str]
"""(moment, FINISH | STEP | SUBMIT, stream order (a step's: its index), workload or "")."""


def replay_on(scenario: Scenario, open_world: Open) -> Timeline:
    """The stream's timeline as kueue-sim decides it."""
    order = {w.name: i for i, w in enumerate(scenario.workloads)}
    plain = {w.name: dataclasses.replace(w, submit_at=None, run_for=None)
             for w in scenario.workloads}  # fmt: skip
    events: list[Event] = [(round(w.submit_at or 0.0, 6), SUBMIT, order[w.name], w.name)
                           for w in scenario.workloads]  # fmt: skip
    events += [(round(s.at, 6), STEP, i, "") for i, s in enumerate(scenario.steps)
               if s.at is not None]  # fmt: skip
    heapq.heapify(events)
    tape = _Tape(scenario)
    world = dataclasses.replace(scenario, workloads=(), steps=(), expect=None, by_version=None)
    with open_world(world, tuple(plain.values())) as sim:
        while events:
            at, kind, index, name = heapq.heappop(events)
            if kind == FINISH and not tape.finishes(name, at):
                continue  # preempted or evicted since the admission that set this finish
            step = (
                Step("submit", plain[name]) if kind == SUBMIT
                else scenario.steps[index] if kind == STEP
                else Step("delete-workload", name)
            )  # fmt: skip
            for job, finish in tape.apply(at, kind, name, sim.step(step)):
                heapq.heappush(events, (finish, FINISH, order[job], job))
    return tape.timeline()


class _Tape:
    """The timeline, written from the outcomes each event changed."""

    def __init__(self, scenario: Scenario) -> None:
        self.jobs = {w.name: JobRecord(w, round(w.submit_at or 0.0, 6)) for w in scenario.workloads}
        self.running: dict[str, Outcome] = {}
        self.finish: dict[str, float] = {}
        self.moments: list[Moment] = []

    def finishes(self, name: str, at: float) -> bool:
        """Whether the job still runs on the admission whose finish is `at`."""
        return name in self.running and self.finish.get(name) == at

    def apply(
        self, at: float, kind: int, name: str, outcomes: Mapping[str, Outcome]
    ) -> list[tuple[str, float]]:
        """Record the event's changes; returns the (job, finish) of each job it admitted
        that has a run time."""
        jobs, running = self.jobs, self.running
        started: list[tuple[str, float]] = []
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
                run_for = jobs[job_name].workload.run_for
                if run_for is not None:
                    self.finish[job_name] = round(at + run_for, 6)
                    started.append((job_name, self.finish[job_name]))
        pending = tuple(n for n, j in jobs.items() if n not in running and j.finished_at is None
                        and j.submitted_at <= at)  # fmt: skip
        if self.moments and self.moments[-1].at == at:
            self.moments.pop()
        self.moments.append(Moment(at, tuple(running), pending))
        return started

    def timeline(self) -> Timeline:
        return Timeline(self.jobs, self.moments)


def _admission(at: float, outcome: Outcome) -> Admission:
    placement = {ps: dict(sorted(d.items())) for ps, d in outcome.placement.items()}
    return Admission(at, dict(outcome.flavors), placement)
