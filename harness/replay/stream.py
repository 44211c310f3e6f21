"""What `replay` reads: a scenario whose workloads carry submitAt/runFor, a JSONL or CSV
stream on a `--world` scenario, or Kueue's scheduler-performance generator.yaml; each
becomes one Scenario (the loader's model) and each workload's class for the figures."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.replay import kueueperf
from harness.replay.expect import Bound, bounds
from harness.replay.rows import read_rows
from harness.replay.timed_steps import split_times, with_times
from harness.scenario.keypath import KeyPath
from harness.scenario.loader import load_scenario, parse_yaml, scenario_from_data, with_stream
from harness.scenario.model import Scenario

ROW_FILES = (".jsonl", ".csv")
CLASS_KEY = "class"
"""A stream row's optional class (a JSONL key, a CSV column): what the figures group by;
without it a workload's class is its priorityClass, else `default`."""
NO_CLASS = "default"


@dataclass(frozen=True)
class Stream:
    scenario: Scenario
    classes: dict[str, str]
    """Workload -> its class (Kueue's perf test: the template's className)."""
    expect: list[Bound] = field(default_factory=list)
    """A stream scenario's `replay.expect` (harness.replay.expect)."""


REPLAY_KEY = "replay"
"""A stream scenario's top-level key: `stream` (a .jsonl, .csv or generator.yaml file beside
it, replayed on the scenario's world) and `expect` (figures the replay must give)."""


def is_stream_scenario(data: Any) -> bool:
    return isinstance(data, dict) and REPLAY_KEY in data


def load_stream(path: str | Path, world: str | Path | None = None) -> Stream:
    """Read STREAM (and `--world`), refusing in one line what does not fit together."""
    path = Path(path)
    if path.suffix in ROW_FILES:
        if world is None:
            raise InputError(str(path), "", "a JSONL or CSV stream needs --world SCENARIO")
        return _on_world(load_scenario(world), read_rows(path), str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(str(path), "", f"cannot read: {err}") from None
    data = parse_yaml(text, str(path))
    if kueueperf.is_generator_config(data):
        if world is not None:
            raise InputError(str(path), "", "a generator.yaml makes its own world: no --world")
        name = path.parent.name or path.stem
        scenario_data, classes = kueueperf.scenario_data(data, str(path), name)
        return Stream(scenario_from_data(scenario_data, str(path)), classes)
    if is_stream_scenario(data):
        if world is not None:
            raise InputError(str(path), "", "a stream scenario is its own world: no --world")
        return _stream_scenario(data, path)
    scenario = scenario_from_data(data, str(path))
    if world is None:
        return Stream(scenario, {w.name: w.priority_class or NO_CLASS for w in scenario.workloads})
    listed = data.get("workloads") if isinstance(data, dict) else None
    rows = [(f"workloads[{i}]", w) for i, w in enumerate(listed or [])]
    return _on_world(load_scenario(world), rows, str(path))


def _on_world(world: Scenario, rows: list[tuple[str, Any]], file: str) -> Stream:
    classes: dict[str, str] = {}
    plain = []
    for where, row in rows:
        named = None
        if isinstance(row, dict) and CLASS_KEY in row:
            row = dict(row)
            named = KeyPath(file, where, row).child(CLASS_KEY, row.pop(CLASS_KEY)).string()
        plain.append((where, row))
        if isinstance(row, dict) and isinstance(row.get("name"), str) and named:
            classes[row["name"]] = named
    scenario = with_stream(world, plain, file)
    for w in scenario.workloads:
        classes.setdefault(w.name, w.priority_class or NO_CLASS)
    return Stream(scenario, classes)


def _stream_scenario(data: dict[str, Any], path: Path) -> Stream:
    """A scenario with `replay:`: its world and workloads (or `replay.stream`'s) and the
    figures it expects."""
    at = KeyPath(str(path), REPLAY_KEY, data[REPLAY_KEY])
    fields = at.mapping(("stream", "expect"), ("expect",))
    expected = bounds(fields["expect"])
    plain, times = split_times({k: v for k, v in data.items() if k != REPLAY_KEY}, str(path))
    if "stream" not in fields:
        scenario = with_times(scenario_from_data(plain, str(path)), times)
        classes = {w.name: w.priority_class or NO_CLASS for w in scenario.workloads}
        return Stream(scenario, classes, expected)
    if plain.get("workloads"):
        fields["stream"].fail("the workloads come from the scenario or the stream file, not both")
    source = path.parent / fields["stream"].string()
    if source.suffix not in ROW_FILES:
        fields["stream"].fail("names a .jsonl or .csv stream beside the scenario")
    world = with_times(scenario_from_data(plain, str(path)), times)
    stream = _on_world(world, read_rows(source), str(source))
    return Stream(dataclasses.replace(stream.scenario, steps=world.steps), stream.classes, expected)
