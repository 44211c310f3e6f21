"""Reads the runner needs: Kueue Workloads and Events, as plain dicts."""

from __future__ import annotations

from collections.abc import Mapping

from harness.kube.client import Kube, Obj

KUEUE_API = "kueue.x-k8s.io/v1beta2"


def workloads(
    kube: Kube, namespace: str, labels: Mapping[str, str] | str | None = None
) -> list[Obj]:
    """Workloads in a namespace, read at Kueue's storage version v1beta2."""
    return kube.list(KUEUE_API, "Workload", namespace, labels)


def events(
    kube: Kube, namespace: str, *, kind: str | None = None, name: str | None = None
) -> list[Obj]:
    """Events in a namespace, optionally about one object, oldest first."""
    fields = []
    if kind:
        fields.append(f"involvedObject.kind={kind}")
    if name:
        fields.append(f"involvedObject.name={name}")
    path = kube.path("v1", "Event", namespace=namespace)
    query = {"fieldSelector": ",".join(fields)} if fields else None
    items: list[Obj] = kube.request("GET", path, query=query)["items"]
    return sorted(items, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
