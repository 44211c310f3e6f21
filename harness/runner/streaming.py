"""Replay a stream on a real cluster, in real time (`replay --engine local`, and a stream
scenario with `--cluster=local`): the world is shaped as for any scenario, then each
workload's Job is created at its `submitAt` / scale real seconds after the stream's start
(harness.replay.clock: in a later second than the previous one of equal priority), and
`runFor` / scale real seconds after Kueue admitted it its pods complete: phase Succeeded,
as a kubelet reports it (harness.runner.faults.complete; KWOK's own stages never end a pod).
The Job controller completes the Job and Kueue finishes its Workload, which frees its quota
and nodes, as at the end of any job.

What happened is read from the Workloads, polled every INTERVAL: an admission from the
Admitted condition (its lastTransitionTime, relative to the start and scaled back) with
status.admission's flavors and topology assignment; a preemption from
status.schedulingStats.evictions (reason Preempted) and the Evicted condition's time; the
finish from the Finished condition Kueue sets when the Job completes. Kueue stamps to the
second and the stream starts on a whole second, so a moment is the start of the real second
it happened in, scaled: never earlier than the event that caused it (an admission is never
before its submission).

A stream's node events (`steps` with `at:`, harness.replay.timed_steps) are done at at / scale
real seconds, before a submission due at the same moment, by the steps' own code
(harness.runner.steps.act: the same patches, taints and pod evictions as a one-moment
scenario's step); what Kueue then does is read like the rest: an eviction with reason
NodeFailures (status.schedulingStats.evictions) as `evictedAt`, a placement changed while
the job stays admitted (the second pass) as a `replacement`.

A submission waits until Kueue has evaluated the previous one (at most PARK seconds), as
the fit model decides each submission before the next event: on busy cores Kueue can take
over a second (ten stream seconds at 10x). A job's pods complete once all of them run: when
kube-scheduler or KWOK is slower than `runFor` / scale, the job runs that much longer. The
stream is over when every submission is made, every job with a `runFor` that was admitted
has finished, no eviction is under way, and, while a job waits, nothing changed for QUIET
seconds (Kueue's 1 s requeue batch after a finish, plus a margin): the jobs still pending
then were never admitted.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import progress
from harness.backends.base import BackendError, Unsupported
from harness.errors import HarnessError
from harness.kube import KUEUE_API, Obj, condition, pause, poll_for, watchdog
from harness.providers.cpu import CpuMeter
from harness.replay.clock import Submission, TimeScale, submissions
from harness.runner import binding, evidence, faults, incidents, shaping, steps
from harness.runner.objects import WORKLOAD_LABEL
from harness.runner.reading import PENDING_PREEMPTION, evicted_now, evictions, state
from harness.runner.session import ClusterSide, Entry, Session
from harness.runner.waits import server_time
from harness.scenario.model import Scenario, Step

if TYPE_CHECKING:
    from harness.runner.backend import ClusterBackend

logger = progress.logger("stream")

INTERVAL = 0.1
"""Real seconds between two reads of the Workloads (1 stream second at 10x)."""
QUIET = 2.0
"""Real seconds without a change before a stream with nothing left to do counts as over."""
PARK = 3.0
"""Real seconds a submission may stay without any QuotaReserved condition before the next
is made anyway: Kueue parks some unevaluated (a StrictFIFO queue behind its pending head,
an identical pending workload under SchedulingEquivalenceHashing)."""
NODE_FAILURES = "NodeFailures"
"""Kueue's eviction reason for a node failure (kueue.WorkloadEvictedDueToNodeFailures)."""
CLOCK_SKEW = 2.0
"""The API server's clock may differ from ours by this much (it reports whole seconds)."""


@dataclass
class ClusterReplay:
    """Each job's record in the replay's JSON form (stream seconds), and the real seconds
    spent shaping the cluster and running the stream."""

    jobs: dict[str, dict[str, Any]]
    phases: dict[str, float]
    artifacts: Path
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per component meanwhile (harness.providers.cpu): mostly the stream waits."""


@dataclass
class _Job:
    submission: Submission
    entry: Entry | None = None
    submitted_at: float = 0.0
    admissions: list[dict[str, Any]] = field(default_factory=list)
    preempted_at: list[float] = field(default_factory=list)
    finished_at: float | None = None
    running: bool = False
    finish_due: float | None = None  # real seconds after the start
    evictions: int = 0
    evicted_at: list[float] = field(default_factory=list)  # by a node failure
    node_evictions: int = 0
    replacements: list[dict[str, Any]] = field(default_factory=list)
    placement: dict[str, Any] = field(default_factory=dict)  # the one it runs on now
    sent: float = 0.0  # real seconds after the start when it was created
    decided: bool = False  # Kueue has evaluated it (a QuotaReserved condition)

    @property
    def name(self) -> str:
        return self.submission.workload.name

    @property
    def last(self) -> float:
        """The latest moment recorded for the job: nothing later happens before it."""
        return float(
            max(
                [
                    self.submitted_at,
                    *(a["at"] for a in (*self.admissions, *self.replacements)),
                    *self.preempted_at,
                    *self.evicted_at,
                ]
            )
        )

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "submittedAt": self.submitted_at,
            "admissions": self.admissions,
            "preemptedAt": self.preempted_at,
            "finishedAt": self.finished_at,
        }
        if self.evicted_at:  # as the fit model's record: only on a job a node event touched
            out["evictedAt"] = self.evicted_at
        if self.replacements:
            out["replacements"] = self.replacements
        return out


def replay_on_cluster(
    backend: ClusterBackend, scenario: Scenario, scale: TimeScale
) -> ClusterReplay:
    """The stream of `scenario` (its workloads' submitAt / runFor) on the backend's cluster."""
    if any(w.lws is not None for w in scenario.workloads):
        raise Unsupported("a stream of LeaderWorkerSet groups does not replay on a cluster")
    kube = backend.cluster(scenario.feature_gates, scenario.kueue_config.document)
    started = time.monotonic()
    meter = CpuMeter(backend.provider.pids if backend.provider is not None else dict)
    meter.start()
    names = backend.fresh_names(scenario)
    out = backend.artifacts / names.namespace
    out.mkdir(parents=True, exist_ok=True)
    side = ClusterSide(
        jobsets=backend.jobsets, jobset_pods=backend.jobset_pods,
        gates=backend.running_gates or {},
    )  # fmt: skip
    session = Session(kube, scenario, names, backend.timeouts, cluster=side)
    phases: dict[str, float] = {}
    with watchdog(lambda: incidents.raise_if_down(backend.provider)):
        try:
            shaping.shape(kube, scenario, names, backend.timeouts)
            session.admit_ahead()
            phases["shape"] = round(time.monotonic() - started, 2)
            jobs = _Stream(session, scale).run()
            phases["stream"] = round(time.monotonic() - started - phases["shape"], 2)
        except Unsupported:
            raise
        except HarnessError as err:
            known = {n: e.kueue_name for n, e in session.entries.items() if e.kueue_name}
            try:
                evidence.write_objects(kube, names, out / "objects.yaml")
                details = evidence.workload_details(kube, names, known) if known else ""
            except HarnessError as unread:
                details = f"(the cluster's objects could not be read: {unread})"
            raise BackendError(
                f"stream {scenario.name} on the {backend.name} cluster: {err}\n{details}\n"
                f"artifacts: {out}"
            ) from None
    evidence.write_objects(kube, names, out / "objects.yaml")
    return ClusterReplay(jobs, phases, out, meter.spent())


class _Stream:
    """The stream's clock on the cluster: submit, watch, complete, until nothing is left."""

    def __init__(self, session: Session, scale: TimeScale) -> None:
        self.s = session
        self.scale = scale
        scenario = session.scenario
        self.plan = submissions(scenario.workloads, scenario.priority, scale)
        self.jobs = {sub.workload.name: _Job(sub) for sub in self.plan}
        self.queue = list(self.plan)
        self.steps = [(scale.real(st.at or 0.0), st) for st in scenario.steps]
        self.start = datetime.now(UTC)
        self.t0 = 0.0  # time.monotonic() at the start
        self.changed = 0.0
        self.seen = "nothing yet"

    def run(self) -> dict[str, dict[str, Any]]:
        self._align()
        last = max([sub.real for sub in self.plan] + [real for real, _ in self.steps], default=0.0)
        horizon = last + self.scale.real(sum(sub.workload.run_for or 0.0 for sub in self.plan))
        budget = 2 * horizon + 60.0
        poll_for(
            self._tick,
            timeout=budget,
            interval=INTERVAL,
            gave_up=lambda waited: (
                f"the stream did not end in {waited:.0f} s (twice its longest serial run "
                f"plus 60 s, at --time-scale {self.scale.scale:g}); last seen: {self.seen}"
            ),
        )
        return {name: job.record() for name, job in self.jobs.items()}

    def _align(self) -> None:
        """Start on the next whole second of our clock, which must be the API server's."""
        server = server_time(self.s.kube, self.s.names.namespace)
        skew = (server - datetime.now(UTC)).total_seconds()
        if not -CLOCK_SKEW <= skew <= 1.0:
            raise BackendError(
                f"the API server's clock is {skew:+.0f} s from this machine's; a stream's "
                "moments are read from Kueue's timestamps, so the two must agree"
            )
        start = math.ceil(time.time())
        while time.time() < start:
            pause(min(INTERVAL, start - time.time()))
        self.t0 = time.monotonic() - (time.time() - start)
        self.start = datetime.fromtimestamp(start, UTC)

    def _now(self) -> float:
        return time.monotonic() - self.t0

    def _log(self, what: str) -> None:
        """Progress, with the real and the stream clock (a stream takes minutes)."""
        now = self._now()
        logger.info(f"{now:6.1f} s (stream {self.scale.stream(now):g} s): {what}")

    def _tick(self) -> bool | None:
        """One round: due submissions, what Kueue did, due completions; True when over."""
        self._due()
        found = {
            wl["metadata"]["name"]: wl
            for wl in self.s.kube.list(KUEUE_API, "Workload", self.s.names.namespace)
        }
        busy = False
        for job in self.jobs.values():
            if job.entry is None or job.entry.rejected is not None:
                continue
            wl = found.get(job.entry.kueue_name)
            if wl is not None and self._observe(job, wl):
                self.changed = self._now()
            busy |= wl is not None and _in_flight(wl)
        for job in self.jobs.values():
            if job.finish_due is not None and job.finish_due <= self._now():
                self._complete(job)
        self.seen = self._describe(found)
        if self.queue or self.steps or busy or any(self._owes(job) for job in self.jobs.values()):
            return None
        waiting = any(not job.running and job.finished_at is None for job in self.jobs.values())
        return True if not waiting or self._now() - self.changed >= QUIET else None

    def _due(self) -> None:
        """The node events and submissions due now, in stream order: a node event before a
        submission of the same moment (the fit model's order, harness.replay.engine)."""
        while True:
            now = self._now()
            step_due = bool(self.steps) and self.steps[0][0] <= now
            if step_due and (not self.queue or self.steps[0][0] <= self.queue[0].real):
                self._step(self.steps.pop(0)[1])
            elif self.queue and self.queue[0].real <= now and not self._undecided():
                self._submit(self.queue.pop(0))
            else:
                return

    def _step(self, step: Step) -> None:
        """A node event, done as a one-moment scenario's step does it; Kueue's reaction is
        read from the Workloads like everything else."""
        steps.act(self.s, step)
        self.changed = self._now()
        node = getattr(step.target, "node", None) or getattr(step.target, "name", step.target)
        self._log(f"{step.action} {node} (stream moment {step.at:g})")

    def _undecided(self) -> str | None:
        """A job Kueue has not evaluated yet, unless it has had PARK seconds: the stream's
        next submission waits for Kueue's decision on the previous one, as the fit model
        decides each before the next (on 2 busy cores Kueue can take over a second)."""
        for job in self.jobs.values():
            if job.entry is not None and not job.decided and self._now() - job.sent < PARK:
                return job.name
        return None

    def _submit(self, sub: Submission) -> None:
        job = self.jobs[sub.workload.name]
        job.entry = self.s.create(sub.workload)
        job.submitted_at = sub.at
        if job.entry.rejected is not None:
            raise BackendError(
                f"workload {job.name} was refused by the API server: {job.entry.rejected.message}"
            )
        if sub.workload.run_for is not None and not self.s.has_pods(job.entry):
            raise Unsupported(
                f"workload {job.name} goes to this cluster as a {job.entry.kind} without pods, "
                "so nothing can complete its runFor"
            )
        wl = self.s.workload_obj(job.entry)
        created = ((wl or {}).get("metadata") or {}).get("creationTimestamp")
        if created:  # created later than asked: waited for a new second
            job.submitted_at = max(sub.at, self._moment(created))
        self.changed = job.sent = self._now()
        self._log(f"{job.name} submitted (stream moment {sub.at:g})")

    def _observe(self, job: _Job, wl: Obj) -> bool:
        """Record what Kueue did to the job since the last read; True when anything."""
        if job.finished_at is not None:
            return False
        finished = condition(wl, "Finished")
        if finished is not None and finished.get("status") == "True":
            job.finished_at = max(self._moment(finished["lastTransitionTime"]), job.last)
            job.running, job.finish_due = False, None
            self._log(f"{job.name} finished (stamped {job.finished_at:g})")
            return True
        job.decided = job.decided or condition(wl, "QuotaReserved") is not None
        changed = self._node_failure(job, wl)
        count = evictions(wl)
        if count > job.evictions:
            job.preempted_at += self._stopped(job, wl, count - job.evictions, "preempted")
            job.evictions = count
            changed = True
        if not job.running and not evicted_now(wl) and state(wl).kind == "admitted":
            assert job.entry is not None
            admitted = condition(wl, "Admitted") or {}
            at = max(self._moment(admitted.get("lastTransitionTime", "")), job.last)
            flavors, placement = self.s.admission_of(job.entry, wl)
            job.admissions.append({"at": at, "flavors": flavors, "placement": placement})
            job.running, job.placement = True, placement
            run_for = job.submission.workload.run_for
            if run_for is not None:
                job.finish_due = self._now() + self.scale.real(run_for)
            self._log(f"{job.name} admitted (stamped {at:g}) on {placement}")
            changed = True
        return changed

    def _stopped(self, job: _Job, wl: Obj, new: int, what: str) -> list[float]:
        """The job stops running for `new` evictions of one kind: their moments on the
        stream's clock (the current eviction's, never before what the job last did; 0 once
        it is no longer evicted), logged as `what`."""
        cond = condition(wl, "Evicted")
        at = self._moment(cond["lastTransitionTime"]) if evicted_now(wl) and cond else 0.0
        at = max(at, job.last)
        job.running, job.finish_due = False, None
        self._log(f"{job.name} {what} (stamped {at:g})")
        return [at] * new

    def _node_failure(self, job: _Job, wl: Obj) -> bool:
        """An eviction for a node failure (reason NodeFailures), or the placement the job
        runs on repaired in place by the second pass; True when either."""
        count = evictions(wl, NODE_FAILURES)
        if count > job.node_evictions:
            new = count - job.node_evictions
            job.evicted_at += self._stopped(job, wl, new, "evicted by a node failure")
            job.node_evictions = count
            return True
        if not job.running or evicted_now(wl) or state(wl).kind != "admitted":
            return False
        assert job.entry is not None
        flavors, placement = self.s.admission_of(job.entry, wl)
        if placement == job.placement:
            return False
        at = max(self.scale.stream(math.floor(self._now())), job.last)  # not stamped by Kueue
        job.replacements.append({"at": at, "flavors": flavors, "placement": placement})
        job.placement = placement
        self._log(f"{job.name} repaired in place (seen at {at:g}) on {placement}")
        return True

    def _complete(self, job: _Job) -> None:
        """The job's run is over: its pods succeed, once all of them run."""
        w = job.submission.workload
        pods = self.s.kube.list("v1", "Pod", self.s.names.namespace, f"{WORKLOAD_LABEL}={w.name}")
        running = [p for p in pods if binding.live(p) and _phase(p) == "Running"]
        if len(running) < sum(ps.count for ps in w.pod_sets):
            return  # not all started yet: the job runs on until they have
        faults.complete(self.s.kube, self.s.names.namespace, running, self.s.t)
        self._log(f"{job.name}: its {len(running)} pods completed")
        job.finish_due = None

    def _owes(self, job: _Job) -> bool:
        """The job has something still to come: a completion, or the finish it causes."""
        if job.finished_at is not None or job.entry is None:
            return False
        return job.running and job.submission.workload.run_for is not None

    def _moment(self, stamp: str) -> float:
        if not stamp:
            return 0.0
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return max(0.0, self.scale.stamp(when, self.start))

    def _describe(self, found: dict[str, Obj]) -> str:
        parts = []
        for job in self.jobs.values():
            if job.entry is None:
                parts.append(f"{job.name} not yet submitted")
                continue
            wl = found.get(job.entry.kueue_name)
            if job.finished_at is not None:
                parts.append(f"{job.name} finished")
            elif job.running:
                late = job.finish_due is not None and job.finish_due <= self._now()
                parts.append(f"{job.name} running" + (" (pods not all Running)" if late else ""))
            else:
                parts.append(f"{job.name} pending ({state(wl).message or state(wl).kind})")
        return "; ".join(parts) + f" at {self._now():.1f} s"


def _in_flight(wl: Obj) -> bool:
    """An eviction under way (evicted, still holding quota) or a preemptor waiting for it."""
    reserved = condition(wl, "QuotaReserved") or {}
    if evicted_now(wl) and reserved.get("status") == "True":
        return True
    return reserved.get("status") == "False" and PENDING_PREEMPTION in str(reserved.get("message"))


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))
