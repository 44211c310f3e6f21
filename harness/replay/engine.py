"""Replay a stream of workloads on the fit model: an event-driven clock over Kueue's rules.

One fit-model engine (harness.fit.engine.Engine: Kueue's queues, cache and scheduling
cycles) lives through the whole stream, as Kueue does: a submission joins its ClusterQueue's
queue and the cycles run until nothing changes; a finish deletes the workload, which frees
its quota and nodes and requeues the parked workloads of its cohort (pkg/cache/queue
manager.go QueueInadmissibleWorkloads), and the cycles run again. Events at the same moment
are finishes first (capacity first), settled, then the stream's node events (timed steps,
harness/replay/timed_steps.py: Kueue's node-failure handling reacts as after a step), then
the submissions of that moment together (their queues order them: priority, then stream
order), settled. A preempted workload's Job
is suspended and its pods deleted; it is requeued with its creation timestamp as queue key
(workload.Ordering.GetQueueOrderTimestamp uses the eviction time only for PodsReadyTimeout
and admission-check evictions) and, admitted again,
runs its full `runFor` from the start (Kueue does not checkpoint; Kueue's perf-test runner
also counts the run time from the latest admission). Kueue's 1 s scheduling batches are not
added: each decision is taken at the moment of the event that allows it.

Where Kueue breaks a tie at random, the stream is replayed with the ties broken the other
way; a different timeline raises Nondeterministic, as `fit` does for one moment. Where its
cycles repeat with changing messages (a StrictFIFO head's flavor scan), the stream is
replayed from each position the loop may stand at when the next event comes
(_every_loop_position); only a different timeline raises.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Hashable
from dataclasses import dataclass, field

from harness.fit import pods_ready
from harness.fit.engine import Engine, check_supported
from harness.fit.faults import PerLeaf, StepReport
from harness.fit.snapshot import Holding
from harness.fit.ties import Loop, Nondeterministic, TieBreak
from harness.scenario.model import Scenario, Workload

FINISH, STEP, SUBMIT = 0, 1, 2
"""Event kinds, in the order they happen at one moment (a step: a node event, timed_steps)."""


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
    evicted_at: list[float] = field(default_factory=list)
    """Evicted by a node failure (reason NodeFailures), not by preemption."""
    replacements: list[Admission] = field(default_factory=list)
    """A failed node replaced while the job runs: its whole placement after each repair."""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "submittedAt": self.submitted_at,
            "admissions": [a.to_json() for a in self.admissions],
            "preemptedAt": self.preempted_at,
            "finishedAt": self.finished_at,
        }
        if self.evicted_at:  # only a stream with node events has them
            out["evictedAt"] = self.evicted_at
        if self.replacements:
            out["replacements"] = [r.to_json() for r in self.replacements]
        return out


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


LOOP_RUNS = 64
"""At most this many replays to try where repeating cycles stand at each event."""


def replay(scenario: Scenario) -> Timeline:
    """The stream's timeline: every workload's submission, admissions, preemptions, finish."""
    first = _Clock(scenario, TieBreak(offsets=())).run()
    want = _jobs_json(first[0])
    if first[1].loops:
        _every_loop_position(scenario, first[1], want)
    if first[1].seen:
        again = _Clock(scenario, TieBreak(reverse=True, offsets=())).run()
        if _jobs_json(again[0]) != want:
            raise Nondeterministic(
                f"{scenario.path}: the stream's timeline depends on a tie Kueue breaks at "
                f"random: {first[1].seen[0]}"
            )
    return first[0]


def _every_loop_position(
    scenario: Scenario, first: TieBreak, want: list[dict[str, object]]
) -> None:
    """Kueue retries a StrictFIFO head (or a preemption cycle) every scheduling cycle while
    nothing else changes, each cycle a little differently (its flavor scan goes on,
    LastTriedFlavorIdx); where that loop stands when the next event comes depends on how
    many cycles real time allowed. The stream is replayed from every position of every loop
    met (depth first, at most LOOP_RUNS replays; a loop met again in the same state at the
    same moment, after other positions earlier, has the same futures and is not tried
    again); a different timeline, or too many to try, is Nondeterministic."""
    todo: list[tuple[tuple[int, ...], list[Loop]]] = [((), first.loops)]
    expanded: set[Hashable] = set()  # loops whose every position is tried (or queued)
    runs = 0
    while todo:
        offsets, loops = todo.pop()
        for index in range(len(offsets), len(loops)):
            period, why, key = loops[index].period, loops[index].what, loops[index].key
            if key in expanded:
                break  # the same state at the same moment: its futures are being tried
            expanded.add(key)
            for extra in range(1, period):
                runs += 1
                if runs > LOOP_RUNS:
                    raise Nondeterministic(
                        f"{scenario.path}: the stream's timeline may depend on where Kueue's "
                        f"repeating cycles stand at an event (more than {LOOP_RUNS} "
                        f"positions to try): {why}"
                    )
                plan = (*offsets, *(0,) * (index - len(offsets)), extra)
                ties = TieBreak(offsets=plan)
                timeline, _ = _Clock(scenario, ties).run()
                if _jobs_json(timeline) != want:
                    raise Nondeterministic(
                        f"{scenario.path}: the stream's timeline depends on where Kueue's "
                        f"repeating cycles stand at an event: {why}"
                    )
                todo.append((plan, ties.loops))


def _jobs_json(timeline: Timeline) -> list[dict[str, object]]:
    return [job.to_json() for job in timeline.jobs.values()]


class _Recorder(Engine):
    """The fit model's engine, telling the clock which workloads took or lost their quota."""

    changes: list[tuple[str, Holding | None]]
    evicted: set[str]
    """Released by a node failure (faults.Faults.evict), not by preemption."""

    reacting = False

    def evict(self, name: str) -> None:
        self.evicted.add(name)
        super().evict(name)

    def settle(self) -> None:
        """Scheduling, then the node failures still waiting for their second pass (one a
        StrictFIFO head held back, Engine.second_pass_held), as Kueue retries it with
        backoff after any change."""
        super().settle()
        if self.reacting or not any(self.faults.unhealthy.values()):
            return
        self.reacting = True
        try:
            self._react()
        finally:
            self.reacting = False

    def reassign(self, name: str, per_leaf: PerLeaf) -> None:
        """A repaired placement: recorded as the same holding, changed in place."""
        super().reassign(name, per_leaf)
        self.changes.append((name, self.snap.holding[name]))

    def _hold(self, held: Holding) -> None:
        super()._hold(held)
        self.changes.append((held.name, held))

    def _release(self, name: str) -> Holding | None:
        held = super()._release(name)
        if held is not None:
            self.changes.append((name, None))
        return held


class _Clock:
    def __init__(self, scenario: Scenario, ties: TieBreak) -> None:
        self.jobs = {w.name: JobRecord(w, _instant(w.submit_at or 0.0)) for w in scenario.workloads}
        order = {name: i for i, name in enumerate(self.jobs)}
        # Creation order is submission order (ties: stream order): the queues' key.
        created = sorted(
            scenario.workloads, key=lambda w: (self.jobs[w.name].submitted_at, order[w.name])
        )
        world = dataclasses.replace(
            scenario, workloads=tuple(map(_plain, created)), expect=None, steps=()
        )
        self.ties = ties
        self.engine = _Recorder(world, ties, None, check_supported(world))
        self.engine.changes, self.engine.evicted = [], set()
        for index, a in enumerate(world.admitted):
            self.engine.hold_admitted(a, index)
        self.engine.changes.clear()
        self.plain = {w.name: w for w in world.workloads}
        self.running: dict[str, tuple[Holding, float | None]] = {}
        self.pending: dict[str, None] = {}  # insertion-ordered set
        self.events = [(self.jobs[w.name].submitted_at, SUBMIT, i, w.name)
                       for i, w in enumerate(created)]  # fmt: skip
        self.steps = [s for s in scenario.steps if s.at is not None]
        self.events += [(_instant(s.at or 0.0), STEP, i, "") for i, s in enumerate(self.steps)]
        heapq.heapify(self.events)
        self.moments: list[Moment] = []

    def run(self) -> tuple[Timeline, TieBreak]:
        events = self.events
        while events:
            at = events[0][0]
            finished = False
            while events and events[0][0] == at and events[0][1] == FINISH:
                finished |= self._finish(at, heapq.heappop(events)[3])
            if finished:
                # blockAdmission: the scheduler waiting for PodsReady goes on once every
                # workload left is ready (the Delete handler wakes it), as after a
                # delete-workload step (harness.fit.engine.Engine.step).
                self._moment(at, FINISH)
                self.engine.readiness.unblock(self.engine)
                self.engine.settle()
                self._record(at)
            stepped = False
            while events and events[0][0] == at and events[0][1] == STEP:
                self.engine.faults.report = StepReport()
                index = heapq.heappop(events)[2]
                self._moment(at, STEP, index)
                self.engine.step(self.steps[index])
                stepped = True
            if stepped:
                self._record(at)
            submitted = False
            while events and events[0][0] == at:
                name = heapq.heappop(events)[3]
                self.pending[name] = None
                self.engine.submit(self.plain[name])
                submitted = True
            if submitted:  # created together: their queues order them, as Kueue's do
                self._moment(at, SUBMIT)
                self.engine.settle()
                self._record(at)
            self.moments.append(Moment(at, tuple(self.running), tuple(self.pending)))
        return Timeline(self.jobs, self.moments), self.ties

    def _moment(self, at: float, kind: int, index: int = 0) -> None:
        """Where the stream is, for the key of a loop met now: the moment, the event, and
        the finishes the jobs running before it have (the model's state holds the rest)."""
        finishes = tuple(sorted((n, f) for n, (_, f) in self.running.items()))
        self.ties.moment = (at, kind, index, finishes)

    def _finish(self, at: float, name: str) -> bool:
        """The workload's run ends at `at` unless it was preempted (and maybe readmitted)
        since the admission that scheduled this finish."""
        held, finish = self.running.get(name, (None, None))
        if held is None or finish != at:
            return False
        self.engine.changes.clear()
        self.engine.faults.unhealthy.pop(name, None)
        self.engine.delete(name)
        pods_ready.deleted(self.engine, name)
        self.engine.changes.clear()
        del self.running[name]
        self.jobs[name].finished_at = at
        return True

    def _record(self, at: float) -> None:
        """Admissions and evictions the engine made since the last event, in order."""
        for name, held in self.engine.changes:
            evicted = held is None and name in self.engine.evicted
            if evicted:
                self.engine.evicted.discard(name)
            job = self.jobs.get(name)
            if job is None:
                continue  # a workload admitted before the stream (the world's `admitted:`)
            if held is None:
                if self.running.pop(name, None) is not None:
                    (job.evicted_at if evicted else job.preempted_at).append(at)
                    self.pending[name] = None
                continue
            if not self.engine.has_pods(name):
                continue  # quota reserved, its admission checks not Ready: not admitted
            if name in self.running and self.running[name][0] is held:  # repaired in place
                job.replacements.append(_admission(at, held))
                continue
            self.pending.pop(name, None)
            run_for = job.workload.run_for
            finish = None if run_for is None else _instant(at + run_for)
            self.running[name] = (held, finish)
            job.admissions.append(_admission(at, held))
            if finish is not None:
                heapq.heappush(self.events, (finish, FINISH, 0, name))
        self.engine.changes.clear()


def _admission(at: float, held: Holding) -> Admission:
    placement = {ps: dict(sorted(d.items())) for ps, d in held.placement.items()}
    return Admission(at, dict(held.flavors), placement)


def _instant(seconds: float) -> float:
    """A moment of the stream to the microsecond: 0.4 + 0.2 is the 0.6 a submission names."""
    return round(seconds, 6)


def _plain(w: Workload) -> Workload:
    """The workload as the fit model takes it: no stream times."""
    return dataclasses.replace(w, submit_at=None, run_for=None)
