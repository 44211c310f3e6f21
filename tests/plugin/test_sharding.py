"""`--shard I/N`: the shards partition the selection, keep gate sets and Python modules
whole, follow recorded durations, and the fuzzer's seed ranges cover the campaign once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.plugin.sharding import (
    Shard,
    ShardError,
    assign,
    load_durations,
    parse_shard,
    seed_range,
)

GUIDE = Path(__file__).resolve().parents[2] / "suites" / "guide"


def test_parse_shard_takes_one_based_i_of_n() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    for bad in ("0/4", "5/4", "1/0", "a/b", "2"):
        with pytest.raises(ShardError, match="--shard"):
            parse_shard(bad)


@pytest.mark.parametrize("total", [1, 2, 3, 7])
def test_seed_ranges_cover_the_campaign_once(total: int) -> None:
    seen: list[int] = []
    for index in range(1, total + 1):
        first, count = seed_range(10, 20, Shard(index, total))
        seen += range(first, first + count)
    assert seen == list(range(10, 30))


def test_assign_partitions_and_balances_by_duration() -> None:
    units = {f"u{i}": [f"t{i}a", f"t{i}b"] for i in range(6)}
    durations = {i: 1.0 for ids in units.values() for i in ids} | {"t0a": 50.0, "t1a": 40.0}
    shards = assign(units, durations, 3)
    flat = [i for s in shards for i in s]
    assert sorted(flat) == sorted(i for ids in units.values() for i in ids)
    assert len(flat) == len(set(flat))
    heavy = [next(n for n, s in enumerate(shards) if t in s) for t in ("t0a", "t1a")]
    assert heavy[0] != heavy[1]  # the two heaviest units go to different shards
    for ids in units.values():  # a unit is never split
        assert len({n for n, s in enumerate(shards) if ids[0] in s or ids[1] in s}) == 1
    assert assign(units, durations, 3) == shards


def test_durations_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "d.json"
    bad.write_text(json.dumps({"t": "slow"}))
    with pytest.raises(ShardError, match=r"d.json: t: expected seconds"):
        load_durations(bad)


def _scenarios(pytester: pytest.Pytester, count: int, gated: int) -> None:
    """`count` copies of a guide scenario under suites/, the first `gated` with one gate set."""
    data = yaml.safe_load((GUIDE / "guide-required-host.yaml").read_text())
    for i in range(count):
        copy = dict(data, name=f"s{i:02d}")
        if i < gated:
            copy["featureGates"] = {"TASBalancedPlacement": True}
        path = pytester.path / "suites" / f"s{i:02d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(copy, sort_keys=False))


def _passed(pytester: pytest.Pytester, *args: str) -> set[str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "-q", "-rA", *args)
    assert result.ret == 0, result.stdout.str()
    return {
        line.split()[1].split("::")[-1]
        for line in result.stdout.lines
        if line.startswith("PASSED ")
    }


def test_pytest_shards_partition_the_suite_and_keep_a_gate_set_together(
    pytester: pytest.Pytester,
) -> None:
    _scenarios(pytester, 9, gated=3)
    everything = _passed(pytester)
    assert len(everything) == 9
    parts = [_passed(pytester, "--shard", f"{i}/3") for i in (1, 2, 3)]
    assert set().union(*parts) == everything
    assert sum(len(p) for p in parts) == 9
    gated = {"s00", "s01", "s02"}
    assert sum(1 for p in parts if p & gated) == 1  # one Kueue restart, on one shard
    with_k = [_passed(pytester, "--shard", f"{i}/3", "-k", "s0") for i in (1, 2, 3)]
    assert set().union(*with_k) == {n for n in everything if n.startswith("s0")}


def test_stored_durations_feed_the_next_split(pytester: pytest.Pytester) -> None:
    _scenarios(pytester, 4, gated=0)
    store = pytester.path / "durations.json"
    _passed(pytester, "--store-durations", str(store))
    recorded = json.loads(store.read_text())
    assert len(recorded) == 4 and all(v >= 0 for v in recorded.values())
    heavy = {k: (1000.0 if k.endswith("s00") else 1.0) for k in recorded}
    store.write_text(json.dumps(heavy))
    alone = [
        _passed(pytester, "--shard", f"{i}/2", "--shard-durations", str(store)) for i in (1, 2)
    ]
    assert {"s00"} in alone  # the heavy one gets a shard to itself


def test_bad_shard_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--shard", "3/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--shard 3/2: I must be between 1 and N*"])


def test_fuzz_refuses_a_bad_shard_in_one_line() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "harness", "fuzz", "--shard", "5/2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr.strip().splitlines()[-1].endswith("I must be between 1 and N (N at least 1)")
    )
    assert "Traceback" not in result.stderr
