"""Queue positions of pending Workloads, read from Kueue's visibility API where it is served.

Kueue's pendingworkloads subresource (visibility.kueue.x-k8s.io/v1beta2,
pkg/visibility/storage/pending_workloads_cq.go) lists a ClusterQueue's pending Workloads in
Kueue's own queue order with their positions in the ClusterQueue and in their LocalQueue:
the one view of the queue the Workload objects do not give. Where the API is not served
(gate VisibilityOnDemand off, APIService unavailable, not allowed) the snapshot says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.kube import Kube, KubeError, NotFound

VISIBILITY_API = "/apis/visibility.kueue.x-k8s.io/v1beta2"
PAGE = 100_000  # MaxPendingWorkloadsLimit (pkg/constants/constants.go); the default is 1,000


@dataclass
class QueuePositions:
    """NAMESPACE/WORKLOAD -> its ClusterQueue and positions (0 is next), or `not_served`
    saying why there are none."""

    by_workload: dict[str, dict[str, object]] = field(default_factory=dict)
    not_served: str = ""


def read_positions(kube: Kube, cluster_queues: Iterable[str]) -> QueuePositions:
    """One GET per ClusterQueue (after one discovery GET that tells served from not)."""
    try:
        kube.request("GET", VISIBILITY_API)
    except KubeError as err:
        return QueuePositions(not_served=_why(err))
    out = QueuePositions()
    for cq in sorted(cluster_queues):
        try:
            items = _pending(kube, cq)
        except NotFound:
            continue  # a ClusterQueue Kueue has not (yet) loaded has no queue to show
        except KubeError as err:
            return QueuePositions(not_served=_why(err))
        for item in items:
            meta = item.get("metadata") or {}
            out.by_workload[f"{meta.get('namespace', '')}/{meta.get('name', '')}"] = {
                "clusterQueue": cq,
                "positionInClusterQueue": item.get("positionInClusterQueue"),
                "positionInLocalQueue": item.get("positionInLocalQueue"),
            }
    return out


def _pending(kube: Kube, cq: str) -> list[dict[str, Any]]:
    path = f"{VISIBILITY_API}/clusterqueues/{cq}/pendingworkloads"
    body = kube.request("GET", path, query={"limit": str(PAGE)}) or {}
    items: list[dict[str, Any]] = body.get("items") or []
    return items


def _why(err: KubeError) -> str:
    if isinstance(err, NotFound):
        return "not served (visibility.kueue.x-k8s.io/v1beta2 is not registered)"
    if err.status == 403:
        return "not served (not allowed to read visibility.kueue.x-k8s.io)"
    return f"not served ({err})"
