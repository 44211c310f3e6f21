"""kind-specific rendering of a cluster shape: the kind config, and the node patches that
give workers their labels and fake GPUs again before each scenario.

The shape (harness/providers/kind/shapes/*.yaml) is data; everything kind-specific is derived here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.providers.kind.shape import POOL_LABEL, ClusterShape, Worker

KIND_API = "kind.x-k8s.io/v1alpha4"
NODE_IMAGE = (
    "kindest/node:v1.36.1@sha256:3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5"
)
"""kind v0.32.0's default image (pkg/apis/config/defaults/image.go), the one Kueue's e2e uses."""
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
WORKER_LABEL = "kueue-tas-harness/kind-worker"
"""On every worker (value: its index in the shape), so reshaping finds them by a label query."""

Obj = dict[str, Any]


def worker_labels(worker: Worker) -> dict[str, str]:
    """Labels the shape asks for on a worker, plus its fake-gpu-operator pool."""
    return {**worker.labels, POOL_LABEL: worker.pool.name, WORKER_LABEL: str(worker.index)}


def kind_config(shape: ClusterShape, *, image: str = NODE_IMAGE) -> Obj:
    """The kind Cluster config: one control plane (where Kueue runs) and the shape's workers.

    The API server listens on 127.0.0.1 only. Labels go through the kubelet's --node-labels,
    which is why shape.py refuses kubernetes.io/ keys.
    """
    nodes: list[Obj] = [{"role": "control-plane", "image": image}]
    nodes += [{"role": "worker", "image": image, "labels": worker_labels(w)} for w in shape.workers]
    return {
        "kind": "Cluster",
        "apiVersion": KIND_API,
        "networking": {"apiServerAddress": "127.0.0.1"},
        "nodes": nodes,
    }


def named_config(shape: ClusterShape, cluster: str, *, image: str = NODE_IMAGE) -> Obj:
    """kind_config with the cluster name (a run choice, not shape data)."""
    return {**kind_config(shape, image=image), "name": cluster}


def gpu_status_patch(resource: str, count: int) -> list[Obj]:
    """JSON patch for a Node's status subresource advertising `count` of an extended resource.

    The "Advertise Extended Resources for a Node" technique, as Kueue's TAS e2e does it
    (test/e2e/tas/*/suite_test.go). The kubelet keeps unknown extended resources until it
    re-registers, so this is re-applied before every scenario.
    """
    escaped = resource.replace("~", "~0").replace("/", "~1")
    return [
        {"op": "add", "path": f"/status/capacity/{escaped}", "value": str(count)},
        {"op": "add", "path": f"/status/allocatable/{escaped}", "value": str(count)},
    ]


def label_patch(wanted: Mapping[str, str], current: Mapping[str, str], owned: set[str]) -> Obj:
    """Merge patch setting `wanted` labels and removing keys we own that are no longer wanted.

    Only keys in `owned` (shape and scenario keys the harness set) are ever removed, so labels
    the kubelet or the user put on the node survive.
    """
    labels: dict[str, str | None] = {k: v for k, v in wanted.items() if current.get(k) != v}
    for key in owned:
        if key in current and key not in wanted:
            labels[key] = None
    return {"metadata": {"labels": labels}}
