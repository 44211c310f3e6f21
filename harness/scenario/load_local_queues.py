"""`namespaces:`, `localQueues:` and a ClusterQueue's `namespaceSelector`/`admissionScope`,
with the rules the API server and Kueue's CRDs apply (Kueue has no LocalQueue webhook:
apis/kueue/v1beta2/localqueue_types.go's patterns and required fields are all there is).

Without `localQueues:` each ClusterQueue has one LocalQueue of its own name in the
scenario's namespace, and a workload's `queue` names it, as before (contract v2).
"""

from __future__ import annotations

from collections.abc import Collection
from fractions import Fraction

from harness.k8s.quantity import QuantityError, parse_quantity
from harness.k8s.rules import is_dns_label, is_dns_subdomain
from harness.k8s.selector import LabelSelector, Requirement, requirement_problem
from harness.scenario.keypath import KeyPath, kind, yaml_text
from harness.scenario.model import (
    STOP_POLICIES,
    ClusterQueueStopChange,
    LocalQueue,
    Namespace,
    StopPolicyChange,
)

LQ_KEYS = ("name", "namespace", "clusterQueue", "fairSharing", "stopPolicy")
ADMISSION_MODES = ("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing")
"""AdmissionScope.admissionMode (apis/kueue/v1beta2/fairsharing_types.go)."""
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces every cluster has: the harness creates and deletes the listed ones, so it
will not list these (a scenario's own namespace is its default)."""


def namespaces(at: KeyPath) -> tuple[Namespace, ...]:
    out: list[Namespace] = []
    for item in at.items():
        fields = item.mapping(("name", "labels"), ("name",))
        name = fields["name"].string(is_dns_label, "namespace name (a DNS label)")
        if name in RESERVED_NAMESPACES:
            fields["name"].fail(
                f"{yaml_text(name)} exists in every cluster: list only namespaces of the scenario"
            )
        if any(ns.name == name for ns in out):
            fields["name"].fail(f"duplicate namespace name {yaml_text(name)}")
        labels = fields["labels"].labels() if "labels" in fields else {}
        out.append(Namespace(name, labels))
    return tuple(out)


def local_queues(
    at: KeyPath, cluster_queues: Collection[str], known_namespaces: Collection[str]
) -> tuple[LocalQueue, ...]:
    """The entries, each in the scenario's namespace or a listed one, each naming a
    ClusterQueue of the file."""
    out: list[LocalQueue] = []
    for item in at.items():
        fields = item.mapping(LQ_KEYS, ("name", "clusterQueue"))
        name = fields["name"].string(is_dns_subdomain, "LocalQueue name")
        namespace = ""
        if "namespace" in fields:
            namespace = fields["namespace"].string(is_dns_label, "namespace name")
            if namespace not in known_namespaces:
                fields["namespace"].fail(
                    f'namespaces "{namespace}" not found (list it in namespaces)'
                )
        cq = fields["clusterQueue"].string(is_dns_subdomain, "ClusterQueue name")
        if cq not in cluster_queues:
            # Kueue accepts it (its workloads wait); the harness does not model that state.
            fields["clusterQueue"].fail(
                f"no ClusterQueue named {yaml_text(cq)} in clusterQueues"
                " (a LocalQueue of a missing ClusterQueue is not supported)"
            )
        if any(lq.name == name and lq.namespace == namespace for lq in out):
            where = f"namespace {namespace}" if namespace else "the scenario's namespace"
            fields["name"].fail(f"duplicate LocalQueue {yaml_text(name)} in {where}")
        weight = _weight(fields["fairSharing"]) if "fairSharing" in fields else None
        stop = stop_policy(fields["stopPolicy"]) if "stopPolicy" in fields else "None"
        out.append(LocalQueue(name, cq, namespace, weight, stop))
    if not out:
        at.fail("must list at least one LocalQueue (or leave localQueues out)")
    return tuple(out)


def stop_policy(at: KeyPath) -> str:
    """`spec.stopPolicy`: the CRD's enum (apis/kueue/v1beta2/localqueue_types.go)."""
    value = at.string()
    if value not in STOP_POLICIES:
        at.fail(
            f"Unsupported value: {yaml_text(value)}: supported values: {', '.join(STOP_POLICIES)}"
        )
    return value


def stop_policy_change(
    at: KeyPath, queues: Collection[LocalQueue], cluster_queues: Collection[str] = ()
) -> StopPolicyChange | ClusterQueueStopChange:
    """A `set-stop-policy` step: a LocalQueue of the file (`namespace` absent: the
    scenario's own) and the stopPolicy it gets; or, with `clusterQueue`, a ClusterQueue."""
    if isinstance(at.value, dict) and "clusterQueue" in at.value:
        return _cluster_queue_stop(at, cluster_queues)
    fields = at.mapping(("localQueue", "namespace", "stopPolicy"), ("localQueue", "stopPolicy"))
    name = fields["localQueue"].string()
    namespace = fields["namespace"].string() if "namespace" in fields else ""
    if not any(lq.name == name and lq.namespace == namespace for lq in queues):
        where = f"namespace {namespace}" if namespace else "the scenario's namespace"
        fields["localQueue"].fail(f'localqueues "{name}" not found in {where}')
    return StopPolicyChange(name, namespace, stop_policy(fields["stopPolicy"]))


def _cluster_queue_stop(at: KeyPath, cluster_queues: Collection[str]) -> ClusterQueueStopChange:
    fields = at.mapping(("clusterQueue", "stopPolicy"), ("clusterQueue", "stopPolicy"))
    name = fields["clusterQueue"].string()
    if name not in cluster_queues:
        fields["clusterQueue"].fail(f'clusterqueues "{name}" not found')
    return ClusterQueueStopChange(name, stop_policy(fields["stopPolicy"]))


def _weight(at: KeyPath) -> Fraction | None:
    """`fairSharing.weight`: any quantity (Kueue has no LocalQueue webhook; a weight of 0 or
    less makes the queue's admission fair sharing usage infinite, CalculateUsage)."""
    fields = at.mapping(("weight",))
    if "weight" not in fields:
        return None
    value = fields["weight"].value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        fields["weight"].fail(f"must be a quantity such as 1 or '0.5', got {kind(value)}")
    try:
        return parse_quantity(value)
    except QuantityError as err:
        fields["weight"].fail(str(err))


def namespace_selector(at: KeyPath) -> LabelSelector:
    """A LabelSelector, validated as the ClusterQueue webhook does (ValidateLabelSelector).
    Kueue's null selector (no namespace) is written as `{matchExpressions: [{key:
    kubernetes.io/metadata.name, operator: DoesNotExist}]}`: every namespace has that label."""
    fields = at.mapping(("matchLabels", "matchExpressions"))
    match_labels = fields["matchLabels"].labels() if "matchLabels" in fields else {}
    expressions: list[Requirement] = []
    for item in fields["matchExpressions"].items() if "matchExpressions" in fields else []:
        f = item.mapping(("key", "operator", "values"), ("key", "operator"))
        values = tuple(v.string() for v in f["values"].items()) if "values" in f else ()
        req = Requirement(f["key"].string(), f["operator"].string(), values)
        problem = requirement_problem(req)
        if problem:
            item.fail(problem)
        expressions.append(req)
    return LabelSelector(match_labels, tuple(expressions))


def admission_mode(at: KeyPath) -> str:
    fields = at.mapping(("admissionMode",), ("admissionMode",))
    mode = fields["admissionMode"].string()
    if mode not in ADMISSION_MODES:
        fields["admissionMode"].fail(
            f"Unsupported value: {yaml_text(mode)}: supported values: {', '.join(ADMISSION_MODES)}"
        )
    return mode
