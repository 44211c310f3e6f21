"""Decode Kueue v1beta2's compressed TopologyAssignment into pods per domain.

The v1beta2 form (apis/kueue/v1beta2/workload_types.go, TopologyAssignment) stores
`levels` once and then `slices`, each covering `domainCount` domains; per level a slice
holds either one `universal` value or `individual` roots with an optional common prefix
and suffix; pod counts are `universal` or `individual`. Kueue's own reader is
pkg/util/tas/tas_assignment.go (valueAtIndex, countAtIndex); this mirrors its meaning.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.errors import HarnessError


class DecodeError(HarnessError):
    """A topologyAssignment that does not follow the v1beta2 shape."""


def _value_at(values: Mapping[str, Any], index: int, where: str) -> str:
    if values.get("universal") is not None:
        return str(values["universal"])
    individual = values.get("individual")
    if not isinstance(individual, Mapping):
        raise DecodeError(f"{where}: neither universal nor individual is set")
    roots = individual.get("roots") or []
    if index >= len(roots):
        raise DecodeError(f"{where}: {len(roots)} roots for domain index {index}")
    return f"{individual.get('prefix') or ''}{roots[index]}{individual.get('suffix') or ''}"


def _count_at(counts: Mapping[str, Any], index: int, where: str) -> int:
    if counts.get("universal") is not None:
        return int(counts["universal"])
    individual = counts.get("individual")
    if not isinstance(individual, list) or index >= len(individual):
        raise DecodeError(f"{where}: podCounts has no count for domain index {index}")
    return int(individual[index])


def domains(assignment: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], int]]:
    """Every assigned domain as (value per level, highest first) and its pod count."""
    levels = assignment.get("levels") or []
    if not levels:
        raise DecodeError("topologyAssignment: no levels")
    for s, piece in enumerate(assignment.get("slices") or []):
        where = f"topologyAssignment.slices[{s}]"
        per_level = piece.get("valuesPerLevel") or []
        if len(per_level) != len(levels):
            raise DecodeError(
                f"{where}: {len(per_level)} valuesPerLevel entries for {len(levels)} levels"
            )
        for index in range(int(piece.get("domainCount") or 0)):
            values = tuple(
                _value_at(v, index, f"{where}.valuesPerLevel[{i}]") for i, v in enumerate(per_level)
            )
            yield values, _count_at(piece.get("podCounts") or {}, index, f"{where}.podCounts")


def lowest_level_pods(assignment: Mapping[str, Any]) -> dict[str, int]:
    """Lowest-level value -> pods, summing domains that share a lowest-level value."""
    out: dict[str, int] = {}
    for values, count in domains(assignment):
        out[values[-1]] = out.get(values[-1], 0) + count
    return out
