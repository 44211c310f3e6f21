"""Admission fair sharing in the fit model: each LocalQueue's usage, as the queue order of
an admission-fair-sharing ClusterQueue reads it (harness/kueue/admission_fair_sharing.py).

The model keeps what a scenario determines: the entry penalties the scheduler charges when
it reserves quota. Real Kueue also folds admitted usage in over wall-clock time (sampled,
decaying), so the model's numbers are exact only where the order does not depend on them:
a LocalQueue that never had quota reserved (usage 0) against one that had (usage > 0), and
a LocalQueue of weight 0 (usage +Inf). Two candidates from different LocalQueues that both
consumed compare on that history: either may come first (a tie, harness.fit.ties).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from harness.fit.resource_transform import counted, pod_quota
from harness.kueue.admission_fair_sharing import USAGE_BASED, AfsConfig, afs_config, queue_usage
from harness.scenario.model import Scenario, Workload

_SCALE = 10**9
"""MulByFloat rounds each penalty down to 9 decimals (pkg/util/resource/resource.go)."""


class QueueUsage:
    """The entry penalties charged to each LocalQueue of the scenario."""

    def __init__(self, scenario: Scenario, gate_on: bool) -> None:
        self.scenario = scenario
        self.config: AfsConfig | None = (
            afs_config(scenario.kueue_config.document) if gate_on else None
        )
        self.charged: dict[tuple[str, str], float] = {}
        self.pick: Callable[[Sequence[Workload], str], Workload] = lambda options, _: options[0]
        """One of several equally possible heads (the model's TieBreak.pick)."""

    def applies(self, cq: str) -> bool:
        """ResourceWeights: the config is set and the ClusterQueue's scope asks for it."""
        return (
            self.config is not None
            and self.scenario.cluster_queue(cq).admission_mode == USAGE_BASED
        )

    def charge(self, w: Workload) -> None:
        """updateEntryPenalty(add), at the reservation of `w`."""
        if self.config is None or not self.applies(w.queue):
            return
        totals: dict[str, float] = {}
        cq = self.scenario.cluster_queue(w.queue)
        for ps in w.pod_sets:
            for r, q in pod_quota(self.scenario, ps).items():
                if counted(self.scenario, cq, r):  # updateEntryPenalty: filterByNames
                    totals[r] = totals.get(r, 0.0) + float(q) * ps.count
        alpha = self.config.alpha
        penalty = {r: math.floor(q * alpha * _SCALE) / _SCALE for r, q in totals.items()}
        key = (w.namespace, w.queue_name)
        self.charged[key] = self.charged.get(key, 0.0) + self.config.weighted(penalty)

    def usage(self, w: Workload) -> float:
        """Its LocalQueue's usage (0 where admission fair sharing does not apply)."""
        if not self.applies(w.queue):
            return 0.0
        lq = self.scenario.local_queue_of(w)
        return queue_usage(self.charged.get((w.namespace, w.queue_name), 0.0), lq.fair_weight)

    def contest(self, ordered: list[Workload]) -> Workload:
        """The head of a queue whose pending workloads are `ordered` by the model's key.
        Where the first won on a finite, positive usage over another LocalQueue's that also
        consumed, real Kueue compares their sampled, decaying history: each such LocalQueue's
        first workload could be the head, and `pick` chooses (harness.fit.ties replays the
        scenario the other way and raises Nondeterministic when the outcomes differ)."""
        head = ordered[0]
        if not 0 < self.usage(head) < math.inf:
            return head
        contenders = [head]
        seen = {(head.namespace, head.queue_name)}
        for w in ordered[1:]:
            key = (w.namespace, w.queue_name)
            if key not in seen and 0 < self.usage(w) < math.inf:
                seen.add(key)
                contenders.append(w)
        if len(contenders) == 1:
            return head
        queues = ", ".join(w.queue_name for w in contenders)
        return self.pick(
            contenders,
            f"admission fair sharing: LocalQueues {queues} of ClusterQueue {head.queue} both "
            "consumed; Kueue orders them by usage it samples and decays over wall-clock time",
        )
