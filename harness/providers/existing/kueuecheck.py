"""Is Kueue installed on a cluster, does its webhook answer, and is TAS on? Asked from outside.

Used by the existing-cluster provider to refuse early, in one line, instead of failing every
scenario later. TAS cannot be read from Kueue's configuration from outside the cluster, so
it is probed by behaviour: with the TopologyAwareScheduling gate on, a ClusterQueue whose
flavor names a missing Topology goes inactive with reason TopologyNotFound
(pkg/cache/scheduler/clusterqueue.go inactiveReason); with the gate off Kueue ignores the
topology and the queue turns active. A dry-run Workload with a topologyRequest would not
tell: v0.19.2's Workload webhook accepts it either way.
"""

from __future__ import annotations

from harness.install.kueue import wait_webhook_mutates
from harness.kube import (
    KUEUE_API,
    RUN_LABEL,
    Kube,
    NotFound,
    Obj,
    WaitTimeout,
    condition,
    poll_until,
)
from harness.kube.errors import KubeError

CRD_API = "apiextensions.k8s.io/v1"
REQUIRED_CRDS = (
    "workloads.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "resourceflavors.kueue.x-k8s.io",
)
TOPOLOGY_CRD = "topologies.kueue.x-k8s.io"


def missing_crds(kube: Kube) -> list[str]:
    """Kueue CRDs (including Topology) the API server does not have."""
    missing = []
    for name in (*REQUIRED_CRDS, TOPOLOGY_CRD):
        try:
            kube.get(CRD_API, "CustomResourceDefinition", name)
        except NotFound:
            missing.append(name)
    return missing


def webhook_problem(kube: Kube, timeout: float = 15.0) -> str | None:
    """None when a dry-run queue-labelled Job comes back suspended, else what was seen."""
    try:
        wait_webhook_mutates(kube, timeout=timeout)
    except WaitTimeout as err:
        return str(err)
    return None


def _probe_objects(run_id: str) -> tuple[Obj, Obj]:
    name = f"kth-tas-probe-{run_id}"
    labels = {RUN_LABEL: run_id}
    flavor = {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "labels": labels},
        # Kueue's CEL rule wants nodeLabels with a topology; no node carries this one.
        "spec": {"topologyName": f"kth-absent-{run_id}", "nodeLabels": labels},
    }
    queue = {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "namespaceSelector": {"matchLabels": {RUN_LABEL: run_id}},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": name, "resources": [{"name": "cpu", "nominalQuota": 1}]}],
                }
            ],
        },
    }
    return flavor, queue


def tas_problem(kube: Kube, run_id: str, timeout: float = 30.0) -> str | None:
    """None when Kueue's TAS is on (see module docstring); the probe objects are removed."""
    flavor, queue = _probe_objects(run_id)
    name = str(queue["metadata"]["name"])
    seen: dict[str, str] = {}

    def probe() -> tuple[bool, str]:
        cq = kube.get(KUEUE_API, "ClusterQueue", name)
        active = condition(cq, "Active")
        if active is None:
            return False, "no Active condition yet"
        seen.update(status=str(active.get("status")), reason=str(active.get("reason")))
        # FlavorNotFound can show for a moment before Kueue's cache has the flavor.
        settled = seen["status"] == "True" or seen["reason"] == "TopologyNotFound"
        return settled, f"Active={seen['status']} ({seen['reason']})"

    try:
        kube.create(flavor)
        kube.create(queue)
        poll_until(probe, what=f"ClusterQueue {name} to report Active", timeout=timeout)
    except (WaitTimeout, KubeError) as err:
        return f"could not probe TAS: {err}"
    finally:
        kube.delete(KUEUE_API, "ClusterQueue", name)
        kube.delete(KUEUE_API, "ResourceFlavor", name)
    if seen.get("reason") == "TopologyNotFound":
        return None
    return (
        "Kueue's TopologyAwareScheduling looks off: a ClusterQueue whose flavor names a missing "
        f"Topology became Active={seen.get('status')} ({seen.get('reason')}) instead of "
        "inactive with TopologyNotFound; enable the feature gate TopologyAwareScheduling"
    )


def refusal(kube: Kube, run_id: str) -> str | None:
    """One line saying why this cluster cannot run TAS scenarios, or None if it can."""
    missing = missing_crds(kube)
    if set(missing) & set(REQUIRED_CRDS):
        return (
            f"Kueue is not installed on {kube.host}: CRDs missing: {', '.join(missing)}; "
            "install Kueue v0.19.2 (its Helm chart or release manifests) first"
        )
    if missing:
        return (
            f"Kueue on {kube.host} has no Topology CRD ({TOPOLOGY_CRD}): TAS is unavailable; "
            "install Kueue v0.19.2 with the TopologyAwareScheduling feature gate on"
        )
    hook = webhook_problem(kube)
    if hook is not None:
        return f"Kueue's webhook on {kube.host} does not answer: {hook}"
    return tas_problem(kube, run_id)
