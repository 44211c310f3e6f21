"""pytest side of `--shard I/N` (harness/plugin/sharding.py): keep this shard's items, deselect the
rest after every other selection (`-k`, `-m`), and record durations for the next split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.plugin.collect import CPU_PROPERTY, ScenarioItem
from harness.plugin.sharding import (
    ShardError,
    assign,
    cpu_record_path,
    load_durations,
    parse_shard,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kueue-tas-harness")
    group.addoption(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (1-based): a deterministic split of the selection, each "
        "set of Kueue feature gates and each Python test module kept in one shard "
        "(default: all of it)",
    )
    group.addoption(
        "--shard-durations",
        default=None,
        metavar="FILE",
        help="balance --shard by these recorded durations (JSON: test id -> seconds, as "
        "--store-durations writes it) (default: every item weighs the same)",
    )
    group.addoption(
        "--store-durations",
        default=None,
        metavar="FILE",
        help="write each test's duration (setup + call + teardown, seconds) to FILE as JSON, "
        "and each scenario's CPU seconds on a cluster to FILE-cpu.json (default: none written)",
    )


def pytest_configure(config: pytest.Config) -> None:
    shard = config.getoption("shard")
    durations = config.getoption("shard_durations")
    try:
        if shard is not None:
            parse_shard(shard)
        if durations is not None:
            load_durations(Path(durations))
    except ShardError as err:
        raise pytest.UsageError(str(err)) from None
    if durations is not None and shard is None:
        raise pytest.UsageError("--shard-durations needs --shard I/N")
    store = config.getoption("store_durations")
    if store:
        config.pluginmanager.register(DurationRecorder(Path(store)), "kth-durations")


def unit_of(item: pytest.Item) -> str:
    """The unit an item travels with (see harness/plugin/sharding.py)."""
    if isinstance(item, ScenarioItem):
        scenario = item.scenario
        if scenario is not None and scenario.feature_gates:
            gates = sorted(scenario.feature_gates.items())
            return "gates:" + ",".join(f"{k}={v}" for k, v in gates)
        if scenario is not None and scenario.kueue_config.document:
            return "kueueConfig:" + json.dumps(scenario.kueue_config.document, sort_keys=True)
        return item.nodeid
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    text = config.getoption("shard")
    if text is None:
        return
    shard = parse_shard(text)
    path = config.getoption("shard_durations")
    durations = load_durations(Path(path)) if path else {}
    units: dict[str, list[str]] = {}
    for item in items:
        units.setdefault(unit_of(item), []).append(item.nodeid)
    mine = set(assign(units, durations, shard.total)[shard.index - 1])
    kept = [item for item in items if item.nodeid in mine]
    dropped = [item for item in items if item.nodeid not in mine]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


class DurationRecorder:
    """Sums each test's phase durations and writes them at the end of the session; the CPU
    seconds of each scenario run on a cluster go beside them (cpu_record_path)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        for key, text in report.user_properties:
            if key == CPU_PROPERTY:
                self.cpu[report.nodeid] = sum(json.loads(str(text)).values())

    def pytest_sessionfinish(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_record(self.path, self.seconds)
        if self.cpu:
            write_record(cpu_record_path(self.path), self.cpu)


def write_record(path: Path, seconds: dict[str, float]) -> None:
    rounded = {k: round(v, 3) for k, v in sorted(seconds.items())}
    path.write_text(json.dumps(rounded, indent=1) + "\n")
