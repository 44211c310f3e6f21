"""Quantities and resource transformations written briefly, for the quota-request tests of
every Kueue version (tests/kueue/test_quota_requests*.py)."""

from __future__ import annotations

from fractions import Fraction

from harness.k8s.quantity import parse_quantity
from harness.scenario.kueue_config import ResourceTransformation


def q(value: str) -> Fraction:
    return parse_quantity(value)


def rule(
    name: str, outputs: dict[str, str], replace: bool = True, multiply_by: str = ""
) -> ResourceTransformation:
    return ResourceTransformation(name, replace, multiply_by, {k: q(v) for k, v in outputs.items()})
