"""How many embedded clusters `make e2e` runs, and which scenarios go to which: sized from the
record of each scenario's wall time and CPU seconds (bench/durations/e2e.json and
e2e-cpu.json), not from a constant.

A scenario that mostly waits (a fault's 30 s second-pass backoff in Kueue, the Job
controller's 10 s pod backoff, Kueue's batch periods) leaves the CPU idle; one that mostly
shapes and reads keeps a core busy. So the scenarios fall in two classes by their CPU share
(CPU seconds / wall seconds): "busy" ones run on as many clusters as the cores can feed,
"waiting" ones on as many more as the CPU they leave over can carry, and never more than
it takes for both classes to end together. A worker prefers its own class and takes the
other's units when its own run out, so no cluster idles at the end.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WAITING_SHARE = 0.35
"""A scenario below this CPU share (cores busy on average while it runs) mostly waits."""
CPU_TARGET = 0.9
"""The share of the machine's cores the scenarios' recorded CPU shares may add up to: above
it, Kueue's own timers stretch (its 1 s batch periods run late) and scenarios slow each
other. The sum overstates the load: the gate of 2026-12-07 ran 6 clusters (2 busy, 4
waiting; these shares add up to 1.68 cores) and kept 1.42 cores busy on average (959 CPU-s
of scenarios in 675 s), so 0.9 gives the same 6 clusters from that record as 0.8 gave from
the one before it."""
GIB_PER_CLUSTER = 1.5
"""Peak memory of one embedded cluster (API server, etcd, Kueue, KWOK, controllers)."""
MAX_WORKERS = 8
BUSY_PER_CORE = 1
"""At most this many busy clusters per core: three CPU-bound clusters on 2 cores were no
faster than two (bench/cluster.py --workers 0,2,3, 27 scenarios: 126 / 107 / 111 s), the
contention the CPU seconds alone do not show."""
WORKERS_PER_CORE = 3
"""At most this many clusters per core in all: the runner's deadlines assume a cluster gets
its share of a core within a settle window. Seven clusters on 2 cores were no faster than
six (make e2e, 524 items, 2026-12-07: 733 s on 7, 693 s on 6): the CPU bounds the gate."""


@dataclass(frozen=True)
class Plan:
    """`busy` + `waiting` workers; the items of the waiting class; the figures behind it."""

    busy: int
    waiting: int
    waiting_items: frozenset[str]
    why: str

    @property
    def workers(self) -> int:
        return self.busy + self.waiting


def cpu_share(wall: float, cpu: float) -> float:
    return cpu / wall if wall > 0 else 1.0


def plan(
    items: Sequence[str],
    wall: Mapping[str, float],
    cpu: Mapping[str, float],
    *,
    cores: int | None = None,
    memory_gib: float | None = None,
) -> Plan:
    """The workers per class for `items`, from their recorded wall and CPU seconds. Items
    without both records count as busy (the cautious side) at the median busy wall time."""
    cores = cores or os.cpu_count() or 1
    memory_gib = memory_gib if memory_gib is not None else _memory_gib()
    cap = max(1, min(MAX_WORKERS, WORKERS_PER_CORE * cores, int(memory_gib // GIB_PER_CLUSTER)))
    known = [i for i in items if i in wall and i in cpu]
    waiting = frozenset(i for i in known if cpu_share(wall[i], cpu[i]) < WAITING_SHARE)
    busy_known = [i for i in known if i not in waiting]
    if not known:
        busy = min(cap, max(1, cores))
        return Plan(busy, 0, frozenset(), f"no CPU record: {busy} clusters")
    fill = _median([wall[i] for i in busy_known]) if busy_known else 1.0
    busy_wall = sum(wall[i] for i in busy_known) + fill * (len(items) - len(known))
    busy_cpu = sum(cpu[i] for i in busy_known)
    wait_wall = sum(wall[i] for i in waiting)
    wait_cpu = sum(cpu[i] for i in waiting)
    busy_rate = cpu_share(sum(wall[i] for i in busy_known), busy_cpu) if busy_known else 1.0
    wait_rate = cpu_share(wait_wall, wait_cpu) if waiting else 0.0
    budget = CPU_TARGET * cores
    most = min(cap, BUSY_PER_CORE * cores)
    n_busy = max(1, min(most, math.floor(budget / max(busy_rate, 0.1)))) if busy_wall else 0
    n_wait = 0
    if waiting:
        spare = max(0.0, budget - n_busy * busy_rate)
        by_cpu = math.floor(spare / max(wait_rate, 0.05))
        # More than this and the waiting class ends long before the busy one.
        by_balance = math.ceil(n_busy * wait_wall / busy_wall) if busy_wall else cap
        n_wait = max(1, min(cap - n_busy, by_cpu, by_balance)) if cap > n_busy else 0
    why = (
        f"{len(items) - len(waiting)} busy scenarios (CPU share {busy_rate:.2f}, "
        f"{busy_wall:.0f} s) on {n_busy}, {len(waiting)} waiting (share {wait_rate:.2f}, "
        f"{wait_wall:.0f} s) on {n_wait}; {cores} cores, at most {cap} clusters"
    )
    if n_wait == 0:
        return Plan(n_busy, 0, frozenset(), why)
    return Plan(n_busy, n_wait, waiting, why)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _memory_gib() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 4.0
