"""What Kueue did to running workloads during a step, and when it is done doing it.

After a step the runner waits until Kueue has reacted (`settle`) and then reads, per workload,
what the step changed (`Before` taken just before it, `changes` after):

- `replaced`: per pod set, the nodes whose pods left the topology assignment -> the nodes that
  gained pods, for a workload admitted before and after the step and not evicted in between
  (Kueue's second pass keeps the other domains, `mergeTopologyAssignments`);
- `evicted`: an eviction other than by preemption during the step: Kueue counts each one in
  `status.schedulingStats.evictions` by reason. The message is that of the step's first
  `EvictedDueTo<reason>` event, else the `Evicted` condition's (while it is True) or the
  `Requeued` condition's (Kueue copies the eviction there when it requeues,
  `pkg/controller/jobframework/reconciler.go`, and keeps it after readmission). The first,
  because Kueue may evict twice in one step: a second pass queued with the Workload as it was
  before a multiple-failure eviction still runs on that stale copy and evicts again for "no
  replacement" (`pkg/cache/queue/second_pass_queue.go` keeps the object it was given), and
  the conditions then keep only the second message.

Kueue's rules: docs/dev/kueue-v0.19.2-node-replacement.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.kube import condition, poll_for
from harness.runner.kueuelog import KueueLog
from harness.runner.reading import NO_CONDITION, PREEMPTED, Obj, evicted_now, state
from harness.runner.waits import Timeouts
from harness.scenario.model import Eviction, Replaced

Snapshot = Mapping[str, Obj | None]
Placement = Mapping[str, Mapping[str, int]]


def eviction_counts(wl: Obj | None) -> dict[str, int]:
    """Reason -> how often Kueue evicted the workload for it (preemption left out)."""
    stats = ((wl or {}).get("status") or {}).get("schedulingStats") or {}
    out: dict[str, int] = {}
    for e in stats.get("evictions") or []:
        reason = str(e.get("reason") or "")
        if reason and reason != PREEMPTED:
            out[reason] = out.get(reason, 0) + int(e.get("count") or 0)
    return out


def unhealthy_nodes(wl: Obj | None) -> list[str]:
    """`status.unhealthyNodes`: the nodes Kueue's node controller found failed for it."""
    listed = ((wl or {}).get("status") or {}).get("unhealthyNodes") or []
    return [str(n.get("name")) for n in listed if n.get("name")]


@dataclass(frozen=True)
class Before:
    """Each live workload just before a step: its placement when admitted, its eviction
    counts, the pods bound then (uid), which may drift when the assignment moves, and the
    Workload events already there."""

    placements: Mapping[str, Placement] = field(default_factory=dict)
    evictions: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    bound_pods: frozenset[str] = frozenset()
    events: frozenset[str] = frozenset()  # uids of the namespace's Workload events then
    # The bound, running pods that are not Kueue's TAS pods (usage, plain Jobs): the step
    # frees non-TAS capacity when one of them goes (harness.runner.steps.after_step).
    non_tas_pods: frozenset[str] = frozenset()


def replaced(before: Placement, after: Placement) -> Replaced:
    """Pod set -> node that lost pods -> the nodes that gained pods (sorted)."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for ps, old in before.items():
        new = after.get(ps, {})
        lost = [n for n, c in old.items() if new.get(n, 0) < c]
        gained = tuple(sorted(n for n, c in new.items() if c > old.get(n, 0)))
        if lost and gained:
            out[ps] = {n: gained for n in sorted(lost)}
    return out


def new_eviction(
    wl: Obj | None, before: Mapping[str, int], new_events: Sequence[Obj]
) -> Eviction | None:
    """The first eviction (not by preemption) Kueue counted since `before`, with its
    message; `new_events` are the Workload's events since then, oldest first."""
    now = eviction_counts(wl)
    grown = [r for r, c in now.items() if c > before.get(r, 0)]
    if not grown:
        return None
    for event in new_events:
        for reason in grown:
            # patching.ReasonWithCause; a deactivation adds its cause ("...DueToAdmissionCheck")
            said = str(event.get("reason") or "")
            if said == f"EvictedDueTo{reason}" or said.startswith(f"EvictedDueTo{reason}DueTo"):
                return Eviction(reason, str(event.get("message") or event.get("note") or ""))
    reason = grown[0]
    for kind in ("Evicted", "Requeued"):
        cond = condition(wl, kind) if wl else None
        if cond and cond.get("reason") == reason and cond.get("message"):
            return Eviction(reason, str(cond["message"]))
    return Eviction(reason, "")


# -- waiting until Kueue has reacted -----------------------------------------------------------


@dataclass(frozen=True)
class Watch:
    """What settling needs: the live Workloads by Kueue's name, the nodes the step touched
    (Kueue's node controller must have looked at each), the namespace, and whether a failed
    second pass evicts (`TASFailedNodeReplacementFailFast`)."""

    read: Callable[[], Snapshot]
    nodes: Sequence[str]
    namespace: str
    fail_fast: bool
    node_controller: bool


def problem(wl: Obj | None, name: str, w: Watch, log: KueueLog) -> str | None:
    """Why Kueue may still change this workload, or None."""
    if wl is None:
        return None
    reserved = condition(wl, "QuotaReserved")
    held = reserved is not None and reserved.get("status") == "True"
    if evicted_now(wl) and held:
        return "evicted, still holding quota"
    evicted = condition(wl, "Evicted")
    deactivated = ((wl.get("spec") or {}).get("active")) is False
    if (
        not deactivated  # Kueue never evaluates a deactivated workload again
        and evicted_now(wl)
        and evicted is not None
        and reserved is not None
        and reserved.get("message") == evicted.get("message")
    ):
        return "evicted and released, not evaluated again yet"
    seen = state(wl)
    if seen.kind == "unsettled" and seen.message != NO_CONDITION:
        return f"{seen.kind}: {seen.message}"
    failed = unhealthy_nodes(wl)
    if failed and seen.kind == "admitted":
        if w.fail_fast:
            return f"unhealthyNodes {failed}: waiting for the second pass"
        if log.available and not log.second_passes_failed(w.namespace, name):
            return f"unhealthyNodes {failed}: no second pass since the step (fail-fast off)"
    return None


def settle(w: Watch, log: KueueLog, t: Timeouts) -> None:
    """Poll until Kueue's node controller has reconciled each touched node since the step,
    no workload is mid-repair (`problem`), and nothing changed for `t.fault_quiet` (the
    node controller's status patch follows its log line by milliseconds; a second pass
    waits at least 1 s, and leaves `unhealthyNodes` set until then). The deadline allows
    for the second pass's longest backoff (30 s, pkg/cache/queue/second_pass_queue.go)."""
    last: tuple[object, ...] | None = None
    quiet_since = time.monotonic()
    issues: dict[str, str] = {}

    def reacted() -> bool | None:
        nonlocal last, quiet_since, issues
        seen = w.read()
        issues = {n: why for n, wl in seen.items() if (why := problem(wl, n, w, log))}
        if w.node_controller and log.available:
            for node in w.nodes:
                if not log.reconciled(node):
                    issues[f"node {node}"] = "Kueue's node controller has not reconciled it"
        now = time.monotonic()
        signature = tuple(
            (n, ((wl or {}).get("metadata") or {}).get("resourceVersion")) for n, wl in seen.items()
        )
        if signature != last:
            last, quiet_since = signature, now
        return True if not issues and now - quiet_since >= t.fault_quiet else None

    def gave_up(waited: float) -> str:
        lines = "; ".join(f"{n}: {why}" for n, why in issues.items())
        return (
            f"waited {waited:.0f}s for Kueue to react to the step (node reconciled, "
            f"replaced or evicted and requeued); last seen: {lines or 'states still changing'}"
        )

    poll_for(reacted, timeout=t.settle + 30, interval=t.interval, gave_up=gave_up)
