"""One-line JSON list items are read with `json` (harness/scenario/json_items.py) only where that gives
exactly what the strict YAML reader gives: same values, same one-line errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ScenarioError
from harness.scenario import json_items
from harness.scenario.strict_yaml import parse_yaml

MANY = json_items.MIN_LINES + 6


@contextlib.contextmanager
def yaml_only() -> Iterator[None]:
    """The reference: every line read by the YAML reader."""
    saved = json_items.MIN_LINES
    json_items.MIN_LINES = 10**9
    try:
        yield
    finally:
        json_items.MIN_LINES = saved


def both(text: str) -> tuple[Any, Any]:
    """(what parse_yaml gives, what YAML alone gives): a value, or the error's text."""
    out = []
    for context in (contextlib.nullcontext(), yaml_only()):
        with context:
            try:
                out.append(("value", parse_yaml(text, "f.yaml")))
            except ScenarioError as err:
                out.append(("error", str(err)))
    return out[0], out[1]


def lines(items: list[Any], indent: int = 0, **dumps: Any) -> str:
    return "".join(f"{' ' * indent}- {json.dumps(item, **dumps)}\n" for item in items)


def test_a_long_list_is_read_by_json_and_equals_yaml() -> None:
    items = [{"name": f"n{i}", "labels": {"rack": f"r{i // 8}"}, "count": i} for i in range(MANY)]
    text = "name: x\nnodes:\n" + lines(items) + "other:\n  inner:\n" + lines(items, 2)
    fast = json_items.substitute(text)
    assert fast is not None and fast[0].count("- {}") == 2 and len(fast[0].splitlines()) == 6
    got, want = both(text)
    assert got == want == ("value", {"name": "x", "nodes": items, "other": {"inner": items}})


def test_a_key_given_twice_in_a_json_line_is_yaml_s_error_with_its_line() -> None:
    text = "nodes:\n" + lines([{"a": i} for i in range(MANY)])
    text = text.replace('- {"a": 40}', '- {"a": 40, "a": 41}')
    got, want = both(text)
    assert got == want
    assert got[0] == "error" and "line 42, column" in got[1] and "duplicate key 'a'" in got[1]


@pytest.mark.parametrize(
    "item",
    [
        {"x": 1e20},  # json writes 1e+20: a string to YAML 1.1
        {"x": float("nan")},  # NaN: a string to YAML
        {"x": "\U0001f600"},  # \ud83d\ude00: two separate halves in PyYAML
        {"k" * 1100: 1},  # a flow key over 1,024 characters: a YAML error
        {"x": [[[[[[[[[[1]]]]]]]]]]},
    ],
    ids=["exponent", "nan", "surrogates", "long-key", "nested"],
)
def test_what_yaml_reads_otherwise_is_left_to_yaml(item: dict[str, Any]) -> None:
    text = "nodes:\n" + lines([{"i": i} for i in range(MANY)] + [item])
    assert both(text)[0] == both(text)[1]


def test_lines_inside_a_block_scalar_or_merged_stay_yaml() -> None:
    items = [{"i": i} for i in range(MANY)]
    block = f"name: x\ndescription: |\n{lines(items, 2)}"
    got, want = both(block)
    assert got == want == ("value", {"name": "x", "description": lines(items)})
    merged = f"base: &b\n{lines(items)}m:\n  <<: *b\n"
    got, want = both(merged)
    assert got == want and got[0] == "value" and got[1]["m"] == {"i": 0}


def test_nesting_near_the_limit_is_refused_as_yaml_refuses_it() -> None:
    deep: Any = 1
    for _ in range(97):
        deep = {"d": deep}
    text = "a:\n  b:\n" + lines([{"i": i} for i in range(MANY)] + [deep], 2)
    got, want = both(text)
    assert got == want and got[0] == "error" and "nesting deeper than 100" in got[1]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.dictionaries(st.text(max_size=5), json_values, max_size=4), max_size=6),
    st.booleans(),
    st.sampled_from([None, (",", ":"), (" ,", " : ")]),
)
def test_any_json_items_read_as_yaml_reads_them(
    items: list[dict[str, Any]], ascii_only: bool, separators: tuple[str, str] | None
) -> None:
    filler = [{"f": i} for i in range(MANY)]
    dumps = {"ensure_ascii": ascii_only, "separators": separators}
    text = "list:\n" + lines([*items, *filler, *items], **dumps)
    got, want = both(text)
    assert repr(got) == repr(want)


@pytest.mark.parametrize("line_break", ["\r", "\x85", "\u2028", "\u2029"])
def test_a_line_break_only_yaml_counts_leaves_the_file_to_yaml(line_break: str) -> None:
    """The placeholders are found by line; YAML counting one more line before them would
    have put a run where the user's own `{}` stands."""
    text = f'd: "a{line_break}b"\nl:\n- {{}} # mine\n' + lines([{"i": i} for i in range(MANY)])
    got, want = both(text)
    assert got == want
    assert got[0] == "error" or got[1]["l"][0] == {}
