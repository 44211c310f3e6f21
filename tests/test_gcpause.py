"""Parse, load and fit run without cyclic GC pauses (harness/gcpause.py): at 20,000 nodes
those pauses were 45% of a snapshot's parse + load + fit, and grew faster than the nodes."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from harness.fit import fit
from harness.gcpause import without_gc_pauses
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

LEVELS = ("example.com/block", "example.com/rack", "kubernetes.io/hostname")


def collections_during(step: Callable[[], object]) -> list[int]:
    """How many collections of each generation started while `step()` ran."""
    counts = [0, 0, 0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            counts[info["generation"]] += 1

    gc.callbacks.append(count)
    try:
        step()
    finally:
        gc.callbacks.remove(count)
    return counts


def scenario_text(nodes: int) -> str:
    """A scenario of `nodes` 8-GPU nodes (one JSON line each, as snapshot writes them) and
    a 256-pod workload."""
    lines = "".join(
        f'- {{"name": "n{i}", "labels": {{"{LEVELS[0]}": "b{i // 100}", "{LEVELS[1]}": '
        f'"r{i // 10}"}}, "allocatable": {{"nvidia.com/gpu": "8"}}}}\n'
        for i in range(nodes)
    )
    workload = "{name: w, podSets: [{name: main, count: 256, requests: {nvidia.com/gpu: 1}}]}"
    return (
        f"name: x\ntopology: {{name: t, levels: {list(LEVELS)}}}\n"
        f"nodes:\n{lines}workloads: [{workload}]\n"
    )


def test_parse_load_and_fit_of_a_large_scenario_run_without_a_collection() -> None:
    text = scenario_text(3_000)
    done: list[object] = []
    assert collections_during(lambda: done.append(parse_yaml(text, "x.yaml"))) == [0, 0, 0]
    assert collections_during(lambda: done.append(scenario_from_data(done[0]))) == [0, 0, 0]
    assert collections_during(lambda: done.append(fit(done[1]))) == [0, 0, 0]  # type: ignore[arg-type]
    assert gc.isenabled()
    assert "w" in done[2].outcomes  # type: ignore[attr-defined]


def test_a_caller_that_turned_gc_off_finds_it_off_and_errors_turn_it_back_on() -> None:
    @without_gc_pauses
    def fails() -> None:
        assert not gc.isenabled()
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        fails()
    assert gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(ValueError):
            fails()
        assert not gc.isenabled()
    finally:
        gc.enable()
