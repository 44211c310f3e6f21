"""Fill a scenario file's missing `expect` blocks from the fit model, leaving the rest as it is.

PyYAML cannot write a file back with its comments, anchors and layout, so the file is edited
as text: the composed YAML tree gives the position of each mapping, and only the new blocks
are inserted (or an empty `expect:` replaced), in the file's own style: block style below a
block mapping, flow style inside a flow mapping. The result is parsed again before it is
written; an edit that would change anything but the expectations is refused.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError, ScenarioError
from harness.fit import FitResult
from harness.loader import load_scenario
from harness.outcome import Outcome
from harness.scenario import Scenario

_WIDE = 1 << 16  # never fold a long message over several lines


def expectation_data(outcomes: dict[str, Outcome]) -> dict[str, dict[str, Any]]:
    """The `expect` mapping that states exactly these outcomes."""
    expect = {}
    for name, outcome in outcomes.items():
        as_json = outcome.to_json()
        entry: dict[str, Any] = {"admitted": outcome.admitted}
        if outcome.admitted:
            if as_json.get("placement"):
                entry["placement"] = as_json["placement"]
            if as_json.get("unschedulable"):
                entry["unschedulable"] = as_json["unschedulable"]
        else:
            if outcome.rejected:
                entry["rejected"] = True
            if outcome.message:
                entry["message"] = outcome.message
        expect[name] = entry
    return expect


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def fill_expect(text: str, scenario: Scenario, predicted: FitResult) -> tuple[str, list[str]]:
    """The file's text with every missing or empty `expect` filled (top level and each step),
    and the key paths filled; the text is unchanged when nothing is missing."""
    file = scenario.path
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise ScenarioError(file, "", "the top level must be a mapping")
    edits, filled = [], []
    if not scenario.expect and predicted.outcomes:
        data = expectation_data(predicted.outcomes)
        edits.append(_set_key(text, root, "expect", data, after="workloads"))
        filled.append("expect")
    steps = _value(root, "steps")
    for index, step in enumerate(scenario.steps):
        if step.expect or steps is None or index >= len(predicted.steps):
            continue
        if not predicted.steps[index]:
            continue  # no workload yet: nothing to state
        item = steps.value[index]
        edits.append(_set_key(text, item, "expect", expectation_data(predicted.steps[index])))
        filled.append(f"steps[{index}].expect")
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    if filled:
        _refuse_collateral_change(file, text, scenario)
    return text, filled


def _refuse_collateral_change(file: str, new_text: str, scenario: Scenario) -> None:
    """The edited file must load, and differ from the original only in its expectations."""
    with tempfile.TemporaryDirectory(prefix="kth-expect-") as folder:
        edited = Path(folder) / Path(file).name
        edited.write_text(new_text, encoding="utf-8")
        try:
            same = _without_expect(load_scenario(edited)) == _without_expect(scenario)
        except HarnessError:
            same = False
    if not same:
        raise ScenarioError(
            file, "expect", "cannot be inserted without changing the rest: add it by hand"
        )


def _without_expect(scenario: Scenario) -> tuple[object, ...]:
    steps = tuple((s.action, s.target) for s in scenario.steps)
    return (
        scenario.name,
        scenario.feature_gates,
        scenario.topology,
        scenario.flavor,
        scenario.queue,
        scenario.nodes,
        scenario.usage,
        scenario.workloads,
        steps,
    )


def _value(mapping: yaml.MappingNode, key: str) -> Any:
    for key_node, value in mapping.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value
    return None


def _set_key(
    text: str, mapping: yaml.Node, key: str, data: dict[str, dict[str, Any]], after: str = ""
) -> _Edit:
    """Add `key: data` to a mapping that lacks it, or replace its empty value."""
    if not isinstance(mapping, yaml.MappingNode):
        raise ScenarioError("", key, "the step is not a mapping")
    flow = _flow(data)
    existing = next(
        ((k, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and k.value == key),
        None,
    )
    if mapping.flow_style:
        if existing is not None:
            return _Edit(existing[0].start_mark.index, existing[1].end_mark.index, f"{key}: {flow}")
        close = mapping.end_mark.index - 1  # the mapping's closing brace
        return _Edit(close, close, f", {key}: {flow}")
    column = mapping.start_mark.column
    block = _indent(f"{key}:\n" + _indent(_block(data), 2), column)
    if existing is not None:
        key_node, value = existing
        start = key_node.start_mark.index
        end = _line_end(text, _last_line(value) if _has_text(value) else key_node.start_mark.line)
        return _Edit(start, end, block[column:].rstrip("\n"))
    after_node = _value(mapping, after) if after else None
    last = _last_line(after_node) if after_node is not None else _last_line(mapping)
    at = _line_end(text, last)
    if at == len(text):
        return _Edit(at, at, "\n" + block.rstrip("\n"))
    return _Edit(at + 1, at + 1, block)


def _has_text(node: yaml.Node) -> bool:
    """False for the empty value of `key:` (whose position already lies past the line)."""
    return not (isinstance(node, yaml.ScalarNode) and node.value == "" and node.style is None)


def _last_line(node: yaml.Node) -> int:
    """The last line (0-based) a block node's text occupies."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        key, value = node.value[-1]
        key_line: int = key.end_mark.line
        return max(key_line, _last_line(value))
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        start_line: int = node.start_mark.line
        return max(start_line, _last_line(node.value[-1]))
    end = node.end_mark
    line: int = end.line
    if end.column == 0 and line > node.start_mark.line:
        return line - 1  # a block scalar ends at the start of the next line
    return line


def _line_end(text: str, line: int) -> int:
    """Index of the newline ending `line` (or the end of the text)."""
    at = 0
    for _ in range(line):
        at = text.index("\n", at) + 1
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _block(expect: dict[str, dict[str, Any]]) -> str:
    """An expect mapping in the suites' layout: one key a line, each pod set's spread flow."""
    lines = []
    for name, entry in expect.items():
        lines.append(f"{_flow(name)}:")
        for key, value in entry.items():
            if key == "placement":
                lines.append("  placement:")
                lines += [f"    {_flow(ps)}: {_flow(spread)}" for ps, spread in value.items()]
            else:
                lines.append(f"  {key}: {_flow(value)}")
    return "\n".join(lines)


def _flow(value: Any) -> str:
    """One value in YAML flow style, quoted where YAML needs it."""
    text = yaml.safe_dump(value, sort_keys=False, default_flow_style=True, width=_WIDE)
    return text.removesuffix("...\n").strip()


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(f"{pad}{line}\n" for line in text.splitlines())
