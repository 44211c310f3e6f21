"""KWOK fake nodes: the stage set the kwok controller runs, and Node objects it manages.

KWOK has no built-in stages (kwokctl assembles them), so we take them from KWOK's module:
nodes initialise at once and keep a lease heartbeat; pods turn Running/Ready and are
removed on delete. `pod-complete` is left out on purpose so pods stay Running and their
placement and quota can be asserted while the Jobs live.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

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


NOT_READY_ANNOTATION = "kueue-tas-harness/pods-not-ready"
"""On a pod template of a `podsReady: false` workload: KWOK starts its pods Running but not
Ready (a readiness probe that never passes), instead of Running and Ready."""
POD_READY = "kustomize/stage/pod/fast/pod-ready.yaml"
NOT_READY_SELECTOR = {
    "key": f'.metadata.annotations["{NOT_READY_ANNOTATION}"]',
    "operator": "In",
    "values": ["true"],
}


def stages_yaml(kwok_dir: Path, stages: Sequence[str] = STAGES) -> str:
    """One multi-document YAML for `kwok --config`: our options, then the chosen Stages;
    KWOK's pod-ready stage leaves pods annotated NOT_READY_ANNOTATION to a copy of it that
    starts them Running with Ready False (`pod_not_ready`)."""
    docs = [f"# kueue-tas-harness: worker counts\n{OPTIONS}"]
    for rel in stages:
        text = (kwok_dir / rel).read_text().strip()
        if rel == POD_READY:
            ready, not_ready = pod_not_ready(yaml.safe_load(text))
            docs.append(f"# from sigs.k8s.io/kwok {rel}, without annotated pods\n{ready}")
            docs.append(f"# kueue-tas-harness: {rel} for annotated pods, not Ready\n{not_ready}")
            continue
        docs.append(f"# from sigs.k8s.io/kwok {rel}\n" + text)
    return "\n---\n".join(docs) + "\n"


def pod_not_ready(stage: Obj) -> tuple[str, str]:
    """(KWOK's pod-ready Stage without the annotated pods, its copy for them that writes
    the Ready and ContainersReady conditions False and each container not ready)."""
    ready = copy.deepcopy(stage)
    ready["spec"]["selector"]["matchExpressions"].append(
        {**NOT_READY_SELECTOR, "operator": "NotIn"}
    )
    not_ready = copy.deepcopy(stage)
    not_ready["metadata"]["name"] = "pod-running-not-ready"
    not_ready["spec"]["selector"]["matchExpressions"].append(dict(NOT_READY_SELECTOR))
    template = str(not_ready["spec"]["next"]["statusTemplate"])
    for kind in ("Ready", "ContainersReady"):
        said = f'status: "True"\n  type: {kind}\n'
        if said not in template:
            raise ValueError(f"KWOK's pod-ready template has no {kind} condition as expected")
        template = template.replace(said, f'status: "False"\n  type: {kind}\n')
    containers, _, rest = template.partition("initContainerStatuses:")
    template = containers.replace("ready: true", "ready: false") + "initContainerStatuses:" + rest
    not_ready["spec"]["next"]["statusTemplate"] = template
    return _dump(ready), _dump(not_ready)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the status templates) as `|` blocks, readable in the config."""


def _block(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_BlockDumper.add_representer(str, _block)


def _dump(stage: Obj) -> str:
    return yaml.dump(stage, Dumper=_BlockDumper, sort_keys=False)


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
