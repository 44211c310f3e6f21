"""Cluster shapes (harness/providers/kind/shapes/*.yaml): which workers a kind cluster has,
their labels and GPUs.

A shape is data a user edits without reading Python; kind-specific rendering lives in
config.py and helm_values.py. GPU counts belong to pools (as in fake-gpu-operator's
`topology.nodePools`), so the status-patch and the operator paths give the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.errors import InputError
from harness.k8s.rules import is_dns_label
from harness.scenario.keypath import KeyPath, yaml_text

REPO_CLUSTERS = Path(__file__).resolve().parent / "shapes"
DEFAULT_SHAPE = "gpu-2blocks-4racks"
GPU_RESOURCE = "nvidia.com/gpu"
POOL_LABEL = "run.ai/simulated-gpu-node-pool"  # fake-gpu-operator's topology.nodePoolLabelKey
NAME_RULE = "name (a DNS label: at most 63 lower-case letters, digits and '-')"
# The kubelet refuses --node-labels in the kubernetes.io / k8s.io namespaces except these
# (k8s.io/kubelet/pkg/apis/well_known_labels.go), and kind applies labels through it.
_KUBELET_LABELS = {
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
}
_KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


class ShapeError(InputError):
    """A cluster shape file is malformed: names the file, the key path and the problem."""


@dataclass(frozen=True)
class Pool:
    """Workers with the same fake GPU model and count."""

    name: str
    gpus: int
    product: str = "NVIDIA-A100-SXM4-40GB"
    memory_mib: int = 40960


@dataclass(frozen=True)
class Worker:
    """One kind worker node, in the order kind creates (and names) them."""

    index: int
    pool: Pool
    labels: dict[str, str]

    def node_name(self, cluster: str) -> str:
        """kind's node namer: <cluster>-worker, <cluster>-worker2, ..."""
        return f"{cluster}-worker" + (str(self.index + 1) if self.index else "")


@dataclass(frozen=True)
class ClusterShape:
    name: str
    description: str
    gpu_resource: str
    pools: dict[str, Pool]
    workers: tuple[Worker, ...]
    path: str = "<shape>"

    def label_keys(self) -> set[str]:
        """Every label key the shape puts on some worker."""
        return {k for w in self.workers for k in w.labels}

    def total_gpus(self) -> int:
        return sum(w.pool.gpus for w in self.workers)


def _at(file: str, data: Any) -> KeyPath:
    return KeyPath(file, "", data, ShapeError)


def _kubelet_may_set(key: str) -> bool:
    domain = key.partition("/")[0] if "/" in key else ""
    restricted = domain in ("kubernetes.io", "k8s.io") or domain.endswith(
        (".kubernetes.io", ".k8s.io")
    )
    if not restricted or key in _KUBELET_LABELS:
        return True
    return any(domain == ns or domain.endswith("." + ns) for ns in _KUBELET_NAMESPACES)


def _labels(at: KeyPath) -> dict[str, str]:
    labels = at.labels()
    for key in labels:
        if not _kubelet_may_set(key):
            at.child(key, labels[key]).fail(
                "the kubelet may not set labels in the kubernetes.io/k8s.io namespaces "
                "(kind applies labels through it); use a domain like cloud.provider.com/"
            )
    return labels


def _pool(at: KeyPath, name: str) -> Pool:
    keys = at.mapping(("gpus", "product", "memoryMiB"), ("gpus",))
    return Pool(
        name=name,
        gpus=keys["gpus"].integer(0),
        product=keys["product"].string() if "product" in keys else Pool.product,
        memory_mib=keys["memoryMiB"].integer(1) if "memoryMiB" in keys else Pool.memory_mib,
    )


def parse_shape(data: Any, file: str) -> ClusterShape:
    """Validate a loaded YAML document into a ClusterShape (ShapeError on any problem)."""
    top = _at(file, data).mapping(
        ("name", "description", "gpu", "pools", "workers"), ("name", "pools", "workers")
    )
    name = top["name"].string(is_dns_label, NAME_RULE)
    if Path(file).suffix in (".yaml", ".yml") and Path(file).stem != name:
        top["name"].fail(f"{yaml_text(name)} must equal the file name {yaml_text(Path(file).stem)}")
    resource = GPU_RESOURCE
    if "gpu" in top:
        resource = top["gpu"].mapping(("resource",))["resource"].string()
    pools_at = top["pools"]
    if not isinstance(pools_at.value, dict) or not pools_at.value:
        pools_at.fail("must be a non-empty mapping of pool name to {gpus: N}")
    pools = {}
    for pname, pval in pools_at.value.items():
        pools[pname] = _pool(pools_at.child(str(pname), pval), str(pname))
        pools_at.child(str(pname), pname).string(is_dns_label, NAME_RULE)
    workers_at = top["workers"]
    if not isinstance(workers_at.value, list) or not workers_at.value:
        workers_at.fail("must be a non-empty list of workers")
    workers: list[Worker] = []
    for i, entry in enumerate(workers_at.value):
        w = workers_at.child(i, entry).mapping(("pool", "labels", "count"), ("pool",))
        pool_name = w["pool"].string()
        if pool_name not in pools:
            w["pool"].fail(f"unknown pool {yaml_text(pool_name)} (defined: {', '.join(pools)})")
        labels = _labels(w["labels"]) if "labels" in w else {}
        for _ in range(w["count"].integer(1) if "count" in w else 1):
            workers.append(Worker(len(workers), pools[pool_name], dict(labels)))
    description = top["description"].string() if "description" in top else ""
    return ClusterShape(name, description, resource, pools, tuple(workers), file)


def load_shape(name_or_path: str | Path) -> ClusterShape:
    """A shape by name (harness/providers/kind/shapes/NAME.yaml) or by path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = REPO_CLUSTERS / f"{name_or_path}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in REPO_CLUSTERS.glob("*.yaml"))
        raise ShapeError(str(path), "(file)", f"no such cluster shape; known: {', '.join(known)}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ShapeError(str(path), "(file)", f"not valid YAML: {err}") from None
    return parse_shape(data, str(path))
