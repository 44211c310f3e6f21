"""Between scenarios of other feature gates or kueueConfig the embedded cluster restarts Kueue
alone (LocalCluster.reconfigure_kueue): the API server, etcd and the controllers stay, Kueue
comes back with the new Configuration and its webhooks answer. A change of the
VisibilityOnDemand gate still restarts the whole cluster (the APIServices come or go)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.backends.base import create_backend
from harness.results.report import expectation_lines
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario

SUITES = Path(__file__).resolve().parents[2] / "suites"
PLAIN = SUITES / "required" / "required-host-tightest-node.yaml"
BLOCKING = SUITES / "pods-ready" / "pr-block-admission-until-pods-ready.yaml"


def _pids(backend: ClusterBackend) -> dict[str, int]:
    assert backend.provider is not None
    return dict(backend.provider.pids())  # type: ignore[attr-defined]


@pytest.mark.cluster
def test_a_new_kueue_config_restarts_kueue_alone_and_its_scenario_passes() -> None:
    plain, blocking = load_scenario(PLAIN), load_scenario(BLOCKING)
    assert not plain.kueue_config.document and blocking.kueue_config.document
    backend = create_backend("local")
    assert isinstance(backend, ClusterBackend)
    try:
        first = backend.run(plain)
        before = _pids(backend)
        provider = backend.provider
        second = backend.run(blocking)
        after = _pids(backend)
        assert backend.provider is provider, "the whole cluster was restarted"
        assert after["kueue"] != before["kueue"], "Kueue was not restarted"
        assert {k: v for k, v in after.items() if k != "kueue"} == {
            k: v for k, v in before.items() if k != "kueue"
        }
        config = yaml.safe_load(
            (provider.handle.run_dir / "kueue" / "config.yaml").read_text()  # type: ignore[union-attr]
        )
        assert config["waitForPodsReady"]["blockAdmission"] is True
        for scenario, observed in ((plain, first), (blocking, second)):
            lines = expectation_lines(scenario, observed.outcomes, observed.steps)
            assert not lines, "\n".join([*lines, observed.details])
        # Back to the defaults: Kueue alone again, without the section.
        backend.cluster(plain.feature_gates, plain.kueue_config.document)
        assert backend.provider is provider
        config = yaml.safe_load(
            (provider.handle.run_dir / "kueue" / "config.yaml").read_text()  # type: ignore[union-attr]
        )
        assert "blockAdmission" not in (config.get("waitForPodsReady") or {})
        # The visibility API's gate: the whole cluster.
        backend.cluster({"VisibilityOnDemand": False}, {})
        assert backend.provider is not provider
    finally:
        backend.close()
