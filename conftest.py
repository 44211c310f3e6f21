"""What this repository's own tests share. User projects need no conftest.py: the plugin's
entry point (pytest11) gives them the fixtures, kueue_cluster, tas_shape and fit_model."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent

EXAMPLES = Path(__file__).resolve().parent / "examples"
# pytester points HOME at its scratch directory; the cluster's binaries and Go's module cache
# live under the real one (read here, at import, before any pytester fixture runs).
REAL_HOME = os.environ.get("HOME", str(Path.home()))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The examples start a real cluster: mark them `cluster`, so `make unit` (-m "not
    cluster") leaves them out and a plain `pytest examples` skips them saying how to enable
    them (--cluster=local or --cluster-tests). tryfirst: before -m deselects by marker.
    Tests using kueue_cluster go last (a stable sort)."""
    for item in items:
        if item.path.is_relative_to(EXAMPLES):
            item.add_marker(pytest.mark.cluster)
    # The kueue_cluster fixture's cluster lives until the session ends; tests that start
    # clusters of their own run before it starts, so two clusters never share the 2 cores.
    items.sort(key=lambda item: "kueue_cluster" in getattr(item, "fixturenames", ()))


@pytest.fixture
def real_home(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """HOME set back to the real one for a pytester run that starts the embedded cluster."""
    monkeypatch.setenv("HOME", REAL_HOME)
    return REAL_HOME


@pytest.fixture(scope="session")
def sim_binary() -> Path:
    """The kueue-sim binary for the current sources (built once, then cached)."""
    from harness.sim.build import build_sim

    if shutil.which("go") is None:
        pytest.skip("the sim backend needs Go >= 1.26 on PATH to build sim/")
    return build_sim()
