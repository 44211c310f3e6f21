"""`pods-not-ready` / `pods-ready` on the cluster: the runner plays the kubelet reporting a
workload's running pods not Ready (a readiness probe failing) and Ready again, then waits
until Kueue has seen it.

KWOK's pod-ready stage acts only on Pending pods, so a Running pod whose Ready condition the
runner set False stays so. The Job controller then counts fewer ready pods and Kueue's job
reconciler writes PodsReady=False (WaitForRecovery). Where the recovery timeout runs out
within the step (harness.kueue.pods_ready.within_step), this waits for Kueue's eviction or
deactivation; the backoff and readmission that follow are awaited by repair.settle (an
evicted workload not yet evaluated again is not settled). Rules: docs/dev/
kueue-v0.19.2-rules-v2.md §11.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.backends.base import BackendError
from harness.kube import Obj, poll_until
from harness.kube import condition as get_condition
from harness.kueue.pods_ready import PodsReadyConfig, within_step
from harness.runner import binding
from harness.runner.reading import state
from harness.runner.repair import eviction_counts

if TYPE_CHECKING:
    from harness.runner.session import Entry, Session

TIMER_SLACK = 30.0
"""Seconds past a timer for Kueue to act on it (reconcile requeue, Job stop, status writes)."""


def set_ready(s: Session, name: str, *, ready: bool) -> None:
    """Patch the workload's running pods' Ready condition, then wait for Kueue's reaction."""
    entry = s.entries.get(name)
    if entry is None or entry.rejected is not None or not s.has_pods(entry):
        return
    ns = s.names.namespace
    wl = s.workload_obj(entry)
    if wl is None or state(wl).kind != "admitted":
        return  # not admitted: no pods run to report on
    admitted = _admitted_pods(wl)
    pods: list[Obj] = []

    def all_running() -> tuple[bool, str]:
        pods[:] = [
            p
            for p in s.kube.list("v1", "Pod", ns, s.owner_selector(entry))
            if binding.live(p) and (p.get("status") or {}).get("phase") == "Running"
        ]
        return len(pods) >= admitted, f"{len(pods)}/{admitted} pods Running"

    # Right after admission the pods are still being ungated, bound and started by KWOK: a
    # pod patched before it runs would start Ready anyway (seen once in CI, the step 1 s early).
    poll_until(
        all_running,
        what=f"{name}'s admitted pods to run before their readiness changes",
        timeout=s.t.pods,
        interval=0.25,
    )
    for pod in pods:
        s.kube.patch(
            "v1",
            "Pod",
            pod["metadata"]["name"],
            {"status": _status(pod, ready)},
            namespace=ns,
            subresource="status",
            patch_type="strategic",
        )
    before = eviction_counts(s.workload_obj(entry))
    config = PodsReadyConfig.of(s.scenario.kueue_config.document, s.scenario.feature_gates)
    if not config.enabled:
        return
    want = "True" if ready else "False"

    def seen() -> tuple[bool, str]:
        wl = s.workload_obj(entry)
        cond = get_condition(wl, "PodsReady") if wl else None
        grown = eviction_counts(wl) != before
        said = f"PodsReady {cond.get('status')} ({cond.get('reason')})" if cond else "no PodsReady"
        return (cond is not None and cond.get("status") == want) or grown, said

    poll_until(
        seen, what=f"Kueue to write PodsReady={want} on {name}", timeout=s.t.pods, interval=0.25
    )
    if ready or not within_step(config.recovery_timeout):
        return

    def evicted() -> tuple[bool, str]:
        counts = eviction_counts(s.workload_obj(entry))
        return counts != before, f"evictions {counts or 'none'}"

    poll_until(
        evicted,
        what=f"Kueue to evict {name} at its PodsReady timeout ({config.recovery_timeout:g}s)",
        timeout=config.recovery_timeout + TIMER_SLACK,
        interval=0.25,
    )


def _admitted_pods(wl: Obj) -> int:
    """Pods the Workload's admission counts (its pod sets' assigned counts)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    return sum(int(a.get("count") or 0) for a in admission.get("podSetAssignments") or [])


def _status(pod: Obj, ready: bool) -> Obj:
    """The kubelet's status for a container whose readiness probe fails (or passes)."""
    value = "True" if ready else "False"
    spec = pod.get("spec") or {}
    running = {c.get("name"): c for c in (pod.get("status") or {}).get("containerStatuses") or []}
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": value,
                **({} if ready else {"reason": "ContainersNotReady"}),
            },
            {"type": "ContainersReady", "status": value},
        ],
        "containerStatuses": [
            {
                **running.get(c["name"], {"name": c["name"], "image": c.get("image", "")}),
                "ready": ready,
            }
            for c in spec.get("containers") or []
        ],
    }


MAX_START_TIMEOUTS = 20
"""Evictions of `podsReady: false` workloads awaited after one submission or step (each
timeout, backoff and readmission is at most TIMER_HORIZON s; Kueue's backoff doubles)."""


def await_start_timeouts(s: Session, settle: Callable[[], None]) -> None:
    """`podsReady: false` workloads (their pods never turn Ready, harness.runner.objects
    annotates them for KWOK): while one is admitted without PodsReady=True and the timeout
    runs out within the step, wait for Kueue's eviction or deactivation, then `settle` (the
    backoff and readmission: harness.runner.repair)."""
    config = PodsReadyConfig.of(s.scenario.kueue_config.document, s.scenario.feature_gates)
    if not config.enabled or not within_step(config.timeout):
        return
    for _ in range(MAX_START_TIMEOUTS):
        timed = [e for e in s.entries.values() if not e.workload.pods_ready and _timed(s, e)]
        if not timed:
            return
        entry = timed[0]
        before = eviction_counts(s.workload_obj(entry))

        def evicted(entry: Entry = entry, before: dict[str, int] = before) -> tuple[bool, str]:
            counts = eviction_counts(s.workload_obj(entry))
            return counts != before, f"evictions {counts or 'none'}"

        poll_until(
            evicted,
            what=f"Kueue to evict {entry.workload.name} at its PodsReady timeout "
            f"({config.timeout:g}s from admission)",
            timeout=config.timeout + TIMER_SLACK,
            interval=0.25,
        )
        settle()
    raise BackendError(f"more than {MAX_START_TIMEOUTS} PodsReady timeouts in one step")


def _timed(s: Session, entry: Entry) -> bool:
    """Admitted, its PodsReady not True: Kueue's timeout is running."""
    if entry.rejected is not None or not entry.kueue_name:
        return False
    wl = s.workload_obj(entry)
    if wl is None or state(wl).kind != "admitted":
        return False
    ready = get_condition(wl, "PodsReady")
    return ready is None or ready.get("status") != "True"
