"""Test-suite wiring (pytester and what tests share with examples/: the root conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.collect import BACKEND_KEY
from harness.runner.backend import ClusterBackend

# Scenarios that are wrong on purpose (test_loader_errors.py reads them): not tests themselves.
collect_ignore = ["data"]


@pytest.fixture(scope="session")
def runner(request: pytest.FixtureRequest) -> Iterator[ClusterBackend]:
    """The session's cluster backend (shared with the scenario items); its own if none,
    then one for every test module (two clusters would share the 2 cores)."""
    shared = request.config.stash.get(BACKEND_KEY, None)
    if isinstance(shared, ClusterBackend):
        yield shared
        return
    if shared is not None:
        pytest.skip(f"these tests need a real cluster, not --cluster={shared.name}")
    own = ClusterBackend(name="local")
    yield own
    own.close()
