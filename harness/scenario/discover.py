"""Which YAML files are scenarios, for pytest's collection and `python -m harness check`.

A file whose top level is a mapping with at least two of `topology`, `nodes` (or
`nodeGroups`) and `workloads` looks like a scenario (two, so that a typo in one key still leaves
it recognisable, while a kind cluster config with its `nodes` list is not taken for one), unless
it is a cluster shape: scenario keys (and `x-` scratch keys) only, and no `workloads`. Only the
top-level keys are read: whether the scenario is valid is the loader's business, reported when
it runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml

from harness.scenario.loader import TOP_KEYS

SUFFIXES = (".yaml", ".yml")
MARK_KEYS = ("topology", "nodes", "workloads")
NODE_KEYS = frozenset({"nodes", "nodeGroups"})
"""Either makes a scenario's nodes, so either counts as `nodes` among the MARK_KEYS."""
# A file with only these keys is a cluster shape for the tas_shape fixture
# (docs/python-tests.md); a misspelt `workloads` key still leaves a scenario to report.
SHAPE_KEYS = frozenset(TOP_KEYS) - {"workloads", "expect", "steps"}
_KINDS = {"sequence": "a list", "scalar": "a single value"}
_TOP_KEY = re.compile(r"^(topology|nodes|nodeGroups|workloads)\s*:", re.MULTILINE)


def why_not_a_scenario(path: Path) -> str | None:
    """None when the file looks like a scenario, else the reason in a few words."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return f"cannot read: {err}"
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        # Broken YAML that still shows scenario keys is a scenario with a syntax error,
        # which the loader reports with its position.
        found = {"nodes" if k in NODE_KEYS else k for k in _TOP_KEY.findall(text)}
        return None if len(found) >= 2 else "not a scenario: not valid YAML"
    if not isinstance(node, yaml.MappingNode):
        kind = "scalar" if isinstance(node, yaml.ScalarNode) else "sequence"
        what = "empty" if node is None else f"{_KINDS[kind]}, not a mapping"
        return f"not a scenario: the top level is {what}"
    keys = {k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
    if "replay" in keys:
        return "a stream scenario (top-level `replay`): python -m harness replay FILE, or pytest"
    keys = {"nodes" if k in NODE_KEYS else k for k in keys if not str(k).startswith("x-")}
    found_keys = [k for k in MARK_KEYS if k in keys]
    if {"topology", "nodes"} <= keys <= SHAPE_KEYS:
        return "not a scenario: a cluster shape without workloads (for the tas_shape fixture)"
    if len(found_keys) >= 2:
        return None
    need = f"a scenario needs at least two of {', '.join(MARK_KEYS)}"
    if not found_keys:
        return f"not a scenario: it has none of the keys ({need})"
    missing = " or ".join(k for k in MARK_KEYS if k not in keys)
    return f"not a scenario: it has {found_keys[0]} but not {missing} ({need})"


def scenario_paths(paths: Iterable[Path]) -> Iterator[Path]:
    """Files as given; folders expanded to the YAML files below them that look like scenarios."""
    for path in paths:
        if not path.is_dir():
            yield path
            continue
        for found in sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
            if why_not_a_scenario(found) is None:
                yield found
