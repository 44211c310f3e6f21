"""A scenario workload that is a LeaderWorkerSet: `leaderWorkerSet: {replicas: N}` beside its
`podSets`, read as the N Workloads Kueue makes of it.

Kueue v0.19.2 (pkg/controller/jobs/leaderworkerset, podSets() and filterWorkloads()) makes one
Workload per group, each with the pod sets "leader" (1 pod, the leader template) and "worker"
(size - 1 pods), or one pod set "main" (size pods) without a leader template. So the pod sets
are named as Kueue names them, and the groups become workloads `NAME-0` ... `NAME-(N-1)` in
index order: every engine decides them one after another as separate submissions, and
`expect` names each group.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

from harness.scenario.keypath import KeyPath, yaml_text
from harness.scenario.model import LeaderWorkerSetGroup, Workload

KEY = "leaderWorkerSet"
LEADER, WORKER, MAIN = "leader", "worker", "main"
MAX_REPLICAS = 1000
"""A bound on the workloads one entry expands to (Kueue's own is 1,000,000)."""


def is_lws(at: KeyPath) -> bool:
    return isinstance(at.value, dict) and KEY in at.value


def groups(at: KeyPath, read_workload: Callable[[KeyPath], Workload]) -> list[Workload]:
    """The entry's workloads: itself, or one per group when it carries `leaderWorkerSet`."""
    if not is_lws(at):
        return [read_workload(at)]
    if "podsReady" in at.value:  # the runner makes no not-ready LeaderWorkerSet pods
        at.child("podsReady", at.value["podsReady"]).fail(
            "not supported in LeaderWorkerSets (only in workloads entries and submit steps)"
        )
    spec = at.child(KEY, at.value[KEY])
    fields = spec.mapping(("replicas",))
    # 0 is valid (Kueue makes no Workload, MAX: its bound); the CRD defaults it to 1.
    replicas = fields["replicas"].integer(0) if "replicas" in fields else 1
    if replicas > MAX_REPLICAS:
        fields["replicas"].fail(f"at most {MAX_REPLICAS} groups in a scenario")
    rest = copy.copy(at)
    rest.value = {k: v for k, v in at.value.items() if k != KEY}
    base = read_workload(rest)
    _check_pod_sets(at, base)
    name_room = 63 - len(str(replicas - 1)) - 1
    if len(base.name) > name_room:
        at.child("name", base.name).fail(
            f"at most {name_room} characters: its groups are named {base.name}-0 ... "
            f"{base.name}-{replicas - 1}"
        )
    return [
        dataclasses.replace(
            base, name=f"{base.name}-{i}", lws=LeaderWorkerSetGroup(base.name, i, replicas)
        )
        for i in range(replicas)
    ]


def _check_pod_sets(at: KeyPath, w: Workload) -> None:
    """Kueue names a group's pod sets; a leader is one pod (its template is one pod)."""
    names = [ps.name for ps in w.pod_sets]
    where = at.child("podSets", at.value.get("podSets"))
    if names == [MAIN]:
        return
    if names != [LEADER, WORKER]:
        where.fail(
            f"a LeaderWorkerSet's pod sets are [leader, worker] (a leader template) or [main] "
            f"(workers only), as Kueue names them; got [{', '.join(map(yaml_text, names))}]"
        )
    if w.pod_sets[0].count != 1:
        where.child(0, None).child("count", w.pod_sets[0].count).fail(
            "a LeaderWorkerSet group has exactly one leader"
        )
