"""Node events in a stream: a stream scenario's `steps`, each with an `at:` second.

    steps:
      - delete-node: b1-r1-n1     # any node event of the steps vocabulary
        at: 1800                  # seconds on the stream's clock
      - add-node: {name: b1-r1-n1, labels: {...}, allocatable: {...}}
        at: 5400

The loader validates the steps as it validates a one-moment scenario's (the node exists at
that step, is Ready before `node-not-ready`, ...), in file order, so they must be listed in
time order. Only node events are taken: the stream's workloads are its submissions and
finishes, and a step naming one (`terminate-pods`, `delete-workload`) would depend on where
the replay put it at that moment.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.scenario.keypath import KeyPath
from harness.scenario.model import Scenario

AT_KEY = "at"
NODE_EVENTS = (
    "delete-node",
    "add-node",
    "cordon",
    "uncordon",
    "node-not-ready",
    "node-ready",
    "taint-node",
    "untaint-node",
)
"""The steps a stream may carry: what happens to nodes (docs/scenario-extensions.md, "Faults
under running workloads"; docs/scenario-format.md's steps)."""


def split_times(data: dict[str, Any], file: str) -> tuple[dict[str, Any], list[float]]:
    """The scenario's data with each step's `at` taken out (for the loader, which knows no
    `at`), and the times in step order; one-line errors for what a stream cannot take."""
    if "steps" not in data:
        return data, []
    steps_at = KeyPath(file, "steps", data["steps"])
    plain: list[dict[str, Any]] = []
    times: list[float] = []
    for item in steps_at.items():
        if not isinstance(item.value, dict):
            item.fail(f"must be a mapping with one node event and '{AT_KEY}'")
        step = dict(item.value)
        if AT_KEY not in step:
            item.fail(f"a stream's step needs '{AT_KEY}': the second it happens at")
        at = item.child(AT_KEY, step.pop(AT_KEY)).seconds(above_zero=False)
        for key in ("expect", "expectByVersion"):
            if key in step:
                item.child(key, step[key]).fail(
                    "a stream's expectations are replay.expect's figures (docs/replay.md)"
                )
        for key in step:
            if key not in NODE_EVENTS:
                item.child(str(key), step[key]).fail(
                    f"not a node event a stream can carry (allowed: {', '.join(NODE_EVENTS)})"
                )
        if times and at < times[-1]:
            item.child(AT_KEY, at).fail(
                f"{at:g} is before the previous step's {times[-1]:g}: list steps in time order"
            )
        plain.append(step)
        times.append(at)
    return {**data, "steps": plain}, times


def with_times(scenario: Scenario, times: list[float]) -> Scenario:
    """The loaded steps, each with its second."""
    steps = tuple(
        dataclasses.replace(step, at=at) for step, at in zip(scenario.steps, times, strict=True)
    )
    return dataclasses.replace(scenario, steps=steps)
