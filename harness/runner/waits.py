"""Deadlines for every wait the runner makes, and the settle rule for a pending workload."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from harness.kube import (
    KUEUE_API,
    Kube,
    NotFound,
    Obj,
    absent,
    poll_for,
    poll_until,
)
from harness.runner.reading import NO_CONDITION, State, bound


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `pending_window`: how long a refused workload must stay refused before it
    counts as pending (Kueue retries at once when its caches were a step behind).
    `step_window`: how long a workload still pending after a step may take to be admitted;
    Kueue batches requeues after non-TAS pods go away every 10 s
    (pkg/controller/tas/non_tas_usage_controller.go, defaultRequeueBatchInterval)."""

    settle: float = 60.0
    pods: float = 60.0
    nodes: float = 60.0
    cleanup: float = 90.0
    pending_window: float = 0.75
    step_window: float = 12.0
    park_window: float = 3.0
    # How long a kept ClusterQueue may count the previous scenario's workloads before it is
    # made again (harness.runner.shaping).
    kept_queue: float = 10.0
    # After a step, how long every Workload must stay unchanged once Kueue has nothing left
    # to do for it (harness.runner.repair.settle).
    fault_quiet: float = 1.5
    # Gated pods that Kueue's assignment explains count as staying gated once unchanged this
    # long after the ungater released a sibling (it acts in 1 s batches), or `gate_unreleased`
    # when it released none and Kueue's log says nothing (harness.runner.binding).
    gate_quiet: float = 2.0
    # Slack on Kueue's batch periods before a retry set off by shaping counts as done
    # (harness.runner.requeue).
    requeue_margin: float = 0.5
    gate_unreleased: float = 8.0
    unwritten_window: float = 15.0
    # Waiting for the next creation second; more than 1 s means the clocks disagree.
    clock: float = 5.0
    interval: float = 0.1

    @classmethod
    def from_env(cls) -> Timeouts:
        """KTH_PENDING_WINDOW / KTH_STEP_WINDOW override the two settle windows."""
        return cls(
            pending_window=float(os.environ.get("KTH_PENDING_WINDOW", cls.pending_window)),
            step_window=float(os.environ.get("KTH_STEP_WINDOW", cls.step_window)),
        )


def settle(
    read: Callable[[], State],
    *,
    what: str,
    t: Timeouts,
    may_park: bool = False,
    not_before: float = 0.0,
    unwritten: Callable[[], bool] | None = None,
) -> State:
    """Poll until admitted, or pending for `pending_window` without a change of mind.

    `not_before` (a `time.monotonic()` value): no pending verdict before it, for a retry
    Kueue owes the workload then (a deletion freed quota or capacity: requeued a batch later).

    `may_park`: an identical workload is already pending, so Kueue's
    SchedulingEquivalenceHashing (on by default in v0.19) may park this one unevaluated,
    with no QuotaReserved condition at all (pkg/cache/queue/cluster_queue.go,
    hashToBulkMoveReason). After `park_window` without any condition it counts as pending
    with an empty message. Any workload gets the same verdict after `unwritten_window`:
    Kueue can keep one at the head forever without storing a status (an admission the API
    server refuses, or one skipped by the final Fits check), and everything behind it too;
    `unwritten` (Kueue's log says it keeps doing so: harness.runner.kueuelog.UnwrittenLoop)
    ends that wait once `pending_window` has passed."""
    started = time.monotonic()
    pending_since: float | None = None
    seen = State("unsettled", NO_CONDITION)

    def verdict() -> State | None:
        nonlocal pending_since, seen
        seen = read()
        now = time.monotonic()
        if seen.kind == "admitted":
            return seen
        if seen.kind in ("pending", "reserved"):  # reserved: waiting for admission checks
            pending_since = pending_since if pending_since is not None else now
            if now - pending_since >= t.pending_window and now >= not_before:
                return seen
        else:
            pending_since = None
            window = t.park_window if may_park else t.unwritten_window
            if seen.message == NO_CONDITION and now >= not_before:
                waited = now - started
                if waited >= window or kept_unwritten(unwritten, waited, t):
                    return State("pending", "")
        return None

    return poll_for(
        verdict,
        timeout=t.settle,
        interval=t.interval,
        gave_up=lambda _: (
            f"waited {t.settle:.0f}s for {what} to be admitted (QuotaReserved and Admitted "
            f"True) or pending (QuotaReserved False with a message); last seen: "
            f"{seen.kind}: {seen.message}"
        ),
    )


def kept_unwritten(unwritten: Callable[[], bool] | None, waited: float, t: Timeouts) -> bool:
    """A workload without any status counts as pending before the unwritten window when
    Kueue's log shows it keeps it so (it loops without writing); never before the pending
    window, which every pending verdict holds."""
    return unwritten is not None and waited >= t.pending_window and unwritten()


def find_workload(kube: Kube, namespace: str, kind: str, job: str, t: Timeouts) -> str:
    """The Workload Kueue's job reconciler creates for the Job or JobSet (owner reference)."""
    return _owned_workload(kube, namespace, kind, job, t, lambda meta: True, f"{kind} {job}")


def find_group_workload(kube: Kube, namespace: str, lws: str, index: int, t: Timeouts) -> str:
    """The Workload Kueue makes for group `index` of a LeaderWorkerSet: owned by it, with
    annotation kueue.x-k8s.io/component-workload-index (leaderworkerset_reconciler.go)."""

    def of_group(meta: Obj) -> bool:
        return (meta.get("annotations") or {}).get(GROUP_INDEX) == str(index)

    what = f"LeaderWorkerSet {lws} group {index}"
    return _owned_workload(kube, namespace, "LeaderWorkerSet", lws, t, of_group, what)


def _owned_workload(
    kube: Kube,
    namespace: str,
    kind: str,
    owner: str,
    t: Timeouts,
    matches: Callable[[Obj], bool],
    what: str,
) -> str:
    """The name of the first Workload in `namespace` owned by `kind` `owner` whose metadata
    `matches`, once Kueue has made it."""

    def probe() -> tuple[bool, str]:
        for wl in kube.list(KUEUE_API, "Workload", namespace):
            meta = wl["metadata"]
            owners = meta.get("ownerReferences") or []
            mine = any(o.get("kind") == kind and o.get("name") == owner for o in owners)
            if mine and matches(meta):
                return True, meta["name"]
        return False, f"no Workload for the {what} yet"

    return poll_until(
        probe,
        what=f"Kueue to create a Workload for {what} in {namespace}",
        timeout=t.settle,
        interval=t.interval,
    )


GROUP_INDEX = "kueue.x-k8s.io/component-workload-index"


def wait_bound_pods(
    kube: Kube, namespace: str, sel: str, count: int, owner: str, t: Timeouts
) -> list[Obj]:
    """The `count` live pods matching `sel`, once kube-scheduler has bound them all."""
    pods: list[Obj] = []

    def probe() -> tuple[bool, str]:
        pods[:] = [
            p
            for p in kube.list("v1", "Pod", namespace, sel)
            if not p["metadata"].get("deletionTimestamp")
        ]
        n = bound(pods)
        gated = sum(1 for p in pods if (p.get("spec") or {}).get("schedulingGates"))
        return n >= count, f"{len(pods)} pods, {n} bound, {gated} still gated"

    poll_until(
        probe,
        what=f"the {count} pods ({sel}) of {owner} to be bound by kube-scheduler",
        timeout=t.pods,
        interval=t.interval,
    )
    return pods


def wait_gone(
    kube: Kube, api: str, kind: str, name: str, namespace: str | None, t: Timeouts
) -> None:
    """Poll until the object is gone (harness.kube.wait_for cannot wait for absence)."""

    def probe() -> tuple[bool, str]:
        return absent(kube.get_or_none(api, kind, name, namespace))

    ref = f"{kind} {namespace + '/' if namespace else ''}{name}"
    poll_until(probe, what=f"{ref} to be deleted", timeout=t.settle, interval=t.interval)


def delete_pods(kube: Kube, namespace: str, sel: str, t: Timeouts, keep: str = "") -> None:
    """Delete the pods matching `sel` and wait until they are gone; a Job's tracking
    finalizer on a terminating pod is dropped so it cannot hold the pod. Pods holding the
    finalizer `keep` stay Terminating (and are not waited for)."""
    kube.delete_all("v1", "Pod", namespace, sel)

    def probe() -> tuple[bool, str]:
        left = [
            p
            for p in kube.list("v1", "Pod", namespace, sel)
            if not keep or keep not in (p["metadata"].get("finalizers") or [])
        ]
        for pod in left:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and meta.get("finalizers"):
                with contextlib.suppress(NotFound):
                    kube.patch(
                        "v1",
                        "Pod",
                        meta["name"],
                        {"metadata": {"finalizers": None}},
                        namespace=namespace,
                    )
        return not left, f"{len(left)} pods left"

    poll_until(
        probe, what=f"pods {sel} in {namespace} to be deleted", timeout=t.pods, interval=t.interval
    )


def _stamp(text: str) -> datetime:
    """A Kubernetes timestamp (RFC 3339, whole seconds, UTC)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def server_time(kube: Kube, namespace: str) -> datetime:
    """The API server's clock, to the second: the creationTimestamp it gives a ConfigMap in
    a dry run (nothing is stored)."""
    probe = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "kth-clock-", "namespace": namespace},
    }
    return _stamp(kube.create(probe, dry_run=True)["metadata"]["creationTimestamp"])


def wait_past_second(kube: Kube, namespace: str, previous: str, t: Timeouts) -> None:
    """Until the API server's clock is past the second of `previous` (a creationTimestamp),
    so the next object is created in a later second. Kueue orders a queue by creation
    second and then by UID, which is random (docs/dev/kueue-v0.19.2-rules-v2.md §8)."""
    target = _stamp(previous)
    ahead = (target - datetime.now(UTC)).total_seconds() + 1
    if 0 < ahead <= 2:  # our clock is the server's here; spare the API the polling
        time.sleep(ahead)

    def probe() -> tuple[bool, str]:
        now = server_time(kube, namespace)
        return now > target, f"server clock {now:%H:%M:%S}"

    poll_until(
        probe,
        what=f"the API server's clock to pass {previous}",
        timeout=t.clock,
        interval=t.interval,
    )
