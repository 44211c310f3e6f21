"""The v1beta2 topologyAssignment decoder, on the forms Kueue's API documents (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.runner.decode import DecodeError, domains, lowest_level_pods

EXAMPLE_1: dict[str, Any] = {
    "levels": ["cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"],
    "slices": [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"individual": {"roots": ["block-1", "block-1"]}},
                {"individual": {"roots": ["rack-1", "rack-2"]}},
            ],
            "podCounts": {"individual": [4, 2]},
        }
    ],
}

EXAMPLE_2: dict[str, Any] = {
    "levels": EXAMPLE_1["levels"],
    "slices": [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"universal": "block-1"},
                {"individual": {"prefix": "rack-", "roots": ["1", "2"]}},
            ],
            "podCounts": {"individual": [4, 2]},
        }
    ],
}

EXAMPLE_4: dict[str, Any] = {
    "levels": ["kubernetes.io/hostname"],
    "slices": [
        {
            "domainCount": 4,
            "valuesPerLevel": [
                {"individual": {"prefix": "block-1-rack-1-node-", "roots": ["1", "2", "3", "4"]}}
            ],
            "podCounts": {"universal": 1},
        },
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"individual": {"prefix": "block-1-rack-2-node-", "roots": ["1", "2"]}}
            ],
            "podCounts": {"universal": 1},
        },
    ],
}


def test_individual_values_and_counts() -> None:
    assert list(domains(EXAMPLE_1)) == [(("block-1", "rack-1"), 4), (("block-1", "rack-2"), 2)]
    assert lowest_level_pods(EXAMPLE_1) == {"rack-1": 4, "rack-2": 2}


def test_universal_value_and_prefix_decode_to_the_same_domains() -> None:
    assert list(domains(EXAMPLE_2)) == list(domains(EXAMPLE_1))


def test_several_slices_with_universal_counts() -> None:
    assert lowest_level_pods(EXAMPLE_4) == {
        "block-1-rack-1-node-1": 1,
        "block-1-rack-1-node-2": 1,
        "block-1-rack-1-node-3": 1,
        "block-1-rack-1-node-4": 1,
        "block-1-rack-2-node-1": 1,
        "block-1-rack-2-node-2": 1,
    }


def test_suffix_is_appended() -> None:
    ta = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"individual": {"prefix": "gpu-", "suffix": "-a", "roots": ["1", "2"]}}
                ],
                "podCounts": {"individual": [3, 1]},
            }
        ],
    }
    assert lowest_level_pods(ta) == {"gpu-1-a": 3, "gpu-2-a": 1}


def test_domains_sharing_a_lowest_value_are_summed() -> None:
    """Rack r1 under two blocks: the placement key is the lowest value, so counts add up."""
    ta = {
        "levels": ["block", "rack"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"individual": {"roots": ["b1", "b2"]}},
                    {"universal": "r1"},
                ],
                "podCounts": {"individual": [2, 3]},
            },
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "b3"}, {"universal": "r2"}],
                "podCounts": {"universal": 1},
            },
        ],
    }
    assert lowest_level_pods(ta) == {"r1": 5, "r2": 1}


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        ({"levels": [], "slices": []}, "no levels"),
        (
            {
                "levels": ["a", "b"],
                "slices": [
                    {
                        "domainCount": 1,
                        "valuesPerLevel": [{"universal": "x"}],
                        "podCounts": {"universal": 1},
                    }
                ],
            },
            "1 valuesPerLevel entries for 2 levels",
        ),
        (
            {
                "levels": ["a"],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [{"individual": {"roots": ["x"]}}],
                        "podCounts": {"universal": 1},
                    }
                ],
            },
            "1 roots for domain index 1",
        ),
        (
            {
                "levels": ["a"],
                "slices": [
                    {"domainCount": 1, "valuesPerLevel": [{}], "podCounts": {"universal": 1}}
                ],
            },
            "neither universal nor individual",
        ),
        (
            {
                "levels": ["a"],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [{"universal": "x"}],
                        "podCounts": {"individual": [1]},
                    }
                ],
            },
            "no count for domain index 1",
        ),
    ],
)
def test_malformed_assignments_are_named(broken: dict[str, Any], problem: str) -> None:
    with pytest.raises(DecodeError, match=problem):
        lowest_level_pods(broken)
