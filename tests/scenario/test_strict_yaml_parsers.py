"""The strict YAML reading on libyaml's parser gives what it gives on PyYAML's Python parser:
the same data for every file the project ships, and for a refused text the Python parser's
one-line error, whatever libyaml would have said."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ScenarioError
from harness.scenario import strict_yaml
from harness.scenario.strict_yaml import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(
    p
    for folder in ("suites", "examples", "configs", "docs")
    for p in (ROOT / folder).rglob("*.yaml")
)


def test_both_parsers_read_every_shipped_file_alike() -> None:
    assert len(SHIPPED) > 500
    for path in SHIPPED:
        text = path.read_text()
        on_c = strict_yaml._load_with(strict_yaml._StrictCLoader, text, {})
        on_python = strict_yaml._load_with(strict_yaml._StrictLoader, text, {})
        assert on_c == on_python, path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a:\n\tb: 1\n", "line 2, column 1: invalid YAML: found character '\\t' that cannot start any token"),
        ("a: [1, 2\n", "line 2, column 1: invalid YAML: expected ',' or ']', but got '<stream end>'"),
        ("a: b: c\n", "line 1, column 5: invalid YAML: mapping values are not allowed here"),
        ("a: 1\na: 2\n", "line 2, column 1: invalid YAML: duplicate key 'a'"),
    ],
)  # fmt: skip
def test_a_refused_text_gets_the_python_parsers_words(text: str, message: str) -> None:
    """libyaml says `found character that cannot start any token`, `did not find expected
    ',' or ']'`, `mapping values are not allowed in this context`."""
    with pytest.raises(ScenarioError) as err:
        parse_yaml(text, "f.yaml")
    assert str(err.value) == f"f.yaml: {message}"


def test_without_libyaml_the_python_parser_reads_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PyYAML built without libyaml: nothing reaches for its parser."""
    import yaml

    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    monkeypatch.setattr(strict_yaml, "_StrictCLoader", None)
    assert parse_yaml("a: [1, 2]\nb: {c: d}\n", "f.yaml") == {"a": [1, 2], "b": {"c": "d"}}
