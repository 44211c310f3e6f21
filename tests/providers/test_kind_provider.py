"""The kind provider's cluster-facing code.

Without Docker, park/reset are exercised on the embedded cluster: KWOK nodes named and
labelled exactly as kind would create the shape's workers stand in for them, and the same
label merge patches and status JSON patches go to a real API server. The full path (kind
create, Helm install of Kueue, webhook, GPUs) runs only where a Docker engine answers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.install.kueue import wait_webhook_mutates
from harness.kube import Kube
from harness.providers.kind import config as kindconfig
from harness.providers.kind import prereqs
from harness.providers.kind.cluster import KindCluster
from harness.providers.kind.shape import POOL_LABEL
from harness.providers.kwok import fake_node, wait_nodes_ready
from harness.providers.local.cluster import LocalCluster

SHAPE = "gpu-2blocks-4racks"
GPU = "nvidia.com/gpu"
CONTROL_PLANE = "kth-control-plane"  # kind's name for the default cluster's control plane


def _gpus(node: dict[str, object]) -> str | None:
    status = node.get("status") or {}
    assert isinstance(status, dict)
    value = (status.get("allocatable") or {}).get(GPU)
    return None if value is None else str(value)


@pytest.fixture(scope="module")
def stand_in() -> Iterator[tuple[KindCluster, Kube]]:
    """A KindCluster whose 'workers' are KWOK nodes on the embedded cluster, as kind names
    and labels them; nodes and cluster are removed afterwards."""
    local = LocalCluster()
    handle = local.start()
    provider = KindCluster(shape=SHAPE)
    kube = Kube(handle.kubeconfig)
    provider.kube = kube
    try:
        for worker, node in zip(
            provider.shape.workers, kindconfig.kind_config(provider.shape)["nodes"][1:], strict=True
        ):
            kube.create(fake_node(worker.node_name(provider.cluster), allocatable={"cpu": "8"},
                                  labels=node["labels"]))  # fmt: skip
        kube.create(fake_node(CONTROL_PLANE, allocatable={"cpu": "8"},
                              labels={"node-role.kubernetes.io/control-plane": ""}))  # fmt: skip
        wait_nodes_ready(kube, [*provider.workers(), CONTROL_PLANE])
        yield provider, kube
    finally:
        for name in [*provider.workers(), CONTROL_PLANE]:
            kube.delete("v1", "Node", name)
        kube.close()
        local.stop()


@pytest.mark.cluster
def test_park_cordons_every_real_node_and_reset_undoes_it(
    stand_in: tuple[KindCluster, Kube],
) -> None:
    provider, kube = stand_in
    provider.park()
    for name in [*provider.workers(), CONTROL_PLANE]:
        assert kube.get("v1", "Node", name)["spec"]["unschedulable"] is True
    provider.reset()
    for name in [*provider.workers(), CONTROL_PLANE]:
        assert not kube.get("v1", "Node", name)["spec"].get("unschedulable")


@pytest.mark.cluster
def test_reset_gives_each_worker_its_pool_gpus(stand_in: tuple[KindCluster, Kube]) -> None:
    provider, kube = stand_in
    provider.reset()
    for worker in provider.shape.workers:
        node = kube.get("v1", "Node", worker.node_name(provider.cluster))
        assert _gpus(node) == str(worker.pool.gpus)
        labels = node["metadata"]["labels"]
        assert {k: labels[k] for k in worker.labels} == worker.labels
        assert labels[POOL_LABEL] == worker.pool.name


# -- needs Docker ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kind_cluster(request: pytest.FixtureRequest) -> Iterator[KindCluster]:
    """A real kind cluster from the default shape; skipped where no engine answers."""
    found = prereqs.check()
    if found.engine is None:
        pytest.skip("no Docker engine (nor Podman) answers on this machine")
    if request.config.getoption("--cluster") != "kind":
        pytest.skip("kind tests create a kind cluster: run them with --cluster=kind")
    found.raise_if_missing()
    provider = KindCluster(shape=SHAPE, cluster_name="kth-test")
    provider.start()
    yield provider
    provider.stop()


@pytest.mark.docker
@pytest.mark.cluster
def test_kind_cluster_has_gpus_and_kueue_webhook_needs_docker(kind_cluster: KindCluster) -> None:
    kube = kind_cluster.kube
    assert kube is not None and kind_cluster.handle is not None
    assert kind_cluster.handle.kubeconfig.parent == kind_cluster.run_dir  # never ~/.kube
    for worker in kind_cluster.shape.workers:
        node = kube.get("v1", "Node", worker.node_name(kind_cluster.cluster))
        assert _gpus(node) == str(worker.pool.gpus)
    wait_webhook_mutates(kube, timeout=30)
    for name in [*kind_cluster.workers(), f"{kind_cluster.cluster}-control-plane"]:
        assert kube.get("v1", "Node", name)["spec"]["unschedulable"] is True  # parked
    pods = kube.list("v1", "Pod", "kueue-system")
    assert pods and all(p["spec"].get("nodeName") == f"{kind_cluster.cluster}-control-plane"
                        for p in pods)  # fmt: skip
