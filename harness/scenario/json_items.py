"""Block-sequence items written one JSON object a line (`- {"name": "n1", ...}`), read with
`json` instead of the pure-Python YAML reader: a 5,000-node snapshot is 25,000 such lines,
which PyYAML reads in ~20 s and `json` in ~0.1 s.

Only lines that YAML reads exactly as JSON does are taken; everything else stays YAML. A
run of such lines at one indentation becomes a single `- {}` placeholder, which the strict
loader (harness/scenario/strict_yaml.py) replaces by the run's values, and checks that it found
every placeholder as a block-sequence item; if anything is off, or the document has any
error, it parses the original text instead, so errors and results are always YAML's own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_ITEM = re.compile(r"( *)- (\{.*\})")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # YAML keeps the halves of a pair apart
_SPACE_BEFORE_COLON = re.compile(r'"\s+:')
_OTHER_BREAK = re.compile("\r(?!\n)|[\x85\u2028\u2029]")
"""Line breaks to YAML besides \n and \r\n (PyYAML's reader counts them, even in quotes)."""
_YAML_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?")
"""PyYAML's float resolver for what JSON writes (yaml/resolver.py): `1e5` and `1.5e5` are
strings to YAML (the exponent needs a sign and the mantissa a dot), floats to JSON."""
LONG_LINE = 1000
"""PyYAML refuses a flow-mapping key spanning more than 1,024 characters; JSON does not."""
MIN_LINES = 64
"""Fewer candidate lines than this are left to YAML: not worth a second pass."""


class _NotYamlEqual(ValueError):
    """A value YAML would read differently from JSON."""


@dataclass
class Run:
    """Consecutive JSON items at one indentation; `nesting`: the most brackets on a line,
    a bound on how deep its values nest (for the loader's depth limit)."""

    values: list[Any]
    nesting: int


def _float(text: str) -> float:
    if not _YAML_FLOAT.fullmatch(text):
        raise _NotYamlEqual(text)
    return float(text)


def _constant(text: str) -> Any:
    raise _NotYamlEqual(text)  # NaN, Infinity: plain strings to YAML


def _mapping(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _NotYamlEqual("a key given twice")  # YAML's reader refuses it with its line
    return out


_DECODER = json.JSONDecoder(
    object_pairs_hook=_mapping, parse_float=_float, parse_constant=_constant
)


def _value(line: str) -> tuple[int, Any] | None:
    """(indentation, value) of a line YAML reads as JSON does, else None."""
    match = _ITEM.fullmatch(line)
    if match is None or not line.isascii() or not line.isprintable():
        return None
    body = match.group(2)
    if _SURROGATE.search(body):
        return None
    if len(line) > LONG_LINE and _SPACE_BEFORE_COLON.search(body):
        return None
    try:
        value, end = _DECODER.raw_decode(body)
    except (ValueError, RecursionError):
        return None
    if end != len(body) or not isinstance(value, dict):
        return None
    if len(line) > LONG_LINE and _long_key(value):
        return None
    return len(match.group(1)), value


def _long_key(value: Any) -> bool:
    if isinstance(value, dict):
        return any(len(k) > 150 or _long_key(v) for k, v in value.items())
    return isinstance(value, list) and any(_long_key(v) for v in value)


def substitute(text: str) -> tuple[str, dict[tuple[int, int], Run]] | None:
    """The text with each run replaced by `- {}` on the run's first line, and the runs by
    (line, column) of that `{` in the new text (0-based, as YAML marks count); None when
    there is too little to gain."""
    if _OTHER_BREAK.search(text):
        return None  # YAML would count lines differently, and the placeholders' too
    lines = text.split("\n")
    if sum(1 for line in lines if line.lstrip(" ").startswith("- {")) < MIN_LINES:
        return None
    out: list[str] = []
    runs: dict[tuple[int, int], Run] = {}
    run: Run | None = None
    indent = -1
    for line in lines:
        found = _value(line) if line.lstrip(" ").startswith("- {") else None
        if found is None:
            out.append(line)
            run = None
            continue
        nesting = line.count("{") + line.count("[")
        if run is not None and found[0] == indent:
            run.values.append(found[1])
            run.nesting = max(run.nesting, nesting)
            continue
        indent = found[0]
        run = Run([found[1]], nesting)
        runs[(len(out), indent + 2)] = run
        out.append(" " * indent + "- {}")
    return "\n".join(out), runs
