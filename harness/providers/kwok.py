"""KWOK fake nodes: the stage set the kwok controller runs, and Node objects it manages.

KWOK has no built-in stages (kwokctl assembles them), so we take them from KWOK's module:
nodes initialise at once and keep a lease heartbeat; pods turn Running/Ready and are
removed on delete. `pod-complete` is left out on purpose so pods stay Running and their
placement and quota can be asserted while the Jobs live.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.kube import Kube, Obj, node_ready, wait_for

MANAGED_ANNOTATION = "kwok.x-k8s.io/node"
STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)


# KWOK's defaults (4 workers each) ready ~35 nodes/s here; a 1,000-node scenario waited
# ~28 s for it. The other options come as flags (localspec.kwok_args).
OPTIONS = """apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodePlayStageParallelism: 32
  nodeLeaseParallelism: 32
  podPlayStageParallelism: 32
  podsOnNodeSyncParallelism: 8"""


def stages_yaml(kwok_dir: Path, stages: Sequence[str] = STAGES) -> str:
    """One multi-document YAML for `kwok --config`: our options, then the chosen Stages."""
    docs = [f"# kueue-tas-harness: worker counts\n{OPTIONS}"]
    for rel in stages:
        docs.append(f"# from sigs.k8s.io/kwok {rel}\n" + (kwok_dir / rel).read_text().strip())
    return "\n---\n".join(docs) + "\n"


def fake_node(
    name: str,
    *,
    allocatable: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
) -> Obj:
    """A Node for KWOK to manage. Capacity equals allocatable; KWOK's node-initialize stage
    keeps whatever the creator set, and a missing `pods` entry would make nothing fit."""
    resources = {k: str(v) for k, v in allocatable.items()}
    resources.setdefault("pods", "110")
    spec: Obj = {"providerID": f"kwok://{name}"}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {MANAGED_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def wait_nodes_ready(kube: Kube, names: Iterable[str], timeout: float = 60.0) -> list[Obj]:
    """Wait until each node is Ready=True and its not-ready taint is gone."""
    return [
        wait_for(
            kube, "v1", "Node", n, node_ready, what="Ready without not-ready taint", timeout=timeout
        )
        for n in names
    ]
