"""Fill in a scenario file's missing expectations from the fit model, leaving the rest as it is.

What is filled: the top-level `expect` and each step's `expect` when absent or empty, and
inside an existing one the workloads it does not mention. What is written is already there
is never changed: to have the fit model restate an expectation, delete it first.

PyYAML cannot write a file back with its comments, anchors and layout, so the file is edited
as text: the composed YAML tree gives the position of each mapping, and only the new lines
are inserted (or an empty `expect:` replaced), in the file's own style: block style below a
block mapping, flow style inside a flow mapping. The result is loaded again before it is
written; an edit that would change anything but the expectations is refused.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError, ScenarioError
from harness.fit import FitResult
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario
from harness.scenario.model import Expectation, Scenario

_WIDE = 1 << 16  # never fold a long message over several lines
Entries = dict[str, dict[str, Any]]


def expectation_data(outcomes: Mapping[str, Outcome], flavors: bool = True) -> Entries:
    """The `expect` mapping that states exactly these outcomes; `flavors` False leaves out
    the flavor each pod set was admitted on (a world with one flavor implies it)."""
    expect = {}
    for name, outcome in outcomes.items():
        as_json = outcome.to_json()
        entry: dict[str, Any] = {"admitted": outcome.admitted}
        if outcome.quota_reserved:  # waiting for admission checks: it holds its placement
            entry["quotaReserved"] = True
        if outcome.admitted or outcome.quota_reserved:
            # A pod set admitted on no flavor (it requests nothing) has none to state.
            named = {ps: f for ps, f in (as_json.get("flavors") or {}).items() if f}
            if flavors and named:
                entry["flavors"] = named
            if as_json.get("placement"):
                entry["placement"] = as_json["placement"]
            if as_json.get("unschedulable"):
                entry["unschedulable"] = as_json["unschedulable"]
        else:
            if outcome.rejected:
                entry["rejected"] = True
            if outcome.message:
                entry["message"] = outcome.message
        if outcome.preempted:
            entry["preempted"] = True
        expect[name] = entry
    return expect


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def fill_expect(text: str, scenario: Scenario, predicted: FitResult) -> tuple[str, list[str]]:
    """The file's text with the missing expectations filled in, and what was filled
    (`expect`, `expect.NAME`, `steps[0].expect`, ...); unchanged when nothing is missing."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise ScenarioError(scenario.path, "", "the top level must be a mapping")
    edits: list[_Edit] = []
    filled: list[str] = []
    flavors = len(scenario.resource_flavors) > 1  # with one there is nothing to say
    _fill(text, root, "expect", scenario.expect, predicted.outcomes, edits, filled, flavors)
    steps = _value(root, "steps")
    for index, step in enumerate(scenario.steps):
        if steps is None or index >= len(predicted.steps):
            break
        where = f"steps[{index}].expect"
        owner, outcomes = steps.value[index], predicted.steps[index]
        _fill(text, owner, where, step.expect, outcomes, edits, filled, flavors)
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    if filled:
        _refuse_collateral_change(text, scenario)
    return text, filled


def _fill(
    text: str,
    owner: yaml.Node,
    where: str,
    written: Mapping[str, Expectation] | None,
    outcomes: Mapping[str, Outcome],
    edits: list[_Edit],
    filled: list[str],
    flavors: bool = True,
) -> None:
    """Add the entries of `owner`'s `expect` that `written` lacks (all of it when empty)."""
    wanted = {n: o for n, o in outcomes.items() if n not in (written or {})}
    missing = expectation_data(wanted, flavors)
    if not missing:
        return
    if not isinstance(owner, yaml.MappingNode):
        raise ScenarioError("", where, "must be in a mapping")
    node = _value(owner, "expect")
    if written:
        edits.append(_add_entries(text, node, missing))
        filled += [f"{where}.{name}" for name in missing]
        return
    after = "workloads" if where == "expect" else ""
    edits.append(_set_expect(text, owner, missing, after))
    filled.append(where)


def _refuse_collateral_change(new_text: str, scenario: Scenario) -> None:
    """The edited file must load, differ from the original only in its expectations, and
    keep every expectation it had."""
    with tempfile.TemporaryDirectory(prefix="kth-expect-") as folder:
        edited = Path(folder) / Path(scenario.path).name
        edited.write_text(new_text, encoding="utf-8")
        try:
            same = _kept(scenario) == _kept(load_scenario(edited), scenario)
        except HarnessError:
            same = False
    if not same:
        raise ScenarioError(
            scenario.path, "expect", "cannot be filled in without changing the rest: write it"
        )


def _kept(scenario: Scenario, like: Scenario | None = None) -> tuple[object, ...]:
    """The scenario without path, and with only the expectations `like` has."""
    like = like or scenario
    steps = tuple(
        (s.action, s.target, _only(s.expect, w.expect))
        for s, w in zip(scenario.steps, like.steps, strict=False)
    )
    return (
        scenario.name,
        scenario.feature_gates,
        scenario.topologies,
        scenario.resource_flavors,
        scenario.cluster_queues,
        scenario.priority_classes,
        scenario.admitted,
        scenario.nodes,
        scenario.usage,
        scenario.workloads,
        _only(scenario.expect, like.expect),
        steps,
    )


def _only(
    expect: Mapping[str, Expectation] | None, like: Mapping[str, Expectation] | None
) -> dict[str, Expectation]:
    return {name: e for name, e in (expect or {}).items() if name in (like or {})}


def _value(mapping: yaml.MappingNode, key: str) -> Any:
    for key_node, value in mapping.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value
    return None


def _set_expect(text: str, owner: yaml.MappingNode, entries: Entries, after: str) -> _Edit:
    """Give `owner` an `expect` holding `entries`: added, or replacing an empty one."""
    existing = next(
        ((k, v) for k, v in owner.value if isinstance(k, yaml.ScalarNode) and k.value == "expect"),
        None,
    )
    if owner.flow_style:
        flow = f"expect: {_flow(entries)}"
        if existing is not None:
            return _Edit(existing[0].start_mark.index, existing[1].end_mark.index, flow)
        return _before_brace(owner, flow)
    block = "expect:\n" + _indent(_block(entries), 2)
    if existing is not None:
        key_node, value = existing
        last = _last_line(value) if _has_text(value) else key_node.start_mark.line
        end = _line_end(text, last)
        indented = _indent(block, key_node.start_mark.column)
        return _Edit(key_node.start_mark.index, end, indented.lstrip(" ").rstrip("\n"))
    after_node = _value(owner, after) if after else None
    return _after_line(
        text, _last_line(after_node if after_node is not None else owner), owner, block
    )


def _add_entries(text: str, expect: yaml.Node, entries: Entries) -> _Edit:
    """Add workload entries to a non-empty `expect` mapping."""
    if not isinstance(expect, yaml.MappingNode):
        raise ScenarioError("", "expect", "must be a mapping")
    if expect.flow_style:
        return _before_brace(expect, _flow(entries)[1:-1])
    return _after_line(text, _last_line(expect), expect, _block(entries))


def _before_brace(mapping: yaml.MappingNode, items: str) -> _Edit:
    close = mapping.end_mark.index - 1  # the mapping's closing brace
    return _Edit(close, close, (", " if mapping.value else "") + items)


def _after_line(text: str, line: int, mapping: yaml.MappingNode, block: str) -> _Edit:
    """Lines after `line`, indented like the keys of the block mapping."""
    indented = _indent(block, mapping.start_mark.column)
    at = _line_end(text, line)
    if at == len(text):
        return _Edit(at, at, "\n" + indented.rstrip("\n"))
    return _Edit(at + 1, at + 1, indented)


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


def _block(expect: Entries) -> str:
    """Expect entries in the suites' layout: one key a line, each pod set's spread flow."""
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
