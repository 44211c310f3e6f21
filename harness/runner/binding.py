"""Which admitted pods never run, as the cluster shows it: kube-scheduler's verdict, or a gate
that stays.

Once Kueue admits a workload its ungater releases each pod with the nodeSelector of the pod's
domain and kube-scheduler binds it (pkg/controller/tas/topology_ungater.go). A pod that no
node can take gets PodScheduled=False, reason Unschedulable, with kube-scheduler's message:
that is final for the cluster as it is. A pod the ungater cannot release keeps the
`kueue.x-k8s.io/topology` gate and nothing marks it; it counts as staying gated when Kueue's
assignment explains it (the pod already selects another value of a level than an assigned
domain, which the API server will not let the ungater change, or the assignment holds fewer
pods than the pod set) and either Kueue logged the failed release of each such pod or the
gated pods stayed unchanged for a quiet window: short once the ungater has released a
sibling, longer when it released none. Anything else is waited for until the pods deadline,
which says what it saw.

A pod the ungater released onto a node it cannot run on (an untolerated taint, the node
still in the topology assignment: fail-fast off, no replacement) is marked Failed by Kueue's
node controller (TerminatedByKueue, pkg/controller/tas/node_controller.go getPodsToTerminate,
markPodsFailed) and the Job recreates it after a backoff that doubles with each failure, only
for it to fail again: the pod set's missing pod counts as never running once its latest pod
ended that way on a node that still bars it (Kueue lists the node in `unhealthyNodes`, or the
node keeps a NoSchedule/NoExecute taint the pod does not tolerate: Kueue may clear
`unhealthyNodes` while it goes on failing the pods), whether the watch sees it between two
attempts or as Unschedulable.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.kube import condition, poll_for
from harness.runner.decode import domains
from harness.runner.objects import JOB_INDEX_LABEL as JOB_INDEX
from harness.runner.objects import JOB_NAME_LABEL as JOB_NAME
from harness.scenario.model import HOSTNAME

Obj = dict[str, Any]
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
TERMINATED_BY_KUEUE = "TerminatedByKueue"
Domain = tuple[dict[str, str], int]  # the labels the ungater adds, and the domain's pods


@dataclass
class PodSetPods:
    """The live pods of one pod set once settled: those bound, and those that never run."""

    bound: list[Obj] = field(default_factory=list)
    unschedulable: int = 0
    reason: str = ""


def assigned_domains(assignment: Mapping[str, Any] | None) -> list[Domain]:
    """Each domain of a podSetAssignment's topologyAssignment as ungater labels and pods."""
    if not assignment:
        return []
    levels = list(assignment.get("levels") or [])
    return [(dict(zip(levels, values, strict=True)), n) for values, n in domains(assignment)]


def state_of(pod: Obj) -> str:
    """bound, unschedulable (kube-scheduler said so), gated, or released (not yet judged)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return "bound"
    if any(g.get("name") == TOPOLOGY_GATE for g in spec.get("schedulingGates") or []):
        return "gated"
    scheduled = condition(pod, "PodScheduled")
    if (
        scheduled
        and scheduled.get("status") == "False"
        and scheduled.get("reason") == "Unschedulable"
    ):
        return "unschedulable"
    return "released"


def live(pod: Obj) -> bool:
    """Not terminating and not terminated (phase Failed or Succeeded)."""
    phase = (pod.get("status") or {}).get("phase")
    return not pod["metadata"].get("deletionTimestamp") and phase not in ("Failed", "Succeeded")


def conflict(pod: Obj, assigned: Sequence[Domain]) -> str:
    """The first level the pod already selects with another value than an assigned domain."""
    own = (pod.get("spec") or {}).get("nodeSelector") or {}
    for labels, _ in assigned:
        for key, value in labels.items():
            if key in own and own[key] != value:
                return f"it selects {key}={own[key]}, its assigned domain has {key}={value}"
    return ""


def ungate_errors(log: str, pod_names: Sequence[str]) -> dict[str, str]:
    """Kueue's last error line about releasing each of these pods ("failed ungating pod":
    the API server refused the nodeSelector), as pod name -> `msg: error`. The ungater also
    logs "failed to read rank information from pods" for every JobSet leader/worker group
    (workers' ranks are offset by the leader and start below 0); that is no failure to
    release."""
    found: dict[str, str] = {}
    for line in log.splitlines():
        if "ungat" not in line:
            continue
        named = [name for name in pod_names if name in line]
        if not named:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("level") != "error":
            continue
        message = str(entry.get("msg", ""))
        if "ungating" in message:  # not "failed to read rank information", also logged here
            for name in named:
                found[name] = f"{message}: {entry.get('error', '')}"
    return found


def _explained(gated: list[Obj], assigned: Sequence[Domain], count: int, holding: int) -> bool:
    """The ungater counts a Terminating pod against its domain as if it ran
    (topology_ungater.go: podsForPodSet leaves out only terminated pods), so each one keeps
    a recreated sibling gated, as does an assignment for fewer pods than the pod set."""
    spare = count - sum(n for _, n in assigned)
    plain = sum(1 for pod in gated if not conflict(pod, assigned))
    return plain <= max(spare, 0) + holding


def _holding(pods: Sequence[Obj]) -> int:
    """Released pods that are Terminating but not terminated."""
    return sum(
        1
        for p in pods
        if p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")
        and state_of(p) != "gated"
    )


def _name(pod: Obj) -> str:
    return str(pod["metadata"]["name"])


@dataclass(frozen=True)
class Watch:
    """One pod set to watch: how to list its pods, how many, and Kueue's domains for it."""

    list_pods: Callable[[], list[Obj]]
    count: int
    assigned: Sequence[Domain]
    what: str
    # Kueue's log line about a failed release, per pod (empty when there is no log).
    ungate_errors: Callable[[Sequence[str]], dict[str, str]] = lambda names: {}
    # The Workload's `status.unhealthyNodes`.
    unhealthy: frozenset[str] = frozenset()
    # Whether the node (by name) now bars the pod: a NoSchedule/NoExecute taint it does not
    # tolerate.
    barred: Callable[[Obj, str], bool] = lambda pod, node: False
    # The nodes of the pod set's topology assignment (None: not known by node).
    assigned_nodes: frozenset[str] | None = None


def _slot(pod: Obj) -> tuple[str, str]:
    """The Job and completion index a pod fills (its name when it has no index)."""
    labels = pod["metadata"].get("labels") or {}
    if JOB_INDEX in labels:
        return labels.get(JOB_NAME, ""), labels[JOB_INDEX]
    return "", _name(pod)


def _node_of(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("nodeName") or (spec.get("nodeSelector") or {}).get(HOSTNAME, ""))


def failed_by_node_controller(
    listed: Sequence[Obj],
    unhealthy: frozenset[str],
    barred: Callable[[Obj, str], bool] = lambda pod, node: False,
    assigned_nodes: frozenset[str] | None = None,
) -> list[Obj]:
    """Per slot without a live pod, its latest pod when Kueue's node controller failed it on
    a node that still bars it (see the module). A barring node Kueue's second pass took out
    of the assignment bars nothing: the Job's next pod goes to the new domain."""
    latest: dict[tuple[str, str], Obj] = {}
    filled = {_slot(p) for p in listed if live(p)}
    for pod in listed:
        slot = _slot(pod)
        if slot in filled:
            continue
        seen = latest.get(slot)
        stamp = pod["metadata"].get("creationTimestamp") or ""
        if seen is None or stamp >= (seen["metadata"].get("creationTimestamp") or ""):
            latest[slot] = pod
    return [
        p
        for p in latest.values()
        if (condition(p, TERMINATED_BY_KUEUE) or {}).get("status") == "True"
        and (
            _node_of(p) in unhealthy
            or (
                barred(p, _node_of(p)) and (assigned_nodes is None or _node_of(p) in assigned_nodes)
            )
        )
    ]


def watch(
    w: Watch, *, deadline: float, interval: float, quiet: float, unreleased: float
) -> PodSetPods:
    """Poll until every pod is bound, unschedulable or known to stay gated (see the module)."""
    last: tuple[tuple[str, str], ...] | None = None
    since = time.monotonic()
    counts, found, failed = "", 0, 0

    def bound_or_known() -> PodSetPods | None:
        nonlocal last, since, counts, found, failed
        # Terminating and terminated pods (a fault step's) are the Job's past, not its pods.
        listed = w.list_pods()
        pods = [p for p in listed if live(p)]
        lost = failed_by_node_controller(listed, w.unhealthy, w.barred, w.assigned_nodes)
        holding = _holding(listed)
        states = {_name(p): state_of(p) for p in pods}
        now = time.monotonic()
        snapshot = tuple(sorted(states.items()))
        if snapshot != last:
            last, since = snapshot, now
        by_state: dict[str, list[Obj]] = {}
        for pod in pods:
            by_state.setdefault(states[_name(pod)], []).append(pod)
        gated = by_state.get("gated", [])
        logged = w.ungate_errors([_name(p) for p in gated]) if gated else {}
        released = len(pods) > len(gated)
        window = quiet if released else unreleased
        # A logged refusal settles only the pods it names: a sibling released in the same
        # batch may still be on its way out of the gate.
        confirmed = all(_name(p) in logged for p in gated)
        gate_settled = not gated or (
            _explained(gated, w.assigned, w.count, holding) and (confirmed or now - since >= window)
        )
        if len(pods) + len(lost) >= w.count and "released" not in by_state and gate_settled:
            return _settled(by_state, w, logged, holding, lost)
        counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_state.items()))
        found, failed = len(pods), len(lost)
        return None

    def gave_up(waited: float) -> str:
        return (
            f"waited {waited:.0f}s for the {w.count} pods of {w.what} to be bound "
            f"by kube-scheduler, found unschedulable, or known to stay gated; last seen: "
            f"{found} pods ({counts or 'none'}), {failed} failed by Kueue's node controller"
        )

    timeout = max(0.0, deadline - time.monotonic())
    return poll_for(bound_or_known, timeout=timeout, interval=interval, gave_up=gave_up)


def _settled(
    by_state: Mapping[str, list[Obj]],
    w: Watch,
    logged: Mapping[str, str],
    holding: int,
    lost: Sequence[Obj],
) -> PodSetPods:
    unschedulable = by_state.get("unschedulable", [])
    gated = by_state.get("gated", [])
    reasons = []
    if unschedulable:
        messages = [
            str((condition(p, "PodScheduled") or {}).get("message", "")) for p in unschedulable
        ]
        common = max(set(messages), key=messages.count)
        reasons.append(f"{len(unschedulable)} pod(s): kube-scheduler: {common}")
    if gated:
        why = next((conflict(p, w.assigned) for p in gated if conflict(p, w.assigned)), "")
        spare = w.count - sum(n for _, n in w.assigned)
        if not why and spare > 0:
            why = f"Kueue's topology assignment holds {w.count - spare} of {w.count} pods"
        if not why and holding:
            why = f"{holding} Terminating pod(s) still hold their domains for Kueue's ungater"
        text = f"{len(gated)} pod(s) stay scheduling-gated ({why})"
        if logged:
            text += f"; Kueue's ungater: {next(iter(logged.values()))}"
        reasons.append(text)
    if lost:
        nodes = ", ".join(sorted({_node_of(p) for p in lost}))
        message = str((condition(lost[0], TERMINATED_BY_KUEUE) or {}).get("message", ""))
        reasons.append(
            f"{len(lost)} pod(s) failed by Kueue's node controller on {nodes}, which still "
            f"bars them: {message}"
        )
    return PodSetPods(
        bound=by_state.get("bound", []),
        unschedulable=len(unschedulable) + len(gated) + len(lost),
        reason="; ".join(reasons),
    )
