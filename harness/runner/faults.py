"""Fault steps on a real cluster: what a failing node or kubelet does, done to the objects the
way the node, the kubelet or kube-controller-manager would (docs/scenario-extensions.md,
"Faults under running workloads"); never an edit of Kueue's objects.

- `node-not-ready`: KWOK stops managing the node (its annotation is removed, so no heartbeat
  and no pod changes), then the Ready condition becomes Unknown dated `NodeFailureDelay`
  (30 s) back, as kube-controller-manager's node lifecycle controller leaves a node whose
  kubelet stopped. That controller then adds the `node.kubernetes.io/unreachable` taints;
  the taint eviction controller would evict the pods only after the 300 s the
  DefaultTolerationSeconds admission plugin gives them, far beyond a step.
- `node-ready`: KWOK manages the node again; its node-initialize stage sets Ready True and the
  node lifecycle controller lifts the unreachable taints (awaited).
- `taint-node` / `untaint-node`: the taint list is updated (optimistic concurrency: the node
  lifecycle controller writes taints too). A NoExecute taint's evictions, done by the taint
  eviction controller, are awaited.
- `terminate-pods`: a finalizer of ours, then a delete: the pods keep phase Running and their
  node, with a deletionTimestamp (a pod stuck Terminating).
- `fail-pods`: phase Failed with a terminated container, as a kubelet reports an exit code 1
  (`complete`, the same with phase Succeeded and exit code 0, ends a stream's jobs).
- `delete-node` (the pods part): the pods bound to the node are deleted, as pod GC does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta

import tenacity

from harness.kube import Conflict, Kube, Obj, condition, node_ready, poll_until, wait_for
from harness.providers.kwok import MANAGED_ANNOTATION
from harness.runner.binding import live
from harness.runner.objects import JOB_INDEX_LABEL
from harness.runner.waits import Timeouts, server_time
from harness.scenario.model import Taint

HOLD_FINALIZER = "kueue-tas-harness/hold"
"""Keeps a `terminate-pods` pod Terminating until the scenario's cleanup drops it."""
NODE_FAILURE_DELAY = timedelta(seconds=30)
"""Kueue's NodeFailureDelay (pkg/controller/tas/constants.go)."""
UNREACHABLE = "node.kubernetes.io/unreachable"


def _stamp(kube: Kube, namespace: str, back: timedelta) -> str:
    return (server_time(kube, namespace) - back).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_not_ready(kube: Kube, node: str, namespace: str, t: Timeouts) -> None:
    """The kubelet stopped: see the module docstring."""
    kube.patch("v1", "Node", node, {"metadata": {"annotations": {MANAGED_ANNOTATION: None}}})
    since = _stamp(kube, namespace, NODE_FAILURE_DELAY)
    ready = {
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": since,
        "lastTransitionTime": since,
    }
    kube.patch(
        "v1",
        "Node",
        node,
        {"status": {"conditions": [ready]}},
        subresource="status",
        patch_type="strategic",
    )
    wait_for(kube, "v1", "Node", node, _unknown, what="Ready Unknown", timeout=t.nodes)


def _unknown(obj: Obj | None) -> tuple[bool, str]:
    cond = condition(obj, "Ready") if obj else None
    status = (cond or {}).get("status")
    return status == "Unknown", f"Ready {status}" if cond else "no Ready condition"


def node_ready_again(kube: Kube, node: str, t: Timeouts) -> None:
    """The kubelet is back: KWOK reports Ready, the unreachable taints are lifted."""
    kube.patch("v1", "Node", node, {"metadata": {"annotations": {MANAGED_ANNOTATION: "fake"}}})
    wait_for(kube, "v1", "Node", node, node_ready, what="Ready again", timeout=t.nodes)


@tenacity.retry(
    retry=tenacity.retry_if_exception_type(Conflict),
    stop=tenacity.stop_after_attempt(10),
    wait=tenacity.wait_exponential(multiplier=0.1, max=1),
    reraise=True,
)
def retaint(kube: Kube, node: str, taint: Taint, add: bool) -> None:
    """Add the taint, or remove the one with its key and effect (a conflict with the node
    lifecycle controller's own taint writes is retried)."""
    obj = kube.get("v1", "Node", node)
    taints = [
        x
        for x in (obj.get("spec") or {}).get("taints") or []
        if (x.get("key"), x.get("effect")) != (taint.key, taint.effect)
    ]
    if add:
        entry = {"key": taint.key, "effect": taint.effect}
        if taint.value:
            entry["value"] = taint.value
        taints.append(entry)
    version = obj["metadata"]["resourceVersion"]
    kube.patch(
        "v1",
        "Node",
        node,
        {"metadata": {"resourceVersion": version}, "spec": {"taints": taints or None}},
    )


def tolerates(pod: Obj, taint: Taint) -> bool:
    """Kubernetes' toleration match (key, operator Equal/Exists, value, effect); a
    toleration with tolerationSeconds tolerates the taint for now."""
    for tol in (pod.get("spec") or {}).get("tolerations") or []:
        if tol.get("effect") and tol["effect"] != taint.effect:
            continue
        if tol.get("key") and tol["key"] != taint.key:
            continue
        if not tol.get("key") and tol.get("operator") != "Exists":
            continue
        if tol.get("operator") == "Exists" or tol.get("value", "") == (taint.value or ""):
            return True
    return False


def on_node(pods: Iterable[Obj], node: str) -> list[Obj]:
    return [p for p in pods if (p.get("spec") or {}).get("nodeName") == node]


def wait_evicted(
    kube: Kube, namespace: str, node: str, taint: Taint, run_label: str, t: Timeouts
) -> None:
    """Until the taint eviction controller has deleted every pod on the node that does not
    tolerate the NoExecute taint (they may stay Terminating on a finalizer)."""

    def probe() -> tuple[bool, str]:
        pods = on_node(kube.list("v1", "Pod", namespace, run_label), node)
        left = [p["metadata"]["name"] for p in pods if live(p) and not tolerates(p, taint)]
        return not left, f"still running there: {', '.join(left) or 'none'}"

    poll_until(
        probe,
        what=f"the pods on {node} that do not tolerate {taint.key}:{taint.effect} to be evicted",
        timeout=t.pods,
        interval=t.interval,
    )


def choose(pods_by_pod_set: Sequence[list[Obj]], node: str | None, count: int | None) -> list[Obj]:
    """The live pods a `terminate-pods`/`fail-pods` step acts on: bound to `node` (to any
    node without it), in pod-set order and then by completion index, at most `count`."""
    chosen: list[Obj] = []
    for pods in pods_by_pod_set:
        bound = [p for p in pods if live(p) and (p.get("spec") or {}).get("nodeName")]
        if node is not None:
            bound = on_node(bound, node)
        bound.sort(key=_index)
        chosen += bound
    return chosen if count is None else chosen[:count]


def _index(pod: Obj) -> tuple[int, str]:
    labels = pod["metadata"].get("labels") or {}
    raw = labels.get(JOB_INDEX_LABEL, "")
    return (int(raw) if raw.isdigit() else 0, pod["metadata"]["name"])


def terminate(kube: Kube, namespace: str, pods: Sequence[Obj], t: Timeouts) -> None:
    """Each pod gets our finalizer and is deleted: Terminating, still Running and bound."""
    for pod in pods:
        name = pod["metadata"]["name"]
        kube.patch(
            "v1",
            "Pod",
            name,
            {"metadata": {"finalizers": [HOLD_FINALIZER]}},
            namespace=namespace,
            patch_type="strategic",
        )
        kube.delete("v1", "Pod", name, namespace)
    _await_each(kube, namespace, pods, _terminating, "Terminating", t)


def fail(kube: Kube, namespace: str, pods: Sequence[Obj], t: Timeouts) -> None:
    """Each pod ends in phase Failed, its container terminated with exit code 1."""
    _exit(kube, namespace, pods, "Failed", 1, "Error")
    _await_each(kube, namespace, pods, _ended("Failed"), "phase Failed", t)


def complete(kube: Kube, namespace: str, pods: Sequence[Obj], t: Timeouts) -> None:
    """Each pod ends in phase Succeeded, its container terminated with exit code 0: how a
    stream's job finishes its `runFor` on KWOK nodes (harness.runner.streaming)."""
    _exit(kube, namespace, pods, "Succeeded", 0, "Completed")
    _await_each(kube, namespace, pods, _ended("Succeeded"), "phase Succeeded", t)


def _exit(kube: Kube, namespace: str, pods: Sequence[Obj], phase: str, code: int, why: str) -> None:
    """What a kubelet reports when a pod's containers exit: the phase, Ready False, each
    container terminated with the exit code (KWOK's stages leave a pod in a final phase
    alone: pod-ready matches phase Pending only)."""
    for pod in pods:
        spec = pod.get("spec") or {}
        started = ((pod.get("status") or {}).get("startTime")) or None
        status = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "False", "reason": f"Pod{phase}"}],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {"exitCode": code, "reason": why, "startedAt": started}
                    },
                }
                for c in spec.get("containers") or []
            ],
        }
        kube.patch(
            "v1",
            "Pod",
            pod["metadata"]["name"],
            {"status": status},
            namespace=namespace,
            subresource="status",
            patch_type="strategic",
        )


def delete_bound(kube: Kube, namespace: str, node: str, run_label: str, t: Timeouts) -> None:
    """Delete every pod of the run bound to the (deleted) node at once, as pod GC does."""
    doomed = on_node(kube.list("v1", "Pod", namespace, run_label), node)
    for pod in doomed:
        kube.delete("v1", "Pod", pod["metadata"]["name"], namespace, grace_seconds=0)
    _await_each(kube, namespace, doomed, _terminating, "deleted", t)


def _terminating(pod: Obj | None) -> bool:
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def _ended(phase: str) -> Callable[[Obj | None], bool]:
    def check(pod: Obj | None) -> bool:
        return pod is None or (pod.get("status") or {}).get("phase") == phase

    return check


def _await_each(
    kube: Kube,
    namespace: str,
    pods: Sequence[Obj],
    check: Callable[[Obj | None], bool],
    wanted: str,
    t: Timeouts,
) -> None:
    names = [p["metadata"]["name"] for p in pods]

    def probe() -> tuple[bool, str]:
        left = [n for n in names if not check(kube.get_or_none("v1", "Pod", n, namespace))]
        return not left, f"not yet {wanted}: {', '.join(left) or 'none'}"

    poll_until(
        probe, what=f"pods {', '.join(names)} to be {wanted}", timeout=t.pods, interval=t.interval
    )
