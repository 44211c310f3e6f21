"""Kueue v0.19.2's per-ClusterQueue queues of pending workloads (rules §3.1, §3.5-3.7:
pkg/cache/queue/cluster_queue.go baseCompareFunc, requeueIfNotPresent, RequeueIfNotPresent,
handleInadmissibleHash, PushOrUpdate; inadmissible_workloads.go; manager.go heads).

Each ClusterQueue has a heap (popped once per cycle for its head) and an inadmissible set
(not popped until a flush). A workload requeued after it issued preemptions becomes its
queue's preemptor and, under BestEffortFIFO, sorts ahead of everything else.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from harness.fit.admission_fs import QueueUsage
from harness.fit.flavors import ScanKey
from harness.scenario.model import Scenario, Workload

NO_FIT = "NoFit"
NO_CANDIDATES = "PreemptionNoCandidates"
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
PENDING_PREEMPTION = "PendingPreemption"


@dataclass
class Scan:
    """A workload's last flavor assignment (`AssignmentClusterQueueState`): where each
    scan stopped, and the cycle and ClusterQueue generation it was made in."""

    tried: dict[ScanKey, int]
    cycle: int
    generation: int

    @property
    def pending_flavors(self) -> bool:
        return any(index != -1 for index in self.tried.values())

    def start(self) -> dict[ScanKey, int]:
        return {key: index + 1 for key, index in self.tried.items()}


@dataclass
class Pending:
    """A pending workload as its queue knows it."""

    workload: Workload
    priority: int
    created: int
    shape: Hashable
    scan: Scan | None = None


def scheduling_hash(workload: Workload, priority: int) -> Hashable:
    """What Kueue's scheduling equivalence hash covers (workload.computeSchedulingHash):
    the priority and every pod set's name, shape, count and topology request."""
    return (
        priority,
        tuple(
            (
                p.name,
                p.count,
                tuple(sorted(p.requests.items())),
                p.topology,
                tuple(sorted(p.node_selector.items())),
                p.tolerations,
            )
            for p in workload.pod_sets
        ),
    )


@dataclass
class Queues:
    """Every ClusterQueue's heap, inadmissible set, parked hashes and preemptor."""

    scenario: Scenario
    info: dict[str, Pending] = field(default_factory=dict)
    heap: dict[str, set[str]] = field(default_factory=dict)
    parked: dict[str, set[str]] = field(default_factory=dict)
    hashes: dict[str, set[Hashable]] = field(default_factory=dict)
    preemptor: dict[str, str] = field(default_factory=dict)
    inactive: set[str] = field(default_factory=set)
    """ClusterQueues Kueue does not pop (`Manager.heads`): inactive ones."""
    afs: QueueUsage | None = None
    """Admission fair sharing: LocalQueue usage sorts ahead of everything else."""
    mismatched: set[str] = field(default_factory=set)
    """Parked for a namespace their ClusterQueue's selector does not match: a flush leaves
    them parked (inadmissible_workloads.go, the namespaceSelector check)."""
    hashing: bool = True
    """SchedulingEquivalenceHashing: a workload shaped like one found inadmissible is parked
    with it unevaluated (BestEffortFIFO). Off by default in Kueue v0.17.1."""
    stopped: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, name) of the LocalQueues with a stopPolicy: out of the queue manager
    (harness.kueue.local_queue_stop), their workloads kept `aside`, never popped."""
    aside: dict[str, Pending] = field(default_factory=dict)
    stop_policies: dict[tuple[str, str], str] = field(default_factory=dict)
    """The stopPolicy a `set-stop-policy` step last gave each LocalQueue it names."""
    requested: set[str] = field(default_factory=set)
    """ClusterQueues whose parked workloads the requeuer is to move back. Kueue batches every
    such flush (inadmissible_workloads.go workqueueRequeuer: AddAfter requeueBatchPeriod,
    1 s) while the scheduler pops what is in the heaps every ~10 ms, so the heads there (a
    StrictFIFO head, a workload requeued at once) take freed room before the parked ones
    are back (`flush`, `requeue_requested`)."""

    @staticmethod
    def local_queue(w: Workload) -> tuple[str, str]:
        return (w.namespace, w.queue_name)

    def _strategy(self, cq: str) -> str:
        return self.scenario.cluster_queue(cq).queueing_strategy

    def push(self, pending: Pending) -> None:
        """`PushOrUpdate`: a new (or requeued-after-eviction) workload enters the heap, or the
        inadmissible set if its equivalence class was parked (BestEffortFIFO)."""
        cq = pending.workload.queue
        if self.local_queue(pending.workload) in self.stopped:
            self.aside[pending.workload.name] = pending
            return
        self.info[pending.workload.name] = pending
        parked = pending.shape in self.hashes.get(cq, ())
        if self.hashing and self._strategy(cq) == "BestEffortFIFO" and parked:
            self.parked.setdefault(cq, set()).add(pending.workload.name)
        else:
            self.heap.setdefault(cq, set()).add(pending.workload.name)

    def _key(self, cq: str, name: str) -> tuple[float, int, int, int]:
        pending = self.info[name]
        sticky = self.preemptor.get(cq) == name and self._strategy(cq) == "BestEffortFIFO"
        usage = self.afs.usage(pending.workload) if self.afs is not None else 0.0
        return (usage, 0 if sticky else 1, -pending.priority, pending.created)

    def heads(self) -> list[Pending]:
        """Pop the head of every ClusterQueue's heap (`Manager.Heads`)."""
        out = []
        for cq in self.scenario.cluster_queues:
            names = self.heap.get(cq.name)
            if names and cq.name not in self.inactive:
                if self.afs is not None and self.afs.applies(cq.name):
                    ordered = sorted(names, key=lambda n, c=cq.name: self._key(c, n))  # type: ignore[misc]
                    name = self.afs.contest([self.info[n].workload for n in ordered]).name
                else:
                    name = min(names, key=lambda n, c=cq.name: self._key(c, n))  # type: ignore[misc]
                names.discard(name)
                out.append(self.info[name])
        return out

    def requeue(self, pending: Pending, reason: str) -> None:
        """`RequeueIfNotPresent` after a cycle that did not admit the workload."""
        cq, name = pending.workload.queue, pending.workload.name
        strict = self._strategy(cq) == "StrictFIFO"
        if reason == PENDING_PREEMPTION:
            self.preemptor[cq] = name
        immediate = strict or reason in (FAILED_AFTER_NOMINATION, PENDING_PREEMPTION)
        if immediate or (pending.scan is not None and pending.scan.pending_flavors):
            self.heap.setdefault(cq, set()).add(name)
            return
        self.parked.setdefault(cq, set()).add(name)
        if self.hashing and not strict and reason in (NO_FIT, NO_CANDIDATES):
            heap = self.heap.get(cq, set())
            same = {n for n in heap if self.info[n].shape == pending.shape}
            heap -= same
            self.parked[cq] |= same
            self.hashes.setdefault(cq, set()).add(pending.shape)

    def delete(self, name: str) -> None:
        """Admitted or deleted: out of its queue, and no longer its queue's preemptor."""
        self.aside.pop(name, None)
        pending = self.info.pop(name, None)
        if pending is None:
            return
        cq = pending.workload.queue
        self.heap.get(cq, set()).discard(name)
        self.parked.get(cq, set()).discard(name)
        self.mismatched.discard(name)
        if self.preemptor.get(cq) == name:
            del self.preemptor[cq]

    def flush(self, cqs: Iterable[str]) -> None:
        """`notifyRetryInadmissibleWithoutLock`: the requeuer will move these ClusterQueues'
        parked workloads back once the heads in the heaps have had their cycles."""
        self.requested.update(cqs)

    def requeue_requested(self) -> bool:
        """The requeuer's batch (`requeueWorkloadsCohort`): whether it moved a workload."""
        cqs, self.requested = self.requested, set()
        moved = any(self.parked.get(cq, set()) - self.mismatched for cq in cqs)
        self._move_parked(cqs)
        return moved

    def _move_parked(self, cqs: Iterable[str]) -> None:
        """`queueInadmissibleWorkloads`: parked workloads back to their heaps."""
        for cq in cqs:
            parked = self.parked.pop(cq, set())
            if held := parked & self.mismatched:
                self.parked[cq] = held
            self.heap.setdefault(cq, set()).update(parked - self.mismatched)
            self.hashes.pop(cq, None)

    def stop(self, lq: tuple[str, str]) -> None:
        """The LocalQueue got a stopPolicy: its workloads leave their ClusterQueue's heap
        and inadmissible set (DeleteFromLocalQueue)."""
        self.stopped.add(lq)
        for name, pending in list(self.info.items()):
            if self.local_queue(pending.workload) == lq:
                self.delete(name)
                self.aside[name] = pending

    def resume(self, lq: tuple[str, str]) -> None:
        """Its stopPolicy is None again: every workload of it goes to the heap
        (AddFromLocalQueue: pushToHeapIfNotTracked, no equivalence-hash parking)."""
        self.stopped.discard(lq)
        for name, pending in list(self.aside.items()):
            if self.local_queue(pending.workload) == lq:
                del self.aside[name]
                self.info[name] = pending
                self.heap.setdefault(pending.workload.queue, set()).add(name)

    def restart(self, hashing: bool) -> None:
        """A new Kueue process (`upgrade-kueue`): it rebuilds its queues from the Workloads,
        so every pending workload is in its heap again, with no parked hash, preemptor or
        flavor scan progress remembered."""
        self.hashing = hashing
        self.requested.clear()
        self._move_parked(list(self.parked))
        self.hashes.clear()
        self.preemptor.clear()
        for pending in self.info.values():
            pending.scan = None

    def signature(self) -> Hashable:
        """The queues' state, to see when cycles stop changing it."""
        return (
            tuple(sorted((cq, tuple(sorted(v))) for cq, v in self.heap.items())),
            tuple(sorted((cq, tuple(sorted(v))) for cq, v in self.parked.items())),
            tuple(sorted(self.preemptor.items())),
            tuple(
                sorted(
                    (n, tuple(sorted(p.scan.tried.items())) if p.scan else ())
                    for n, p in self.info.items()
                )
            ),
        )
