"""A deterministic split of a selection into N shards (`--shard I/N`), for CI runners that
each run a part of the suite on their own cluster.

Items are packed in units that must not be split: every scenario needing one non-default set
of Kueue feature gates is one unit (splitting it would restart Kueue on each shard), each
other scenario is a unit of its own, and a Python test module is one unit (its module-scoped
cluster fixtures would otherwise start once per shard). Units go, heaviest first, into the
least-loaded shard; weights are recorded durations when a file of them is given, else 1 per
item. Ties break on the unit's name, so a given selection and durations file always give the
same shards, and the shards partition the selection (disjoint, complete).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError


class ShardError(HarnessError):
    """A `--shard` value or durations file that cannot be used."""


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based, as CI matrices count) of `total`."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def parse_shard(text: str) -> Shard:
    """'I/N' with 1 <= I <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ShardError(f"--shard {text!r}: expected I/N, e.g. 2/4")
    index, total = int(match[1]), int(match[2])
    if total < 1 or not 1 <= index <= total:
        raise ShardError(f"--shard {text}: I must be between 1 and N (N at least 1)")
    return Shard(index, total)


def seed_range(start: int, cases: int, shard: Shard) -> tuple[int, int]:
    """The (first index, count) of shard's part of cases [start, start + cases): contiguous
    ranges whose sizes differ by at most one, together covering the whole."""
    lo = start + (shard.index - 1) * cases // shard.total
    hi = start + shard.index * cases // shard.total
    return lo, hi - lo


def load_durations(path: Path) -> dict[str, float]:
    """A JSON object of item id -> seconds, as `--store-durations` writes it."""
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise ShardError(f"{path}: cannot read the durations file: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ShardError(f"{path}: not JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(data, dict):
        raise ShardError(f"{path}: expected an object of test id -> seconds")
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ShardError(f"{path}: {key}: expected seconds (a number >= 0), got {value!r}")
    return {str(k): float(v) for k, v in data.items()}


def cpu_record_path(durations: Path) -> Path:
    """Where the CPU seconds of the items of a durations record are kept
    (run/durations-e2e.json -> run/durations-e2e-cpu.json)."""
    return durations.with_name(f"{durations.stem}-cpu{durations.suffix}")


def assign(
    units: Mapping[str, Sequence[str]], durations: Mapping[str, float], total: int
) -> list[list[str]]:
    """Item ids per shard (0-based list). `units` maps a unit's name to its item ids."""
    known = [durations[i] for ids in units.values() for i in ids if i in durations]
    default = statistics.median(known) if known else 1.0
    weights = {name: sum(durations.get(i, default) for i in ids) for name, ids in units.items()}
    loads = [0.0] * total
    shards: list[list[str]] = [[] for _ in range(total)]
    for name in sorted(units, key=lambda n: (-weights[n], n)):
        lightest = min(range(total), key=lambda s: (loads[s], s))
        loads[lightest] += weights[name]
        shards[lightest].extend(units[name])
    return shards
