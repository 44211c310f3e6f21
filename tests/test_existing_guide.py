"""The guide suite on an existing cluster: the embedded cluster, reached only through its
kubeconfig. The existing provider vets the cluster (Kueue, webhook, TAS, KWOK), the runner
runs each scenario, and the provider's sweep removes the run's objects afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fit import fit
from harness.kube import RUN_LABEL, Kube
from harness.loader import load_scenario
from harness.providers.existing.cluster import ExistingCluster
from harness.providers.local.cluster import LocalCluster
from harness.runner.backend import ClusterBackend
from harness.verdict import against_expectations, against_prediction

GUIDE = sorted((Path(__file__).resolve().parents[1] / "suites" / "guide").glob("*.yaml"))


@pytest.fixture(scope="module")
def existing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ExistingCluster, Path]]:
    """An embedded cluster, seen by the existing provider through its kubeconfig only."""
    local = LocalCluster()
    handle = local.start()
    provider = ExistingCluster(
        kubeconfig=handle.kubeconfig, run_root=tmp_path_factory.mktemp("existing")
    )
    try:
        provider.start()
        yield provider, handle.kubeconfig
    finally:
        provider.stop()
        local.stop()


@pytest.fixture(scope="module")
def backend(existing: tuple[ExistingCluster, Path]) -> Iterator[ClusterBackend]:
    """The runner on the existing cluster, sharing the provider's run id."""
    provider, _ = existing
    runner = ClusterBackend(name="existing", kubeconfig=provider.source)
    runner.run_id = provider.run_id  # one label value: the provider's sweep removes it all
    yield runner
    runner.close()


@pytest.mark.cluster
@pytest.mark.parametrize("path", GUIDE, ids=lambda p: p.stem)
def test_guide_scenario_on_an_existing_cluster(backend: ClusterBackend, path: Path) -> None:
    scenario = load_scenario(path)
    observed = backend.run(scenario)
    problems = against_expectations(scenario.expect or {}, observed.outcomes)
    problems += against_prediction(fit(scenario).outcomes, observed.outcomes)
    assert not problems, "\n".join(problems) + f"\n{observed.details}"


@pytest.mark.cluster
def test_sweep_leaves_nothing_of_the_run(existing: tuple[ExistingCluster, Path]) -> None:
    provider, kubeconfig = existing
    assert GUIDE
    provider.sweep()
    kube = Kube(kubeconfig)
    try:
        sel = f"{RUN_LABEL}={provider.run_id}"
        assert kube.list("v1", "Node", labels=sel) == []
        assert kube.list("kueue.x-k8s.io/v1beta2", "ClusterQueue", labels=sel) == []
        assert kube.list("v1", "Namespace", labels=sel) == []
    finally:
        kube.close()
