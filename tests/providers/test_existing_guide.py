"""The guide suite on an existing cluster: the embedded cluster, reached only through its
kubeconfig. The existing provider vets the cluster (Kueue, webhook, TAS, KWOK), the runner
runs each scenario, and the provider's sweep removes the run's objects afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fit import fit
from harness.kube import RUN_LABEL, Kube, NotFound
from harness.providers.cleanup import CLUSTER_SCOPED, NAMESPACED
from harness.providers.existing.cluster import ExistingCluster
from harness.providers.local.cluster import LocalCluster
from harness.results.comparison import against_expectations, against_prediction
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario

GUIDE = sorted((Path(__file__).resolve().parents[2] / "suites" / "guide").glob("*.yaml"))


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
def test_sweep_leaves_nothing_of_the_run(
    existing: tuple[ExistingCluster, Path], backend: ClusterBackend
) -> None:
    """Runs a scenario first, so there is something of the run to sweep even when this test
    runs alone; then every kind the run creates must be gone, namespaces included."""
    provider, kubeconfig = existing
    backend.run(load_scenario(GUIDE[0]))
    kube = Kube(kubeconfig)
    try:
        made = {kind for kind, _ in _run_objects(kube, provider.run_id)}
        assert {"Namespace", "Node", "ClusterQueue", "ResourceFlavor", "Topology",
                "LocalQueue"} <= made and made & {"Job", "Workload"}  # fmt: skip
        provider.sweep()
        assert _run_objects(kube, provider.run_id) == []
    finally:
        kube.close()


def _run_objects(kube: Kube, run_id: str) -> list[tuple[str, str]]:
    """(kind, name) of every object labelled with the run id, of every kind the run makes."""
    sel = f"{RUN_LABEL}={run_id}"
    found = [("Namespace", o["metadata"]["name"]) for o in kube.list("v1", "Namespace", labels=sel)]
    for api, kind in CLUSTER_SCOPED:
        found += [(kind, o["metadata"]["name"]) for o in kube.list(api, kind, labels=sel)]
    for api, kind in NAMESPACED:
        try:
            items = kube.list(api, kind, labels=sel)  # every namespace
        except NotFound:  # JobSet's kind where no JobSet CRD is installed
            continue
        found += [(kind, f"{o['metadata']['namespace']}/{o['metadata']['name']}") for o in items]
    return found
