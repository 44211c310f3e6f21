"""YAML text -> plain data for the scenario loader, every problem one `ScenarioError` line.

PyYAML's SafeLoader, stricter in two ways and kinder in one: a key given twice in one
mapping is refused (PyYAML keeps the last silently), nesting deeper than MAX_DEPTH is
refused before Python's recursion limit turns it into a traceback, and YAML merge keys
(`<<: *anchor`, `<<: [*a, *b]`) work as the YAML 1.1 merge spec says: keys written in the
mapping override merged ones, and an earlier mapping in a merge list overrides a later one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator
from typing import Any, cast

import yaml

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: _load reads everything on the Python parser
    CParser = object  # type: ignore[assignment,misc]

from harness.errors import ScenarioError
from harness.gcpause import without_gc_pauses
from harness.scenario import json_items
from harness.scenario.keypath import kind

MAX_DEPTH = 100
"""Deepest nesting accepted; a scenario needs about 8 (steps[].add-node.labels.KEY)."""
_MERGE_TAG = "tag:yaml.org,2002:merge"
_KINDS = {
    yaml.ScalarNode: "a single value",
    yaml.SequenceNode: "a list",
    yaml.MappingNode: "a mapping",
}


class _TooDeep(yaml.MarkedYAMLError):
    """Nesting beyond MAX_DEPTH, raised while composing, before any recursion limit."""


class _NotSame(Exception):
    """The placeholders of harness/scenario/json_items.py were not all read as block-sequence items
    (or could nest too deep): parse the original text instead."""


class _Strict(yaml.composer.Composer, yaml.constructor.SafeConstructor):
    """What both loaders add to PyYAML's composer and SafeConstructor: duplicate keys and
    deep nesting refused, merge keys resolved; `runs`: the JSON items of
    harness/scenario/json_items.py, by the (line, column) of their `- {}`."""

    _depth: int
    runs: dict[tuple[int, int], json_items.Run]
    peek_event: Callable[[], yaml.Event]  # the parser's: Python or libyaml

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = cast(yaml.Mark, self.peek_event().start_mark)  # either parser's
                raise _TooDeep(None, None, f"nesting deeper than {MAX_DEPTH} levels", mark)
            node = super().compose_node(parent, index)
            run = self.run_of(node) if self.runs else None
            if run is not None and self._depth + run.nesting > MAX_DEPTH:
                raise _NotSame  # the YAML reading might refuse it as too deep
            return node
        finally:
            self._depth -= 1

    def run_of(self, node: yaml.Node | None) -> json_items.Run | None:
        """The JSON items that an empty flow mapping stands for, if it is a placeholder."""
        if not isinstance(node, yaml.MappingNode) or node.value:
            return None
        return self.runs.get((node.start_mark.line, node.start_mark.column))

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Resolve `<<` merge keys in place, comparing keys by value. PyYAML 6.0.4 compares
        the id() of key strings, so whether the first mapping of `<<: [*a, *b]` wins over the
        second depends on CPython interning the key (it does for `x`, not for `allocatable`)."""
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        own: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            if not isinstance(value_node, yaml.MappingNode | yaml.SequenceNode):
                raise _merge_error("a mapping or list of mappings", value_node)
            sources = [value_node] if isinstance(value_node, yaml.MappingNode) else value_node.value
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise _merge_error("a mapping", source)
                if self.runs and self.run_of(source) is not None:
                    raise _NotSame  # merging JSON items: leave it to YAML
                self.flatten_mapping(source)
                merged.extend(source.value)
        first: dict[object, tuple[yaml.Node, yaml.Node]] = {}
        for pair in merged:  # an earlier mapping wins over a later one
            key_node = pair[0]
            same = (
                (key_node.tag, key_node.value)
                if isinstance(key_node, yaml.ScalarNode)
                else id(key_node)
            )
            first.setdefault(same, pair)
        node.value = [*first.values(), *own]  # keys written here come last, so they win


class _StrictLoader(_Strict, yaml.SafeLoader):
    """The strict reading on PyYAML's Python scanner and parser: the reference, whose error
    messages a refused file gets."""

    def __init__(self, stream: str, runs: dict[tuple[int, int], json_items.Run]) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._depth, self.runs = 0, runs


class _StrictCLoader(_Strict, yaml.resolver.Resolver, CParser):
    """The same reading on libyaml's scanner and parser (the events only: composing and
    constructing stay the strict Python ones above). Collecting the suites parsed 524 files
    in 4.8 s on the Python parser, in each of make e2e's six pytest-xdist workers."""

    def __init__(self, stream: str, runs: dict[tuple[int, int], json_items.Run]) -> None:
        CParser.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._depth, self.runs = 0, runs


def _merge_error(wanted: str, found: yaml.Node) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        None,
        None,
        f"expected {wanted} for merging, but found {_KINDS[type(found)]}",
        found.start_mark,
    )


def _construct_mapping(loader: _Strict, node: yaml.MappingNode) -> dict[Any, Any]:
    """Refuse a key written twice in this mapping (`<<` included); merged keys may repeat."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = "<<" if key_node.tag == _MERGE_TAG else loader.construct_object(key_node)
        if not isinstance(key, Hashable):
            continue  # construct_mapping refuses it with its own message
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {kind(key)}", key_node.start_mark
            )
        seen.add(key)
    # SafeConstructor.construct_mapping calls flatten_mapping (above) first.
    return loader.construct_mapping(node)


def _construct_sequence(loader: _Strict, node: yaml.SequenceNode) -> Iterator[list[Any]]:
    """A list (yielded first, as SafeConstructor does, so aliases to it resolve), each
    placeholder replaced by its JSON items."""
    data: list[Any] = []
    yield data
    for child in node.value:
        run = loader.run_of(child) if loader.runs else None
        if run is None:
            data.append(loader.construct_object(child))
        else:
            del loader.runs[(child.start_mark.line, child.start_mark.column)]
            data.extend(run.values)


# The stubs bind a constructor's loader to PyYAML's own loader classes.
for _loader in (_StrictLoader, _StrictCLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)  # type: ignore[type-var]
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)  # type: ignore[type-var]


@without_gc_pauses
def parse_yaml(text: str, file: str) -> Any:
    """Parse YAML text; a syntax error or a refusal becomes one line with the position.
    Long runs of one-line JSON items are read with `json` (harness/scenario/json_items.py) when the
    result is the same; any doubt or error and the whole text is read again as YAML."""
    fast = json_items.substitute(text)
    if fast is not None:
        with contextlib.suppress(yaml.YAMLError, _NotSame, RecursionError):
            data, unread = _load(*fast)
            if not unread:  # every placeholder found as a list item
                return data
    try:
        return _load(text, {})[0]
    except _TooDeep as err:
        raise ScenarioError(file, _where(err), str(err.problem)) from None
    except yaml.MarkedYAMLError as err:
        raise ScenarioError(file, _where(err), f"invalid YAML: {err.problem}") from None
    except yaml.YAMLError as err:
        raise ScenarioError(file, "", f"invalid YAML: {err}") from None


def _load(text: str, runs: dict[tuple[int, int], json_items.Run]) -> tuple[Any, int]:
    """The document's data, and how many placeholders it did not read as list items. Read
    with libyaml's parser where PyYAML has it; a text it refuses is read again with the
    Python one, which refuses it in the words and at the position it always did."""
    if yaml.__with_libyaml__:
        with contextlib.suppress(yaml.YAMLError):
            return _load_with(_StrictCLoader, text, dict(runs))
    return _load_with(_StrictLoader, text, runs)


def _load_with(
    loader_class: type[_StrictLoader | _StrictCLoader],
    text: str,
    runs: dict[tuple[int, int], json_items.Run],
) -> tuple[Any, int]:
    loader = loader_class(text, runs)
    try:
        return loader.get_single_data(), len(loader.runs)
    finally:
        loader.dispose()


def _where(err: yaml.MarkedYAMLError) -> str:
    mark = err.problem_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
