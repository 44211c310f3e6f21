"""blockAdmission on the cluster: when the state of a workload that Kueue's scheduler holds
with "waiting for all admitted workloads to be in PodsReady condition" may be read.

Kueue's scheduler waits mid-cycle while any workload in its cache (quota reserved) is not
PodsReady, and admits the workload it holds, with the assignment it had, once none is
(pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded; every cache update wakes it,
pkg/cache/scheduler/cache.go; docs/dev/kueue-v0.19.2-rules-v2.md §11.6). The workload
admitted earlier in the same cycle is such a holder until its pods start: KWOK makes them
Ready within a second or two and Kueue's job reconciler then writes PodsReady=True. A
submission settles on the held workload's message after the pending window (0.75 s), often
before that (seen on real Kueue v0.19.2: fuzz2-4109-782 read the victim waiting while its
preemptor's only pod had been Ready for a second; with a 5 s window it read it admitted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.kube import condition as get_condition
from harness.kube import poll_until
from harness.kueue.pods_ready import BLOCKED_MESSAGE, PodsReadyConfig
from harness.runner import binding
from harness.runner.steps import wait_pods_ready

if TYPE_CHECKING:
    from harness.runner.session import Entry, Session


def await_held_admission(s: Session) -> None:
    """While Kueue's scheduler holds a workload: wait until the pods of every admitted
    workload run or are known not to (bound and started, unschedulable, or staying gated),
    and Kueue has marked those whose pods all run Ready PodsReady; if then no workload
    holding quota is left not ready, Kueue admits the held one: wait for that, and again for
    the next one its own pods may hold."""
    config = PodsReadyConfig.of(s.scenario.kueue_config.document, s.scenario.feature_gates)
    if not (config.enabled and config.block_admission):
        return
    for _ in range(len(s.entries) + 1):  # each round admits at least one held workload
        held = [e for e in _live(s) if _is_held(s, e)]
        if not held:
            return
        for entry in _live(s):
            if s.has_pods(entry) and s.state_of(entry).kind == "admitted":
                s.settle_pods(entry)
                _await_started(s, entry)
        wait_pods_ready(s)
        if _not_ready(s):
            return  # Kueue keeps waiting for them: the held workloads' state stands
        _await_admission(s, held)


def _await_admission(s: Session, held: list[Entry]) -> None:
    names = ", ".join(e.workload.name for e in held)

    def released() -> tuple[bool, str]:
        still = [e.workload.name for e in held if _is_held(s, e)]
        return not still, f"still held: {', '.join(still) or 'none'}"

    poll_until(
        released,
        what=f"Kueue's scheduler to admit {names} once every workload is PodsReady",
        timeout=s.t.settle,
        interval=s.t.interval,
    )


def _live(s: Session) -> list[Entry]:
    return [e for e in s.entries.values() if e.rejected is None and e.kueue_name]


def _is_held(s: Session, entry: Entry) -> bool:
    seen = s.state_of(entry)
    return seen.kind == "pending" and seen.message == BLOCKED_MESSAGE


def _await_started(s: Session, entry: Entry) -> None:
    """Bound pods leave Pending: KWOK's pod-ready stage makes them Running, Ready or (a
    `podsReady: false` workload's) not."""
    ns = s.names.namespace_of(entry.workload)

    def started() -> tuple[bool, str]:
        pods = s.kube.list("v1", "Pod", ns, s.owner_selector(entry))
        waiting = [
            p["metadata"]["name"]
            for p in pods
            if binding.live(p)
            and (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase") == "Pending"
        ]
        return not waiting, f"bound, still Pending: {', '.join(waiting) or 'none'}"

    poll_until(
        started,
        what=f"{entry.workload.name}'s bound pods to start",
        timeout=s.t.pods,
        interval=s.t.interval,
    )


def _not_ready(s: Session) -> list[str]:
    """Workloads holding quota without PodsReady=True (the cache's WorkloadsNotReady)."""
    out = []
    for entry in _live(s):
        wl = s.workload_obj(entry)
        reserved = get_condition(wl, "QuotaReserved") if wl is not None else None
        if reserved is None or reserved.get("status") != "True":
            continue
        ready = get_condition(wl, "PodsReady")
        if ready is None or ready.get("status") != "True":
            out.append(entry.workload.name)
    return out
