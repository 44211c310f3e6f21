"""Label selectors as the watch-fed copies evaluate them (harness.kube.informer): the
equality and existence forms, as the API server reads them; set-based forms are not
evaluated, so such a read goes to the API server."""

from __future__ import annotations

import pytest

from harness.kube.informer import selector_matches

LABELS = {"app": "train", "tier": "gpu", "kueue-tas-harness/run": "r1"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, True),
        ("", True),
        ("app=train", True),
        ("app==train", True),
        ("app=serve", False),
        ("app!=serve", True),
        ("app!=train", False),
        ("absent!=x", True),
        ("tier", True),
        ("absent", False),
        ("!absent", True),
        ("!tier", False),
        ("app=train,tier=gpu", True),
        ("app=train,tier=cpu", False),
        ("kueue-tas-harness/run=r1, tier", True),
    ],
)
def test_equality_and_existence_requirements(selector: str | None, expected: bool) -> None:
    assert selector_matches(selector, LABELS) is expected


@pytest.mark.parametrize("selector", ["app in (train,serve)", "tier notin (cpu)"])
def test_set_based_requirements_are_left_to_the_api_server(selector: str) -> None:
    assert selector_matches(selector, LABELS) is None
