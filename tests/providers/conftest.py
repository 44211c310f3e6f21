"""What the embedded-cluster test modules here share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.providers import create_provider
from harness.providers.local.cluster import LocalCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """One embedded cluster for the module that asks; stopped after its last test."""
    provider = create_provider("local")
    assert isinstance(provider, LocalCluster)
    provider.start()
    yield provider
    provider.stop()
