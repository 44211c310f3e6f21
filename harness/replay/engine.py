"""Replay a stream of workloads on the fit model: an event-driven clock over Kueue's rules.

At every moment something happens (a submission, a finish) the cluster is what it is then:
the workloads running are Kueue workloads admitted before (the contract's `admitted:`, with
the flavors and nodes they got), those waiting are submitted in queue order, and the fit
model settles it as Kueue would (admissions, preemptions, requeues). A finished workload
frees its quota and nodes at its finish time (Kueue requeues the inadmissible ones on that
change: pkg/cache/queue manager.go QueueInadmissibleWorkloads). A preempted workload's Job is
suspended and its pods deleted; Kueue requeues it ordered by its eviction time
(Configuration waitForPodsReady.requeuingStrategy.timestamp defaults to Eviction) and, when
admitted again, it runs for its full `runFor` from the start (Kueue does not checkpoint).
Times are the stream's seconds; Kueue's own 1 s scheduling batches are not added (each
decision is taken at the moment of the event that allows it).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.errors import HarnessError
from harness.fit import FitResult, fit
from harness.results.outcome import Outcome
from harness.scenario.model import AdmittedPodSet, AdmittedWorkload, Scenario, Workload

Predict = Callable[[Scenario], FitResult]


@dataclass(frozen=True)
class Admission:
    at: float
    flavors: dict[str, str]
    placement: dict[str, dict[str, int]]

    def to_json(self) -> dict[str, object]:
        return {"at": self.at, "flavors": self.flavors, "placement": self.placement}


@dataclass
class JobRecord:
    """What happened to one workload of the stream."""

    workload: Workload
    submitted_at: float
    admissions: list[Admission] = field(default_factory=list)
    preempted_at: list[float] = field(default_factory=list)
    finished_at: float | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "submittedAt": self.submitted_at,
            "admissions": [a.to_json() for a in self.admissions],
            "preemptedAt": self.preempted_at,
            "finishedAt": self.finished_at,
        }


@dataclass(frozen=True)
class Moment:
    """The cluster after the decisions at `at`: who runs, who waits."""

    at: float
    running: tuple[str, ...]
    pending: tuple[str, ...]


@dataclass
class Timeline:
    jobs: dict[str, JobRecord]
    moments: list[Moment]


def replay(scenario: Scenario, predict: Predict = fit) -> Timeline:
    """The stream's timeline: every workload's submission, admissions, preemptions, finish."""
    jobs = {w.name: JobRecord(w, w.submit_at or 0.0) for w in scenario.workloads}
    clock = _Clock(scenario, jobs, predict)
    return clock.run()


class _Clock:
    def __init__(self, scenario: Scenario, jobs: dict[str, JobRecord], predict: Predict) -> None:
        # The world without its workloads: running ones become `admitted:` entries.
        self.base = dataclasses.replace(scenario, workloads=(), expect=None, steps=())
        self.jobs = jobs
        self.predict = predict
        self.pending: list[str] = []
        self.running: dict[str, tuple[Admission, float | None]] = {}
        self.events: list[tuple[float, int, str, str]] = []  # (at, kind, order, name)
        order = list(jobs)
        for name, job in jobs.items():
            heapq.heappush(self.events, (job.submitted_at, 1, f"{order.index(name):09d}", name))
        self.moments: list[Moment] = []

    def run(self) -> Timeline:
        while self.events:
            at = self.events[0][0]
            while self.events and self.events[0][0] == at:
                _, kind, _, name = heapq.heappop(self.events)
                self._happen(at, kind, name)
            self._decide(at)
        return Timeline(self.jobs, self.moments)

    def _happen(self, at: float, kind: int, name: str) -> None:
        if kind == 0:  # a finish (before submissions at the same second: capacity first)
            admission, finish = self.running.get(name, (None, None))
            if admission is not None and finish == at:
                del self.running[name]
                self.jobs[name].finished_at = at
        else:
            self.pending.append(name)

    def _decide(self, at: float) -> None:
        outcomes = self.predict(self._state()).outcomes
        for name in list(self.running):
            self._after_running(at, name, outcomes.get(name))
        for name in list(self.pending):
            outcome = outcomes.get(name)
            if outcome is not None and outcome.admitted:
                self.pending.remove(name)
                self._admit(at, name, outcome)
        self.moments.append(Moment(at, tuple(self.running), tuple(self.pending)))

    def _after_running(self, at: float, name: str, outcome: Outcome | None) -> None:
        """A running workload the settled state shows preempted: requeued, or readmitted."""
        if outcome is None or not outcome.preempted:
            return
        del self.running[name]
        self.jobs[name].preempted_at.append(at)
        if outcome.admitted:
            self._admit(at, name, outcome)
        else:
            self.pending.append(name)  # ordered by its eviction time

    def _admit(self, at: float, name: str, outcome: Outcome) -> None:
        w = self.jobs[name].workload
        flavors = {ps.name: _flavor(self.base, w, ps.name, outcome) for ps in w.pod_sets}
        admission = Admission(
            at, flavors, {ps: dict(sorted(d.items())) for ps, d in outcome.placement.items()}
        )
        run_for = self.jobs[name].workload.run_for
        finish = None if run_for is None else at + run_for
        self.running[name] = (admission, finish)
        self.jobs[name].admissions.append(admission)
        if finish is not None:
            heapq.heappush(self.events, (finish, 0, "", name))

    def _state(self) -> Scenario:
        """The cluster now: running workloads as admitted ones, waiting ones in queue order."""
        admitted = tuple(self._admitted(n, a) for n, (a, _) in self.running.items())
        waiting = tuple(_plain(self.jobs[n].workload) for n in self.pending)
        return dataclasses.replace(self.base, admitted=admitted, workloads=waiting)

    def _admitted(self, name: str, admission: Admission) -> AdmittedWorkload:
        w = self.jobs[name].workload
        pod_sets = tuple(
            AdmittedPodSet(
                ps,
                admission.flavors.get(ps.name, ""),
                admission.placement.get(ps.name) or None,
            )
            for ps in w.pod_sets
        )
        return AdmittedWorkload(w.name, w.queue, pod_sets, w.priority_class)


def _flavor(scenario: Scenario, w: Workload, pod_set: str, outcome: Outcome) -> str:
    """The flavor a pod set was admitted on: as the engine says, else the only flavor its
    ClusterQueue offers for what it requests (a version-1 file's one flavor)."""
    if pod_set in outcome.flavors:
        return outcome.flavors[pod_set]
    requests = next(ps.requests for ps in w.pod_sets if ps.name == pod_set)
    offered = {
        f.name
        for group in scenario.cluster_queue(w.queue).resource_groups
        if set(requests) & set(group.covered)
        for f in group.flavors
    }
    if len(offered) != 1:
        raise ReplayError(
            f"{scenario.path}: workload {w.name}: the engine did not say which flavor pod set "
            f"{pod_set} got, and its ClusterQueue offers {len(offered)}"
        )
    return offered.pop()


class ReplayError(HarnessError):
    """The stream cannot be replayed as given (the message says why)."""


def _plain(w: Workload) -> Workload:
    """The workload as the fit model takes it: no stream times."""
    return dataclasses.replace(w, submit_at=None, run_for=None)
