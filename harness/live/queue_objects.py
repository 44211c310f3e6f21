"""A cluster's LocalQueues, Namespaces and ClusterQueue namespaceSelector/admissionScope as
contract v2 writes them (docs/scenario-format-v2.md, "LocalQueues, namespaces and admission
fair sharing").

`localQueues:` and `namespaces:` are written only where they change what Kueue decides: a
ClusterQueue with a namespaceSelector other than `{}` or an admissionScope, or a LocalQueue
with a fairSharing weight or a stopPolicy (Hold, HoldAndDrain). Otherwise the snapshot keeps
the plain form (a workload's `queue` names its ClusterQueue; the LocalQueues stay under
x-snapshot for `simulate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.k8s.selector import NAMESPACE_NAME_LABEL
from harness.kube import Obj
from harness.live.gaps import Gaps
from harness.scenario.load_local_queues import RESERVED_NAMESPACES

OWN_NAMESPACE = "default"
"""The cluster namespace written as the scenario's own (no `namespace:` key)."""
NO_NAMESPACE = {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "DoesNotExist"}]}
"""Kueue's reading of a missing namespaceSelector (LabelSelectorAsSelector(nil): nothing), in
the contract's words: every Namespace carries its name label."""


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def cluster_queue_keys(spec: Mapping[str, Any]) -> Obj:
    """namespaceSelector (omitted when `{}`, the contract's default) and admissionScope."""
    out: Obj = {}
    selector = spec.get("namespaceSelector")
    if selector is None:
        out["namespaceSelector"] = NO_NAMESPACE
    elif selector:
        out["namespaceSelector"] = dict(selector)
    if spec.get("admissionScope"):
        out["admissionScope"] = dict(spec["admissionScope"])
    return out


def needed(queues: Iterable[Obj], local_queues: Iterable[Obj]) -> bool:
    """Whether the LocalQueues change Kueue's decisions (see the module docstring)."""
    return any("namespaceSelector" in q or "admissionScope" in q for q in queues) or any(
        (lq.get("spec") or {}).get("fairSharing")
        or (lq.get("spec") or {}).get("stopPolicy") not in (None, "None")
        for lq in local_queues
    )


def queue_objects(
    local_queues: Iterable[Obj],
    namespaces: Iterable[Obj] | None,
    cluster_queues: set[str],
    gaps: Gaps,
) -> tuple[list[Obj], list[Obj], dict[tuple[str, str], tuple[str, str]]]:
    """(`namespaces:`, `localQueues:`, (namespace, LocalQueue) -> (scenario namespace,
    name)). LocalQueues of `default` are the scenario's own namespace's; those of a
    namespace every cluster has otherwise, or of a ClusterQueue not in the snapshot, are
    left out (said in gaps). `namespaces` None: not read, so their labels are unknown."""
    labels = {
        str(ns["metadata"]["name"]): dict(ns["metadata"].get("labels") or {})
        for ns in namespaces or []
    }
    used: dict[str, dict[str, str]] = {}
    out: list[Obj] = []
    where: dict[tuple[str, str], tuple[str, str]] = {}
    for lq in sorted(
        local_queues, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])
    ):
        ns, name = str(lq["metadata"].get("namespace", "")), str(lq["metadata"]["name"])
        spec = lq.get("spec") or {}
        cq = str(spec.get("clusterQueue", ""))
        if cq not in cluster_queues or (ns in RESERVED_NAMESPACES and ns != OWN_NAMESPACE):
            gaps.add(f"LocalQueue {ns}/{name}: left out (ClusterQueue {cq} or namespace {ns})")
            continue
        entry: Obj = {"name": name, "clusterQueue": cq}
        if ns != OWN_NAMESPACE:
            entry["namespace"] = ns
            used[ns] = {k: v for k, v in labels.get(ns, {}).items() if k != NAMESPACE_NAME_LABEL}
        weight = (spec.get("fairSharing") or {}).get("weight")
        if weight is not None:
            entry["fairSharing"] = {"weight": str(weight)}
        if spec.get("stopPolicy") not in (None, "None"):
            entry["stopPolicy"] = str(spec["stopPolicy"])
        out.append(entry)
        where[(ns, name)] = ("" if ns == OWN_NAMESPACE else ns, name)
    if namespaces is None and used:
        gaps.add("Namespaces: not read, their labels are unknown (written without labels)")
    own = {k for k in labels.get(OWN_NAMESPACE, {}) if k != NAMESPACE_NAME_LABEL}
    if own and any(key[0] == OWN_NAMESPACE for key in where):
        gaps.add(
            f"Namespace {OWN_NAMESPACE}: its labels {sorted(own)} (the scenario's own has none)"
        )
    listed = [{"name": n, **({"labels": v} if v else {})} for n, v in sorted(used.items())]
    return listed, out, where


def requeue_entries(
    entries: Iterable[Obj],
    names: Mapping[str, str],
    workloads: Iterable[Obj],
    where: Mapping[tuple[str, str], tuple[str, str]],
) -> None:
    """Each written workload's `queue` becomes its LocalQueue, with its `namespace`."""
    queue_of = {
        f"{w['metadata'].get('namespace', '')}/{w['metadata']['name']}": (
            str(w["metadata"].get("namespace", "")),
            str((w.get("spec") or {}).get("queueName", "")),
        )
        for w in workloads
    }
    for entry in entries:
        found = where.get(queue_of.get(names.get(entry["name"], ""), ("", "")))
        if found is None:
            continue
        namespace, queue = found
        entry["queue"] = queue
        if namespace:
            entry["namespace"] = namespace
