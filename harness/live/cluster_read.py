"""Everything a snapshot needs, read from a live cluster: only GETs and paged lists (no
write, no watch), the kinds read side by side so a large cluster answers in seconds.

Pods are listed with the API server's field selector for what Kueue's TAS counts as usage
(bound, not Succeeded or Failed: pkg/controller/tas/non_tas_usage_controller.go), so
finished pods never cross the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from harness.kube import KUEUE_API, Kube, KubeError, NotFound, Obj
from harness.live.queue_positions import QueuePositions, read_positions

BOUND_AND_RUNNING = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


@dataclass
class ClusterState:
    """The objects of one cluster, as plain dicts; `missing`: optional kinds the server
    does not serve or we may not list (e.g. no Cohort API), with why; `seconds`: how long
    each list took."""

    server: str
    context: str
    topologies: list[Obj] = field(default_factory=list)
    resource_flavors: list[Obj] = field(default_factory=list)
    cluster_queues: list[Obj] = field(default_factory=list)
    local_queues: list[Obj] = field(default_factory=list)
    priority_classes: list[Obj] = field(default_factory=list)
    cohorts: list[Obj] = field(default_factory=list)
    admission_checks: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    pod_priority_classes: list[Obj] = field(default_factory=list)
    kueue_config_maps: list[Obj] = field(default_factory=list)
    namespaces: list[Obj] | None = None  # None: not read (states built by hand, or not allowed)
    missing: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    queue_positions: QueuePositions | None = None  # None: not read (states built by hand)


LISTS: dict[str, tuple[str, str, str | None]] = {
    "topologies": (KUEUE_API, "Topology", None),
    "resource_flavors": (KUEUE_API, "ResourceFlavor", None),
    "cluster_queues": (KUEUE_API, "ClusterQueue", None),
    "local_queues": (KUEUE_API, "LocalQueue", None),
    "priority_classes": (KUEUE_API, "WorkloadPriorityClass", None),
    "cohorts": (KUEUE_API, "Cohort", None),
    "admission_checks": (KUEUE_API, "AdmissionCheck", None),
    "workloads": (KUEUE_API, "Workload", None),
    "nodes": ("v1", "Node", None),
    "pods": ("v1", "Pod", BOUND_AND_RUNNING),
    "pod_priority_classes": ("scheduling.k8s.io/v1", "PriorityClass", None),
    # Kueue's Configuration (harness/live/kueue_configuration.py), in whichever namespace.
    "kueue_config_maps": ("v1", "ConfigMap", "metadata.name=kueue-manager-config"),
    # Their labels, for a ClusterQueue's namespaceSelector (harness/live/queue_objects.py).
    "namespaces": ("v1", "Namespace", None),
}
"""ClusterState attribute -> (apiVersion, kind, field selector)."""
REQUIRED = ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload")
"""Kinds without which there is no Kueue to snapshot."""
READERS = 4  # pods and nodes dominate; a few parallel lists keep both cores busy


def read_cluster(kube: Kube) -> ClusterState:
    """Every kind in LISTS, across all namespaces."""
    state = ClusterState(server=kube.host, context=kube.access.context)
    kube.server_version()  # one clear error (unreachable, refused credentials) before the rest
    with ThreadPoolExecutor(READERS, thread_name_prefix="kth-snapshot") as pool:
        futures = {attr: pool.submit(_timed(kube, *spec)) for attr, spec in LISTS.items()}
        for attr, future in futures.items():
            kind = LISTS[attr][1]
            try:
                items, seconds = future.result()
            except KubeError as err:
                if err.status != 403 or kind in REQUIRED:
                    raise
                state.missing.append(f"{kind} (not allowed to list it)")
                continue
            if items is None:
                if kind in REQUIRED:
                    raise KubeError(
                        f"{kube.host}: {KUEUE_API} {kind} is not served: is Kueue v0.19 "
                        "installed on this cluster?"
                    )
                state.missing.append(f"{kind} (not served)")
                continue
            setattr(state, attr, items)
            state.seconds[kind] = seconds
    started = time.monotonic()
    names = [str(cq["metadata"]["name"]) for cq in state.cluster_queues]
    state.queue_positions = read_positions(kube, names)
    state.seconds["pendingworkloads"] = round(time.monotonic() - started, 3)
    return state


def _timed(
    kube: Kube, api_version: str, kind: str, fields: str | None
) -> Callable[[], tuple[list[Obj] | None, float]]:
    def read() -> tuple[list[Obj] | None, float]:
        started = time.monotonic()
        try:
            items = kube.list(api_version, kind, fields=fields)
        except NotFound:
            return None, 0.0
        return items, round(time.monotonic() - started, 3)

    return read
