"""The kind provider's cluster-facing code.

Without Docker, reset/reshape are exercised on the embedded cluster: KWOK nodes named and
labelled exactly as kind would create the shape's workers stand in for them, and the same
label merge patches and status JSON patches go to a real API server. The full path (kind
create, Helm install of Kueue, webhook, GPUs) runs only where a Docker engine answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.install.kueue import wait_webhook_mutates
from harness.kube import Kube, node_ready, wait_for
from harness.loader import load_scenario
from harness.providers.kind import config as kindconfig
from harness.providers.kind import prereqs
from harness.providers.kind.cluster import KindCluster
from harness.providers.kind.shape import POOL_LABEL
from harness.providers.kwok import fake_node, wait_nodes_ready
from harness.providers.local.cluster import LocalCluster
from harness.scenario import Scenario

SHAPE = "gpu-2blocks-4racks"
GPU = "nvidia.com/gpu"
CONTROL_PLANE = "kth-control-plane"  # kind's name for the default cluster's control plane
BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"


def _gpus(node: dict[str, object]) -> str | None:
    status = node.get("status") or {}
    assert isinstance(status, dict)
    value = (status.get("allocatable") or {}).get(GPU)
    return None if value is None else str(value)


def _scenario(tmp_path: Path, nodes: list[dict[str, object]]) -> Scenario:
    doc = {
        "name": "reshape",
        "topology": {"name": "t", "levels": [BLOCK, RACK, "kubernetes.io/hostname"]},
        "nodes": nodes,
        "workloads": [{"name": "w", "podSets": [{"name": "main", "count": 1,
                                                 "requests": {GPU: 1}}]}],
    }  # fmt: skip
    path = tmp_path / "reshape.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_scenario(path)


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


@pytest.mark.cluster
def test_reshape_maps_scenario_nodes_and_idles_the_rest(
    stand_in: tuple[KindCluster, Kube], tmp_path: Path
) -> None:
    provider, kube = stand_in
    scenario = _scenario(tmp_path, [
        {"name": "a", "labels": {BLOCK: "x1", RACK: "y1"}, "allocatable": {GPU: 2}},
        {"name": "b", "labels": {BLOCK: "x1", RACK: "y2"}, "allocatable": {GPU: 6},
         "unschedulable": True},
    ])  # fmt: skip
    plan = provider.reshape(scenario)
    assert plan.mode == "workers"
    for scenario_node in scenario.nodes:
        node = kube.get("v1", "Node", plan.real_name(scenario_node.name))
        assert _gpus(node) == str(int(scenario_node.allocatable[GPU]))
        labels = node["metadata"]["labels"]
        assert labels[BLOCK] == scenario_node.labels[BLOCK]
        assert labels[RACK] == scenario_node.labels[RACK]
        assert "cloud.provider.com/node-group" not in labels  # a shape key the scenario lacks
        assert bool(node["spec"].get("unschedulable")) is scenario_node.unschedulable
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == node["metadata"]["name"]
    for idle in plan.idle:
        node = kube.get("v1", "Node", idle)
        assert _gpus(node) == "0"
        assert BLOCK not in node["metadata"]["labels"] and RACK not in node["metadata"]["labels"]
        assert node["spec"]["unschedulable"] is True
        wait_for(kube, "v1", "Node", idle, node_ready, what="still Ready", timeout=10)
    provider.reset()  # and back to the shape
    first = provider.shape.workers[0]
    node = kube.get("v1", "Node", first.node_name(provider.cluster))
    assert node["metadata"]["labels"][BLOCK] == first.labels[BLOCK]
    assert _gpus(node) == str(first.pool.gpus) and not node["spec"].get("unschedulable")


@pytest.mark.cluster
def test_reshape_for_kwok_takes_every_worker_out(
    stand_in: tuple[KindCluster, Kube], tmp_path: Path
) -> None:
    provider, kube = stand_in
    nodes = [{"name": f"n{i}", "labels": {BLOCK: "b1", RACK: "r1"}, "allocatable": {GPU: 1}}
             for i in range(len(provider.workers()) + 1)]  # fmt: skip
    plan = provider.reshape(_scenario(tmp_path, nodes))
    assert plan.mode == "kwok" and set(plan.idle) == set(provider.workers())
    for name in provider.workers():
        node = kube.get("v1", "Node", name)
        assert BLOCK not in node["metadata"]["labels"] and RACK not in node["metadata"]["labels"]
        assert node["spec"]["unschedulable"] is True
    assert kube.get("v1", "Node", CONTROL_PLANE)["spec"]["unschedulable"] is True
    provider.reset()
    for name in (provider.workers()[0], CONTROL_PLANE):
        assert not kube.get("v1", "Node", name)["spec"].get("unschedulable")


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


@pytest.mark.docker
@pytest.mark.cluster
def test_kind_reshape_on_real_kubelets_needs_docker(
    kind_cluster: KindCluster, tmp_path: Path
) -> None:
    scenario = _scenario(tmp_path, [{"name": "a", "labels": {BLOCK: "x", RACK: "y"},
                                     "allocatable": {GPU: 3}}])  # fmt: skip
    plan = kind_cluster.reshape(scenario)
    assert kind_cluster.kube is not None
    node = kind_cluster.kube.get("v1", "Node", plan.real_name("a"))
    assert _gpus(node) == "3"
    kind_cluster.reset()
    plan = kind_cluster.reshape(load_scenario(_hostname_only(tmp_path)))
    assert plan.mode == "kwok"
    control_plane = kind_cluster.kube.get("v1", "Node", f"{kind_cluster.cluster}-control-plane")
    assert control_plane["spec"]["unschedulable"] is True
    kind_cluster.reset()


def _hostname_only(tmp_path: Path) -> Path:
    doc = {"name": "h", "topology": {"name": "t", "levels": ["kubernetes.io/hostname"]},
           "nodes": [{"name": "n", "labels": {}, "allocatable": {GPU: 1, "cpu": "4"}}],
           "workloads": [{"name": "w", "podSets": [{"name": "m", "count": 1,
                                                    "requests": {GPU: 1}}]}]}  # fmt: skip
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path
