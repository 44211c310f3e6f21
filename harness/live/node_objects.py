"""A cluster's Nodes and bound pods -> the scenario's `nodes` and `usage`.

Nodes: those in at least one ResourceFlavor (its nodeLabels); labels kept are the ones
Topologies and ResourceFlavors use, plus kubernetes.io/hostname; allocatable, taints, Ready
and unschedulable as the API server reports them.

Usage: what Kueue's TAS counts as non-TAS usage (pkg/controller/tas/non_tas_usage_controller
belongsToNonTASCache): pods bound to a node, not Succeeded or Failed, and not TAS pods (no
topology annotation: tas.IsTAS), with requests as Kubernetes computes them. Pods of one
owner on one node with the same requests become one entry with a count, named
NAMESPACE.KIND-OWNER.NODE so an explanation can say who holds a node.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from harness.k8s.quantity import format_quantity
from harness.kube import Obj
from harness.kueue import keys as kueue_keys
from harness.live import naming
from harness.live.gaps import Gaps
from harness.live.manifests import UserManifestError, pod_requests
from harness.live.world_objects import taint
from harness.scenario.keypath import KeyPath
from harness.scenario.model import HOSTNAME

TAS_ANNOTATIONS = (
    kueue_keys.REQUIRED,
    kueue_keys.PREFERRED,
    kueue_keys.UNCONSTRAINED,
    kueue_keys.SLICE_LEVEL,
    kueue_keys.PREFIX + "podset-slice-required-topology-constraints",
)
"""Kueue's tas.IsTAS: a pod carrying any of these is placed by TAS, not usage."""
REQUEST_FIELDS = ("containers", "initContainers", "overhead", "resources")
"""What a pod's requests are computed from (manifests.pod_requests)."""
MAX_NODE_NAME = 63  # the contract's node names are hostname label values


def kept_labels(topologies: Iterable[Obj], flavors: Iterable[Obj]) -> set[str]:
    keys = {HOSTNAME}
    for t in topologies:
        keys.update(t["levels"])
    for f in flavors:
        keys.update((f.get("nodeLabels") or {}).keys())
    return keys


def _in_a_flavor(labels: Mapping[str, str], flavors: Sequence[Obj]) -> bool:
    return any(
        all(labels.get(k) == v for k, v in (f.get("nodeLabels") or {}).items()) for f in flavors
    )


def nodes(
    items: Iterable[Obj], keep: set[str], flavors: Sequence[Obj], gaps: Gaps
) -> tuple[list[Obj], dict[str, str]]:
    """The nodes of some flavor, and hostname label value -> node name (TAS assignments name
    hostname values)."""
    out, hostnames, outside = [], {}, 0
    for node in sorted(items, key=lambda n: str(n["metadata"]["name"])):
        meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
        name, labels = str(meta["name"]), dict(meta.get("labels") or {})
        if not _in_a_flavor(labels, flavors):
            outside += 1
            continue
        if len(name) > MAX_NODE_NAME:
            gaps.add(f"Node {name}: left out, its name is over {MAX_NODE_NAME} characters")
            continue
        if labels.get(HOSTNAME, name) != name:
            gaps.add(f"Node {name}: {HOSTNAME} is {labels[HOSTNAME]!r}, written as the node name")
        hostnames[labels.get(HOSTNAME, name)] = name
        entry: Obj = {
            "name": name,
            "labels": {k: v for k, v in labels.items() if k in keep and k != HOSTNAME},
            "allocatable": dict(status.get("allocatable") or {}),
        }
        if spec.get("taints"):
            entry["taints"] = [taint(t) for t in spec["taints"]]
        if not _ready(status):
            entry["ready"] = False
        if spec.get("unschedulable"):
            entry["unschedulable"] = True
        out.append(entry)
    if outside:
        gaps.add(f"{outside} node(s) in no ResourceFlavor left out (Kueue places nothing there)")
    return out, hostnames


def _ready(status: Mapping[str, Any]) -> bool:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def is_tas_pod(pod: Obj) -> bool:
    annotations = pod["metadata"].get("annotations") or {}
    return any(key in annotations for key in TAS_ANNOTATIONS)


def usage(pods: Iterable[Obj], node_names: set[str], gaps: Gaps) -> list[Obj]:
    """Non-TAS pods on the kept nodes, grouped per node, owner and requests."""
    groups: dict[tuple[str, str, tuple[tuple[str, Fraction], ...]], int] = {}
    known: dict[str, tuple[tuple[str, Fraction], ...]] = {}
    for pod in pods:
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        node = spec.get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if node not in node_names or phase in ("Succeeded", "Failed") or is_tas_pod(pod):
            continue
        # Pods of one owner share their spec: compute each distinct set of requests once.
        shape = json.dumps([spec.get(k) for k in REQUEST_FIELDS], sort_keys=True, default=str)
        if shape not in known:
            where = f"Pod {meta.get('namespace')}/{meta.get('name')}"
            try:
                requests = pod_requests(KeyPath(where, "spec", spec, UserManifestError))
            except UserManifestError as err:
                gaps.add(f"{err}: its usage is left out")
                continue
            known[shape] = tuple(sorted(requests.items()))
        key = (str(node), _owner(meta), known[shape])
        groups[key] = groups.get(key, 0) + 1
    out: list[Obj] = []
    names: set[str] = set()
    for (node, owner, shared), count in sorted(groups.items()):
        name = naming.unique_subdomain(f"{owner}.{node}", names)
        entry: Obj = {
            "name": name,
            "node": node,
            "requests": {r: format_quantity(q) for r, q in shared},
        }
        if count > 1:
            entry["count"] = count
        out.append(entry)
    return out


def _owner(meta: Mapping[str, Any]) -> str:
    """NAMESPACE.KIND-NAME of the pod's controller (the pod itself when it has none)."""
    refs = meta.get("ownerReferences") or []
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    kind, name = (ref["kind"], ref["name"]) if ref else ("pod", meta.get("name", ""))
    return f"{meta.get('namespace', '')}.{str(kind).lower()}-{name}"
