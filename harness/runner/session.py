"""One scenario on a shaped cluster: submit workloads, apply steps, read what Kueue did."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from harness.backends.base import BackendError, Unsupported
from harness.kube import KUEUE_API, Kube, KubeError, events
from harness.kueue import local_queue_stop as lq_stop
from harness.kueue.admission_status import ADMISSION_FIELD_MANAGER, reservation_times
from harness.kueue.local_queue_stop import DRAIN_REASON as LQ_DRAINED
from harness.kueue.queue_activity import drains
from harness.results.outcome import Outcome
from harness.runner import (
    binding,
    check_controller,
    faults,
    held_admission,
    objects,
    preadmit,
    repair,
    steps,
)
from harness.runner.kueuelog import KueueLog, UnwrittenLoop
from harness.runner.objects import JOB_NAME_LABEL, Names, Obj
from harness.runner.reading import (
    NO_CONDITION,
    State,
    admission_flavors,
    admission_placement,
    evictions,
    pods_placement,
    preempted,
    state,
)
from harness.runner.requeue import RequeueWave
from harness.runner.settling import Submission, settle_submission
from harness.runner.waits import (
    Timeouts,
    find_group_workload,
    find_workload,
    settle,
    wait_past_second,
)
from harness.scenario.model import HOSTNAME, Node, Scenario, Step, Taint, Workload

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
LWS = "LeaderWorkerSet"
LWS_SET_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


class PlacementDisagreement(BackendError):
    """Kueue's topology assignment and the nodes kube-scheduler bound the pods to differ."""


@dataclass
class Entry:
    """A submitted workload: how it was created (`kind`: Job, JobSet or a Workload built
    directly) and, if refused, the refusal."""

    workload: Workload
    kind: str
    rejected: Outcome | None = None
    kueue_name: str = ""
    may_park: bool = False
    # The pending message when the workload settled ("": never evaluated then). Outcomes
    # report the latest status Kueue wrote, as the fit model's cycles give it.
    settled_message: str | None = None
    # Pods that could not run when last read: a step may free room for them.
    unschedulable: int = 0

    @property
    def as_job(self) -> bool:
        return self.kind == "Job"

    @property
    def owned(self) -> bool:
        """Kueue's job reconciler made the Workload for an object we created."""
        return self.kind != "Workload"


@dataclass(frozen=True)
class ClusterSide:
    """What the cluster under a session runs and offers: the session's choices (a JobSet or a
    Workload, whether pods exist to check, the gates' defaults) and its handles on Kueue."""

    # Several pod sets go as a JobSet when Kueue manages JobSets here (the embedded cluster
    # installs the CRD), else as a Workload built directly.
    jobsets: bool = False
    # A JobSet controller runs (kind installs only the CRD): JobSet pods exist to check.
    jobset_pods: bool = False
    # Kueue manages LeaderWorkerSets and the LWS controller runs (the embedded cluster).
    lws: bool = False
    # The tail of Kueue's log, where the cluster has one (why a pod stays gated).
    kueue_log: Callable[[], str] | None = None
    # Kueue's log file, where the cluster has one: evidence Kueue reacted to a step.
    kueue_log_path: Path | None = None
    # The feature gates Kueue runs with (only those set; the rest have their defaults).
    gates: Mapping[str, bool] = field(default_factory=dict)
    # Replaces the running Kueue by a newer version (an `upgrade-kueue` step), where the
    # cluster can (the backend checked before the scenario started).
    upgrade_kueue: Callable[[str], None] | None = None


@dataclass
class Session:
    kube: Kube
    scenario: Scenario
    names: Names
    t: Timeouts
    entries: dict[str, Entry] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    usage_count: int = 0
    notes: list[str] = field(default_factory=list)
    # Priority -> the creationTimestamp of the last Workload created with it. Kueue orders
    # workloads by priority, then creation second, then random UID (rules §3.1, §3.3, §8),
    # so the next one of equal priority is created in a later second.
    last_created: dict[int, str] = field(default_factory=dict)
    # What the cluster under the session runs and offers.
    cluster: ClusterSide = field(default_factory=ClusterSide)
    # Each workload as it was before the current step (None before any step).
    before: repair.Before | None = None
    # Kueue's retries set off by shaping, let pass before they could change a pending one.
    wave: RequeueWave | None = None

    def __post_init__(self) -> None:
        self.nodes = {n.name: n for n in self.scenario.nodes}
        self.usage_count = len(self.scenario.usage)

    # -- submission ----------------------------------------------------------------------

    def submit(self, w: Workload) -> None:
        """Create the workload and wait until Kueue admits it or keeps it pending, and every
        workload it preempted is released and evaluated again (harness.runner.settling)."""
        self.let_requeue_pass()
        before = {name: evictions(wl) for name, wl in self.snapshot().items()}
        log = KueueLog(self.cluster.kueue_log_path)  # marked before Kueue hears of it
        entry = self._create(w)
        if entry.rejected is not None:
            return
        entry.may_park = self._may_park(entry)
        unwritten = self._unwritten(entry, log)
        sub = Submission(w.name, self._ref(entry), before, entry.may_park, unwritten)
        seen = settle_submission(self.snapshot, sub, self.t)
        held_admission.await_held_admission(self)
        seen = self._read_again(entry, seen) if seen.kind == "pending" else seen
        entry.settled_message = seen.message if seen.kind == "pending" else None
        if not w.pods_ready:
            steps.await_start_timeouts(self)
            seen = self._read_again(entry, seen)
            entry.settled_message = seen.message if seen.kind == "pending" else None

    def _read_again(self, entry: Entry, settled: State) -> State:
        """The workload's state read again after others were let pass. A pending one Kueue
        still has not written keeps its settle verdict (pending, ""): read as unsettled,
        `read()` would wait out the unwritten window a second time."""
        seen = self.state_of(entry)
        unwritten = seen.kind == "unsettled" and seen.message == NO_CONDITION
        return settled if unwritten and settled.kind == "pending" else seen

    def _unwritten(self, entry: Entry, log: KueueLog) -> Callable[[], bool] | None:
        """Kueue's log read on from `log`'s mark for a loop that keeps the workload without a
        status (kueuelog.UnwrittenLoop); None where Kueue's log is not at hand."""
        if not log.available or not entry.kueue_name:
            return None
        return UnwrittenLoop(log, self.names.namespace_of(entry.workload), entry.kueue_name)

    def create(self, w: Workload) -> Entry:
        """Create the workload without waiting for Kueue's decision: a stream's submissions
        come at their own moments while Kueue decides (harness.runner.streaming)."""
        return self._create(w)

    def let_requeue_pass(self) -> None:
        """A retry from shaping re-evaluates only workloads already pending: wait for it
        only when one is (harness.runner.requeue)."""
        if self.wave is None or self.wave.passed:
            return
        if any(e.kueue_name and self.state_of(e).kind == "pending" for e in self.entries.values()):
            self.wave.wait(self.t)

    def _may_park(self, entry: Entry) -> bool:
        """Kueue may leave the workload without any status: an identical one is pending
        (SchedulingEquivalenceHashing parks it unevaluated), or a StrictFIFO ClusterQueue
        has a pending head ahead of it in queue order (priority, then creation), which
        Kueue retries alone (rules §3.1)."""
        w = entry.workload
        strict = self.scenario.cluster_queue(w.queue).queueing_strategy == "StrictFIFO"
        for e in self.entries.values():
            if e is entry or not e.kueue_name or self.state_of(e).kind != "pending":
                continue
            if e.workload.pod_sets == w.pod_sets:
                return True
            ahead = self.scenario.priority(e.workload) >= self.scenario.priority(w)
            if strict and e.workload.queue == w.queue and ahead:
                return True
        return False

    def _create(self, w: Workload) -> Entry:
        """Create the workload's Job, JobSet or Workload in a later second than the previous
        Workload of equal priority (`last_created`) and find the Workload Kueue made for it."""
        kind = "Job" if len(w.pod_sets) == 1 else "JobSet" if self.cluster.jobsets else "Workload"
        if w.lws is not None:
            kind = LWS
            if not self.cluster.lws:
                raise Unsupported(
                    f"workload {w.name} is a LeaderWorkerSet group and this cluster runs no "
                    "LWS controller with Kueue's LeaderWorkerSet integration; use --cluster=local"
                )
        entry = Entry(w, kind)
        self.entries[w.name] = entry
        if kind == LWS:
            return self._create_group(entry)
        if kind == "Job":
            obj = objects.job(w, self.names)
        elif kind == "JobSet":
            obj = objects.jobset(w, self.names)
        else:
            obj = objects.workload(w, self.names, self.scenario.priority(w))
            self._refuse_skipped_webhook(w, obj)
        priority = self.scenario.priority(w)
        if priority in self.last_created:
            wait_past_second(self.kube, self.names.namespace, self.last_created[priority], self.t)
        try:
            self.kube.create(obj)
        except KubeError as err:
            if not refused(err):
                raise
            entry.rejected = Outcome(admitted=False, rejected=True, message=api_message(err))
            return entry
        entry.kueue_name = (
            find_workload(self.kube, self.names.namespace_of(w), kind, w.name, self.t)
            if entry.owned
            else w.name
        )
        wl = self.workload_obj(entry)
        self.last_created[priority] = ((wl or {}).get("metadata") or {}).get(
            "creationTimestamp", ""
        )
        return entry

    def _create_group(self, entry: Entry) -> Entry:
        """Group i of a LeaderWorkerSet: create it with one replica (group 0) or scale it to
        i + 1 replicas, in a later second than the previous Workload of equal priority, so
        its groups are decided in index order; Kueue would order Workloads created in one
        second by their random UID (rules §8; upstream's TAS e2e accepts either group
        order for that reason: test/e2e/tas/extended/leaderworkerset_test.go)."""
        w = entry.workload
        assert w.lws is not None
        obj = objects.leader_worker_set(w, self.names)
        priority = self.scenario.priority(w)
        if priority in self.last_created:
            wait_past_second(self.kube, self.names.namespace, self.last_created[priority], self.t)
        try:
            if w.lws.index == 0:
                self.kube.create(obj)
            else:
                self.kube.patch(
                    obj["apiVersion"],
                    LWS,
                    w.lws.set_name,
                    {"spec": {"replicas": w.lws.index + 1}},
                    namespace=self.names.namespace,
                )
        except KubeError as err:
            if not refused(err):
                raise
            entry.rejected = Outcome(admitted=False, rejected=True, message=api_message(err))
            return entry
        entry.kueue_name = find_group_workload(
            self.kube, self.names.namespace, w.lws.set_name, w.lws.index, self.t
        )
        wl = self.workload_obj(entry)
        self.last_created[priority] = ((wl or {}).get("metadata") or {}).get(
            "creationTimestamp", ""
        )
        return entry

    def snapshot(self) -> dict[str, Obj | None]:
        """Every live workload's Workload object (one list call), by the scenario's name."""
        found = {
            wl["metadata"]["name"]: wl
            for ns in self.names.all_namespaces
            for wl in self.kube.list(KUEUE_API, "Workload", ns)
        }
        return {
            name: found.get(e.kueue_name)
            for name, e in self.entries.items()
            if e.kueue_name and e.rejected is None
        }

    # -- admitted before the scenario starts (harness.runner.preadmit) ------------------

    def admit_ahead(self) -> None:
        """Create the `admitted` entries in their held LocalQueues, write their admissions
        as Kueue would, check Kueue counts them and their pods run where they were placed,
        then lift the hold."""
        admitted = self.scenario.admitted
        if not admitted:
            return
        for a in admitted:
            entry = self._create(objects.as_workload(a))
            if entry.rejected is not None:
                raise BackendError(
                    f"admitted workload {a.name} was refused: {entry.rejected.message}"
                )
            preadmit.wait_stopped(self.kube, self.names, entry.kueue_name, a.queue_name, self.t)
        reserved = reservation_times(self.scenario, datetime.now(UTC))
        patches, waiting = [], {}
        for a in admitted:
            entry = self.entries[a.name]
            rename = {a.pod_sets[0].pod_set.name: "main"} if entry.as_job else {}
            patch = preadmit.status_patch(
                self.scenario, a, entry.kueue_name, self.names, reserved[a.name], rename
            )
            if preadmit.waits_for_checks(self.scenario, a) and not drains(
                self.scenario.cluster_queue(a.queue)
            ):
                if lq_stop.held(self.scenario.local_queue_of(a).stop_policy):
                    raise Unsupported(
                        f"{self.scenario.path}: admitted {a.name}: waiting for admission "
                        "checks in a held LocalQueue: not written on a cluster (Kueue takes "
                        "the reservation away at once)"
                    )
                waiting[a.name] = patch  # applied once the hold is lifted: reserve_waiting
            else:
                patches.append(patch)
        admitted = tuple(a for a in admitted if a.name not in waiting)
        for patch in patches:
            self.kube.apply(patch, subresource="status", field_manager=ADMISSION_FIELD_MANAGER)
        # HoldAndDrain evicts them once the hold is lifted (harness.kueue.queue_activity):
        # no admission to read back, only the eviction to wait for.
        drained = {a.name for a in admitted if drains(self.scenario.cluster_queue(a.queue))}
        kept = [p for a, p in zip(admitted, patches, strict=True) if a.name not in drained]
        for patch in kept:
            preadmit.wait_admitted_as_written(self.kube, self.names, patch, self.t)
        preadmit.wait_counted(self.kube, kept, self.t)
        for a in admitted:
            entry = self.entries[a.name]
            if not self.has_pods(entry) or a.name in drained:
                continue
            for aps in a.pod_sets:
                preadmit.wait_pods_placed(
                    self.kube,
                    self.names,
                    self.selector(entry, aps.pod_set.name),
                    f"{entry.kind} {self.names.namespace}/{a.name} pod set {aps.pod_set.name}",
                    aps.placement,
                    aps.pod_set.count,
                    self.t,
                )
        checks = None
        if waiting:
            held = [a for a in self.scenario.admitted if a.name in waiting]
            checks = preadmit.checks_off(self.scenario, held)
            check_controller.report_active(self.kube, checks)
        preadmit.release(self.kube, self.scenario, self.names, self.t, checks)
        for name in sorted(drained):
            preadmit.wait_drained(self.kube, self.names, self.entries[name].kueue_name, self.t)
        for a in admitted:  # written under Hold: the scenario's HoldAndDrain now evicts them
            policy = self.scenario.local_queue_of(a).stop_policy
            if a.name not in drained and lq_stop.drains(policy):
                kueue_name = self.entries[a.name].kueue_name
                preadmit.wait_drained(self.kube, self.names, kueue_name, self.t, LQ_DRAINED)
        if waiting:
            preadmit.reserve_waiting(self.kube, self.scenario, self.names, waiting, self.t)
            preadmit.wait_counted(self.kube, [*kept, *waiting.values()], self.t)

    def _refuse_skipped_webhook(self, w: Workload, obj: Obj) -> None:
        """A directly built Workload skips the job-integration webhooks (LWS, JobSet, ...).
        When the fit model's webhook rules refuse it and Kueue's own Workload webhook lets
        it through (server-side dry run), the cluster cannot show that refusal."""
        from harness.kueue.webhook_rules import webhook_rejection

        why = webhook_rejection(w)
        if why is None:
            return
        try:
            self.kube.create(obj, dry_run=True)
        except KubeError as err:
            if refused(err):
                return  # Kueue refuses it too: submit() reports the real refusal
            raise
        raise Unsupported(
            f"workload {w.name}: a job-integration webhook would refuse it ({why}), but a "
            "Workload built directly skips that webhook and Kueue's Workload webhook accepts it"
        )

    def _settle(self, entry: Entry) -> State:
        return settle(
            lambda: self.state_of(entry),
            what=self._ref(entry),
            t=self.t,
            may_park=entry.may_park,
            unwritten=self._unwritten(entry, KueueLog(self.cluster.kueue_log_path)),
        )

    def _ref(self, entry: Entry) -> str:
        return f"Workload {self.names.namespace_of(entry.workload)}/{entry.kueue_name}"

    def workload_obj(self, entry: Entry) -> Obj | None:
        ns = self.names.namespace_of(entry.workload)
        return self.kube.get_or_none(KUEUE_API, "Workload", entry.kueue_name, ns)

    def workload_objs(self, entries: Sequence[Entry]) -> dict[str, Obj | None]:
        """The entries' Workloads by Kueue name, one LIST per namespace instead of a GET
        each: a step's waits read every live workload on each poll."""
        by_namespace: dict[str, list[Entry]] = {}
        for entry in entries:
            by_namespace.setdefault(self.names.namespace_of(entry.workload), []).append(entry)
        found: dict[str, Obj | None] = {}
        for ns, group in by_namespace.items():
            listed = {o["metadata"]["name"]: o for o in self.kube.list(KUEUE_API, "Workload", ns)}
            found.update({e.kueue_name: listed.get(e.kueue_name) for e in group})
        return found

    def state_of(self, entry: Entry) -> State:
        return state(self.workload_obj(entry))

    def states_of(self, entries: Sequence[Entry]) -> list[State]:
        """state_of for each entry, in order, read with workload_objs."""
        objs = self.workload_objs(entries)
        return [state(objs.get(e.kueue_name)) for e in entries]

    # -- reading -------------------------------------------------------------------------

    def read(self) -> dict[str, Outcome]:
        """Every live workload's outcome in creation order; checks pods against Kueue."""
        out: dict[str, Outcome] = {}
        for name, entry in self.entries.items():
            if entry.rejected is not None:
                out[name] = entry.rejected
                continue
            # Pending already held its settle window (at submission, or a step's window);
            # only a workload caught in between (e.g. requeued) is waited for again.
            seen = self.state_of(entry)
            if seen.message == NO_CONDITION and entry.settled_message == "":
                seen = State("pending", "")  # never evaluated when it settled, and still not
            if seen.kind == "unsettled":
                seen = self._settle(entry)
            wl = self.workload_obj(entry)
            was_preempted = preempted(wl)
            if seen.kind == "pending":
                out[name] = Outcome(
                    admitted=False,
                    message=seen.message,
                    preempted=was_preempted,
                )
                continue
            assert wl is not None
            rename = self.rename(entry)
            placement = admission_placement(wl, rename)
            flavors = admission_flavors(wl, rename, self._groups(wl))
            if seen.kind == "reserved":  # its Job stays suspended until every check is Ready
                out[name] = Outcome(
                    admitted=False,
                    placement=placement,
                    flavors=flavors,
                    preempted=was_preempted,
                    quota_reserved=True,
                    message=seen.message,
                )
                continue
            if not self.has_pods(entry):  # a bare Workload has no pods to bind
                out[name] = Outcome(
                    True,
                    placement=placement,
                    binding_observed=False,
                    flavors=flavors,
                    preempted=was_preempted,
                )
                continue
            counts, reasons, drift = self._watch_pods(entry, wl, placement)
            entry.unschedulable = sum(counts.values())
            out[name] = Outcome(
                admitted=True,
                placement=placement,
                unschedulable=counts,
                unschedulable_reasons=reasons,
                flavors=flavors,
                preempted=was_preempted,
                drift=drift,
            )
        return self._step_changes(out)

    def admission_of(
        self, entry: Entry, wl: Obj
    ) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
        """The flavors and placement of the workload's admission, by the scenario's pod set
        names (as `read` reports them)."""
        rename = self.rename(entry)
        return admission_flavors(wl, rename, self._groups(wl)), admission_placement(wl, rename)

    def rename(self, entry: Entry) -> dict[str, str]:
        """Kueue's pod set names -> the scenario's (a Job's one pod set is "main")."""
        return {"main": entry.workload.pod_sets[0].name} if entry.as_job else {}

    def _step_changes(self, out: dict[str, Outcome]) -> dict[str, Outcome]:
        """After a step: what Kueue replaced, and any eviction (harness.runner.repair)."""
        if self.before is None:
            return out
        seen_events = [
            e for ns in self.names.all_namespaces for e in events(self.kube, ns, kind="Workload")
        ]
        for name, outcome in out.items():
            entry = self.entries[name]
            if entry.rejected is not None or not entry.kueue_name:
                continue
            about = [
                e
                for e in seen_events
                if _regarding(e) == entry.kueue_name
                and e["metadata"]["uid"] not in self.before.events
            ]
            evicted = repair.new_eviction(
                self.workload_obj(entry), self.before.evictions.get(name, {}), about
            )
            old = self.before.placements.get(name)
            moved = (
                repair.replaced(old, outcome.placement)
                if outcome.admitted and evicted is None and old is not None
                else {}
            )
            out[name] = dataclasses.replace(outcome, replaced=moved, evicted=evicted)
        return out

    def _groups(self, wl: Obj) -> list[tuple[str, ...]]:
        """The covered resources of each resource group of the ClusterQueue that admitted
        the workload (a version-1 file's one ClusterQueue goes by another name here)."""
        name = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        queues = {cq.name: cq for cq in self.scenario.cluster_queues}
        cq = queues.get(name) or self.scenario.cluster_queues[0]
        return [g.covered for g in cq.resource_groups]

    def has_pods(self, entry: Entry) -> bool:
        jobset_pods = entry.kind == "JobSet" and self.cluster.jobset_pods
        return entry.as_job or jobset_pods or entry.kind == LWS

    def owner_selector(self, entry: Entry) -> str:
        """Every pod of the workload's Job or JobSet."""
        if entry.kind == LWS:
            return lws_selector(entry.workload)
        label = JOB_NAME_LABEL if entry.as_job else JOBSET_NAME_LABEL
        return f"{label}={entry.workload.name}"

    def selector(self, entry: Entry, pod_set: str) -> str:
        name = entry.workload.name
        if entry.kind == LWS:
            return lws_selector(entry.workload, pod_set)
        if entry.as_job:
            return f"{JOB_NAME_LABEL}={name}"
        return f"{JOBSET_NAME_LABEL}={name},{REPLICATED_JOB_LABEL}={pod_set}"

    def settle_pods(self, entry: Entry) -> None:
        """Wait until the admitted workload's pods are bound, unschedulable or stay gated."""
        wl = self.workload_obj(entry)
        if wl is not None:
            self._watch_pods(entry, wl, admission_placement(wl, self.rename(entry)))

    def settle_admitted_pods(self) -> None:
        """Wait until the pods of every admitted workload are bound, unschedulable or known to
        stay gated, as `read` does: a step's late repairs (harness.runner.late_repair) start
        from pods the ungater has released. Judged before, an admission the step made looked
        repaired while its pods still waited for the ungater's batch (1.7 s under load: a
        pod released onto a node that bars it, and Kueue's second pass, came after)."""
        for entry in self.entries.values():
            if entry.rejected is not None or not entry.kueue_name or not self.has_pods(entry):
                continue
            wl = self.workload_obj(entry)
            if wl is None or state(wl).kind != "admitted":
                continue
            self._watch_pods(entry, wl, self.admission_of(entry, wl)[1])

    def _watch_pods(
        self, entry: Entry, wl: Obj, placement: dict[str, dict[str, int]]
    ) -> tuple[dict[str, int], dict[str, str], dict[str, dict[str, int]]]:
        """Per pod set, wait until every pod is bound, unschedulable or stays gated; pods
        kube-scheduler bound must be where Kueue's assignment says (harness.runner.binding),
        except pods bound before the current step on nodes the assignment no longer names:
        they are the drift (kueue#12735). The ungater releases no pod onto a node listed in
        `unhealthyNodes`, so those domains cannot explain a pod that stays gated."""
        w = entry.workload
        assignments = {
            (w.pod_sets[0].name if entry.as_job else a.get("name")): a.get("topologyAssignment")
            for a in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments")
            or []
        }
        counts: dict[str, int] = {}
        reasons: dict[str, str] = {}
        drift: dict[str, dict[str, int]] = {}
        failed = set(repair.unhealthy_nodes(wl))
        owner = f"{entry.kind} {self.names.namespace_of(w)}/{w.name}"
        for ps in w.pod_sets:
            sel = self.selector(entry, ps.name)
            watched = binding.Watch(
                list_pods=partial(self.kube.list, "v1", "Pod", self.names.namespace_of(w), sel),
                count=ps.count,
                assigned=[
                    d
                    for d in binding.assigned_domains(assignments.get(ps.name))
                    if d[0].get(HOSTNAME) not in failed
                ],
                what=f"{owner} pod set {ps.name} ({sel})",
                ungate_errors=self._ungate_errors,
                unhealthy=frozenset(failed),
                barred=self._barred,
                assigned_nodes=frozenset(
                    str(d[0][HOSTNAME])
                    for d in binding.assigned_domains(assignments.get(ps.name))
                    if HOSTNAME in d[0]
                )
                or None,
            )
            seen = binding.watch(
                watched,
                deadline=time.monotonic() + self.t.pods,
                interval=self.t.interval,
                quiet=self.t.gate_quiet,
                unreleased=self.t.gate_unreleased,
            )
            assignment = assignments.get(ps.name)
            assigned = placement.get(ps.name, {})
            lowest = self._lowest_values(assignment or {})
            earlier = self.before.bound_pods if self.before is not None else frozenset()
            drifted = [
                p
                for p in seen.bound
                if assignment
                and p["metadata"]["uid"] in earlier
                and lowest.get(p["spec"]["nodeName"]) not in assigned
            ]
            if drifted:
                drift[ps.name] = pods_placement(drifted, {n: n for n in lowest})
            # A flavor without TAS has no assignment: kube-scheduler picks any of its nodes.
            on_nodes = pods_placement([p for p in seen.bound if p not in drifted], lowest)
            if assignment and any(n > assigned.get(d, 0) for d, n in on_nodes.items()):
                raise PlacementDisagreement(
                    f"{owner} pod set {ps.name}: Kueue assigned {assigned} but kube-scheduler "
                    f"bound the pods to {on_nodes}"
                )
            if seen.unschedulable:
                counts[ps.name] = seen.unschedulable
                reasons[ps.name] = seen.reason
        return counts, reasons, drift

    def _barred(self, pod: Obj, node: str) -> bool:
        """The node has a NoSchedule or NoExecute taint the pod does not tolerate."""
        obj = self.kube.get_or_none("v1", "Node", node) if node else None
        for t in ((obj or {}).get("spec") or {}).get("taints") or []:
            taint = Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
            if taint.effect in ("NoSchedule", "NoExecute") and not faults.tolerates(pod, taint):
                return True
        return False

    def _lowest_values(self, assignment: Obj) -> dict[str, str]:
        """Node name -> its value of the assignment's lowest level (the last one Kueue
        wrote: only the hostname when that is the lowest level of the flavor's Topology)."""
        lowest = (assignment.get("levels") or [HOSTNAME])[-1]
        return {
            n.name: n.labels.get(lowest, n.name if lowest == HOSTNAME else "")
            for n in self.nodes.values()
        }

    def _ungate_errors(self, pod_names: Sequence[str]) -> dict[str, str]:
        if self.cluster.kueue_log is None:
            return {}
        return binding.ungate_errors(self.cluster.kueue_log(), pod_names)

    # -- steps (harness.runner.steps) ----------------------------------------------------

    def apply(self, step: Step) -> None:
        """Carry out one step on the cluster, then let Kueue react and workloads settle."""
        steps.apply(self, step)
        held_admission.await_held_admission(self)


def _regarding(event: Obj) -> str:
    return str((event.get("involvedObject") or {}).get("name", ""))


def refused(err: KubeError) -> bool:
    """An admission webhook denied the object, or API validation found it invalid (422)."""
    return "denied the request" in str(err) or err.status == 422


def api_message(err: KubeError) -> str:
    """The API server's own message (without our "POST /path: 403" prefix)."""
    text = str(err)
    marker = f": {err.status} " if err.status else ""
    if marker and marker in text:
        text = text.split(marker, 1)[1]
    return text.strip().strip("'\"")


def lws_selector(w: Workload, pod_set: str | None = None) -> str:
    """The pods of one LeaderWorkerSet group, or of one of its pod sets: the leader is the
    group's worker index 0 ("main" holds the leader pod too: it is the worker template)."""
    assert w.lws is not None
    sel = f"{LWS_SET_LABEL}={w.lws.set_name},{LWS_GROUP_LABEL}={w.lws.index}"
    if pod_set == "leader":
        return f"{sel},{LWS_WORKER_LABEL}=0"
    if pod_set == "worker":
        return f"{sel},{LWS_WORKER_LABEL}!=0"
    return sel
