"""Helm values as data: Kueue's chart (from its Go module) and fake-gpu-operator's chart.

Kueue's manager configuration starts from the chart's own default (read from the chart's
values.yaml, so a new Kueue version brings its own defaults) and changes only what the
harness needs: batch/job as the one integration, TAS and the requested feature gates.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from harness.install.manifests import FRAMEWORKS
from harness.providers.kind.config import CONTROL_PLANE_LABEL
from harness.providers.kind.shape import POOL_LABEL, ClusterShape

Obj = dict[str, Any]
KUEUE_IMAGE = "registry.k8s.io/kueue/kueue"
KUEUE_RELEASE = "kueue"
KUEUE_NAMESPACE = "kueue-system"
JOBSET_IMAGE = "registry.k8s.io/jobset/jobset"
JOBSET_RELEASE = "jobset"
JOBSET_NAMESPACE = "jobset-system"
FAKE_GPU_CHART = "oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator"
FAKE_GPU_VERSION = "0.2.0"
FAKE_GPU_NAMESPACE = "gpu-operator"
CONTROL_PLANE_ONLY: Obj = {
    "nodeSelector": {CONTROL_PLANE_LABEL: ""},
    "tolerations": [
        {"key": CONTROL_PLANE_LABEL, "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    ],
}
"""Kueue's pod runs on the control plane: never on a fake (KWOK) node, and never taking
CPU or memory from a worker whose capacity a scenario counts. It tolerates the cordon that
keeps the control plane out of scenarios' topologies (KindCluster.park)."""


class ValuesError(HarnessError):
    """The chart's values.yaml does not look the way this harness expects."""


def chart_manager_config(chart_dir: Path) -> Obj:
    """The chart's default Kueue Configuration (managerConfig.controllerManagerConfigYaml)."""
    values_file = chart_dir / "values.yaml"
    try:
        values = yaml.safe_load(values_file.read_text())
        config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    except (OSError, yaml.YAMLError, KeyError, TypeError) as err:
        raise ValuesError(
            f"{values_file}: no managerConfig.controllerManagerConfigYaml: {err}"
        ) from None
    if not isinstance(config, dict) or config.get("kind") != "Configuration":
        raise ValuesError(f"{values_file}: controllerManagerConfigYaml is not a Configuration")
    return config


def kueue_values(
    chart_dir: Path,
    *,
    version: str,
    feature_gates: Mapping[str, bool] | None = None,
    frameworks: tuple[str, ...] = FRAMEWORKS,
) -> Obj:
    """Values for `helm install kueue <chart_dir>`: the released image, TAS on, gates set."""
    gates = {"TopologyAwareScheduling": True, **(feature_gates or {})}
    config = chart_manager_config(chart_dir)
    config["integrations"] = {**(config.get("integrations") or {}), "frameworks": list(frameworks)}
    # One replica: leader election stays as the chart sets it, but nothing waits on a standby.
    return {
        "controllerManager": {
            "replicas": 1,
            "featureGates": [{"name": k, "enabled": v} for k, v in gates.items()],
            "manager": {
                "image": {"repository": KUEUE_IMAGE, "tag": version, "pullPolicy": "IfNotPresent"}
            },
            **CONTROL_PLANE_ONLY,
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)},
    }


def jobset_values(*, version: str) -> Obj:
    """Values for `helm install jobset <chart_dir>` (JobSet's chart from its Go module): the
    released image instead of the chart's staging `main`, one replica on the control plane."""
    return {
        "image": {"repository": JOBSET_IMAGE, "tag": version, "pullPolicy": "IfNotPresent"},
        "controller": {"replicas": 1, **CONTROL_PLANE_ONLY},
    }


def fake_gpu_operator_values(shape: ClusterShape) -> Obj:
    """Values for fake-gpu-operator: one node pool per shape pool, GPU count per pool.

    Workers carry `run.ai/simulated-gpu-node-pool: <pool>` from the kind config, so the
    operator's status-updater finds them; its device plugin then advertises the GPUs through
    the kubelet. MIG faking and the KWOK device plugin are off: the harness gives KWOK nodes
    their GPUs itself.
    """
    pools = {
        p.name: {"gpuProduct": p.product, "gpuCount": p.gpus, "gpuMemory": p.memory_mib}
        for p in shape.pools.values()
        if any(w.pool.name == p.name for w in shape.workers)
    }
    return {
        "topology": {"nodePools": pools, "nodePoolLabelKey": POOL_LABEL},
        "migFaker": {"enabled": False},
        "kwokGpuDevicePlugin": {"enabled": False},
    }
