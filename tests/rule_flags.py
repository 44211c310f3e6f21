"""Version-rule tests run twice: with the older version's rule as it is, and with its
KueueRules flag set as v0.19.2's, where they must see the opposite (so they would fail if the
rule were gone)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from harness.fit.versions import RULES

AS_IT_IS, AS_V0_19_2 = "as it is", "flag set as v0.19.2's"


def rule_removed(request: pytest.FixtureRequest, version: str, **flags: Any) -> Iterator[bool]:
    """The body of a fixture parametrized with AS_IT_IS / AS_V0_19_2: yields whether the
    version's rule is replaced by `flags` (v0.19.2's values) for the test."""
    removed = request.param == AS_V0_19_2
    with pytest.MonkeyPatch.context() as patch:
        if removed:
            patch.setitem(RULES, version, dataclasses.replace(RULES[version], **flags))
        yield removed
