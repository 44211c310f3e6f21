"""Repairs Kueue starts only once a step's pods exist: the runner waits for them too.

A step that lets pods start (an admission check turning Ready admits a workload that had
reserved quota) may release a pod onto a node that bars it (an untolerated NoExecute taint:
a leader/worker group is placed under the workers' tolerations). kube-scheduler cannot bind
it, and that pending pod's event makes Kueue's node failure controller reconcile the node
(pkg/controller/tas/node_controller.go queueReconcileForPod, "potential stuck pending pods",
after its batch period): it may find the node failed for the workload, fail the pod and
start a second pass. The step's settle ran before the pods existed, so the runner settles
again for those nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from harness.runner import binding, repair
from harness.scenario.model import HOSTNAME

if TYPE_CHECKING:
    from harness.kube import Obj
    from harness.runner.kueuelog import KueueLog
    from harness.runner.session import Session


def stuck_pods(s: Session, is_tas: Callable[[Obj], bool]) -> dict[str, str]:
    """Each released TAS pod of the run that waits for its node (uid -> node): live,
    unbound, with the ungater's hostname nodeSelector and no scheduling gate left."""
    out: dict[str, str] = {}
    for ns in s.names.all_namespaces:
        for pod in s.kube.list("v1", "Pod", ns, s.names.run_selector):
            spec = pod.get("spec") or {}
            host = (spec.get("nodeSelector") or {}).get(HOSTNAME)
            waiting = binding.live(pod) and not spec.get("nodeName")
            if host and waiting and not spec.get("schedulingGates") and is_tas(pod):
                out[str(pod["metadata"]["uid"])] = str(host)
    return out


def new_stuck_nodes(
    s: Session, is_tas: Callable[[Obj], bool], before: Mapping[str, str]
) -> list[str]:
    """The nodes of pods stuck since the step (a pod stuck before it may see no event
    during it, so Kueue need not reconcile its node again)."""
    now = stuck_pods(s, is_tas)
    return sorted({node for uid, node in now.items() if uid not in before})


def needs_settling(stuck: list[str], watch: repair.Watch, log: KueueLog) -> bool:
    """Kueue's node controller has stuck pods to look at, or a workload is mid-repair."""
    seen = watch.read()
    return bool(stuck) or any(repair.problem(wl, n, watch, log) for n, wl in seen.items())


def settle(stuck: list[str], watch: repair.Watch, log: KueueLog, s: Session) -> None:
    """repair.settle over the stuck pods' nodes: each reconciled since the step, no workload
    mid-repair, nothing changing."""
    repair.settle(dataclasses.replace(watch, nodes=stuck), log, s.t)
