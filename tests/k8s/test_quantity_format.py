"""One quantity formatter (harness.k8s.quantity.format_quantity): exact, and read back unchanged.

The runner (Kubernetes objects) and the sim (kueue-sim's contract) once had a formatter each
and wrote 3/10**6 differently ("3000n" and "3u"); both now write what parse_quantity reads back.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.k8s.quantity import QuantityError, format_quantity, parse_quantity
from harness.runner import objects
from harness.scenario.loader import scenario_from_data
from harness.sim.contract import scenario_to_dict

NANO = Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(4), "4"),
        (Fraction(0), "0"),
        (Fraction(1, 2), "500m"),
        (Fraction(1, 1000), "1m"),
        (Fraction(3, 10**6), "3u"),
        (Fraction(1, 10**9), "1n"),
        (Fraction(-1, 4), "-250m"),
        (Fraction(256 * 2**30), "274877906944"),
        (Fraction(2**63 - 1), str(2**63 - 1)),
    ],
)
def test_quantities_are_written_exactly(value: Fraction, text: str) -> None:
    assert format_quantity(value) == text


def test_finer_than_nano_is_refused() -> None:
    with pytest.raises(QuantityError, match="finer than a nano unit"):
        format_quantity(Fraction(1, 3))


@given(st.integers(min_value=-(10**6), max_value=10**6))
def test_millicores_round_trip(millis: int) -> None:
    value = Fraction(millis, 1000)
    assert parse_quantity(format_quantity(value)) == value


@given(st.integers(min_value=-(2**80), max_value=2**80))
def test_large_integers_round_trip(n: int) -> None:
    assert parse_quantity(format_quantity(Fraction(n))) == n


@given(st.integers(min_value=0, max_value=2**20), st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi"]))
def test_memory_round_trips(mantissa: int, suffix: str) -> None:
    value = parse_quantity(f"{mantissa}{suffix}")
    assert parse_quantity(format_quantity(value)) == value


@given(st.integers(min_value=-(10**18), max_value=10**18))
def test_every_nano_multiple_round_trips(nanos: int) -> None:
    value = nanos * NANO
    assert parse_quantity(format_quantity(value)) == value


def test_runner_and_sim_write_the_same_text() -> None:
    data = {
        "name": "q",
        "topology": {"name": "t", "levels": ["kubernetes.io/hostname"]},
        "nodes": [{"name": "n", "allocatable": {"cpu": "3u", "memory": "1Gi", "pods": 10}}],
        "workloads": [],
    }
    scenario = scenario_from_data(data, "q.yaml")
    node = scenario.nodes[0]
    sim = scenario_to_dict(scenario)["nodes"][0]["allocatable"]
    assert sim == {"cpu": "3u", "memory": str(2**30), "pods": "10"}
    assert objects.resource_list(node.allocatable) == sim
