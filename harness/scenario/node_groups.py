"""`nodeGroups`: many alike nodes from one template (docs/scenario-extensions.md).

A group is a node (as in `nodes`) plus a `count`; its `name` and label values may hold
placeholders: `{index}` (1, 2, ... within the group) and, when `count` is a mapping of
counters such as `{block: 2, rack: 4, host: 8}`, one placeholder per counter, each 1-based,
for every combination (the first counter outermost). The loader validates each generated
node exactly as one written out in `nodes`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from harness.scenario.keypath import KeyPath, kind, yaml_text

MAX_NODES = 65_000
"""Most nodes one group may make: the largest Kubernetes clusters offered (GKE) have 65,000."""
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_COUNTER = re.compile(r"[a-z][a-z0-9]*")


def expand(at: KeyPath, node_keys: tuple[str, ...]) -> Iterator[KeyPath]:
    """One KeyPath per generated node, holding the group's node with placeholders filled
    and `count` dropped, at the group's own key path (so errors point into the group)."""
    fields = at.mapping((*node_keys, "count"), ("name", "count"))
    counters = _counters(fields["count"])
    known = ("index", *(c for c in counters if c != "index"))
    pattern = fields["name"].string()
    _check_placeholders(fields["name"], pattern, known)
    labels = fields["labels"].value if "labels" in fields else None
    if isinstance(labels, dict):
        for key, value in labels.items():
            if isinstance(value, str):
                _check_placeholders(fields["labels"].child(str(key), value), value, known)
    template = {k: v for k, v in at.value.items() if k != "count"}
    ranges = [range(1, n + 1) for n in counters.values()]
    for index, combination in enumerate(itertools.product(*ranges), start=1):
        values = {"index": index, **dict(zip(counters, combination, strict=True))}
        node = {**template, "name": _fill(pattern, values)}
        if isinstance(labels, dict):
            node["labels"] = {
                k: _fill(v, values) if isinstance(v, str) else v for k, v in labels.items()
            }
        yield KeyPath(at.file, at.path, node, at.error)


def _counters(at: KeyPath) -> dict[str, int]:
    """`count: 8` -> {index: 8}; `count: {rack: 4, host: 8}` -> those two counters."""
    if not isinstance(at.value, dict):
        return {"index": at.integer(1, MAX_NODES)}
    counters: dict[str, int] = {}
    for name, value in at.value.items():
        sub = at.child(str(name), value)
        if not isinstance(name, str) or not _COUNTER.fullmatch(name) or name == "index":
            sub.fail(
                f"{kind(name)} is not a counter name (lower-case letters and digits, "
                "starting with a letter; not index)"
            )
        counters[name] = sub.integer(1, MAX_NODES)
    if not counters:
        at.fail("must be a whole number or a mapping of counter name to count")
    total = 1
    for value in counters.values():
        total *= value
    if total > MAX_NODES:
        at.fail(f"makes {total} nodes; a group makes at most {MAX_NODES}")
    return counters


def _check_placeholders(at: KeyPath, text: str, known: tuple[str, ...]) -> None:
    for name in _PLACEHOLDER.findall(text):
        if name not in known:
            at.fail(
                f"unknown placeholder {yaml_text('{' + name + '}')} in {yaml_text(text)} "
                f"(this group has: {', '.join('{' + k + '}' for k in known)})"
            )


def _fill(text: str, values: dict[str, int]) -> str:
    return _PLACEHOLDER.sub(lambda m: str(values[m[1]]), text)
