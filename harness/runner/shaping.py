"""Shape a cluster for one scenario, and clear away everything the run created before.

Every object carries the run label, so clearing is one label query per kind. Names are
reused across scenarios (nodes, flavors, topologies), so clearing waits until they are gone.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence

import tenacity

from harness.kube import (
    KUEUE_API,
    RUN_LABEL,
    Conflict,
    Kube,
    KubeError,
    NotFound,
    has_condition,
    in_parallel,
    node_ready,
    wait_for,
    wait_for_all,
)
from harness.kube import condition as get_condition
from harness.kube.errors import WaitTimeout
from harness.runner import objects
from harness.runner.objects import Names, Obj
from harness.runner.waits import Timeouts
from harness.scenario import Node, Scenario, Usage

NAMESPACED = (
    ("batch/v1", "Job"),
    (objects.JOBSET_API, "JobSet"),  # not served on clusters without the JobSet CRD
    (KUEUE_API, "Workload"),
    ("v1", "Pod"),
    (KUEUE_API, "LocalQueue"),
)


_retry = tenacity.retry(
    retry=tenacity.retry_if_exception_type(KubeError),
    stop=tenacity.stop_after_delay(20),
    wait=tenacity.wait_exponential(multiplier=0.2, max=2),
    reraise=True,
)


@_retry
def clear(kube: Kube, run_id: str, t: Timeouts, reuse: Sequence[Obj] = ()) -> None:
    """Delete everything labelled with the run id and wait until it is gone. Retried: a
    fresh API server answers 429 while a CRD's storage initialises.

    `reuse` lists the Topology and ResourceFlavor the next scenario needs: one that exists
    with exactly that spec is kept, which saves waiting for Kueue's finalizer chain
    (Workload -> ClusterQueue -> ResourceFlavor -> Topology). ClusterQueues get a new name
    per scenario, so their deletion is not awaited."""
    sel = f"{RUN_LABEL}={run_id}"
    namespaces = [n["metadata"]["name"] for n in kube.list("v1", "Namespace", labels=sel)]
    for ns in namespaces:
        for api, kind in NAMESPACED:
            with contextlib.suppress(NotFound):
                kube.delete_all(api, kind, ns, sel)
        _force_pods(kube, ns, sel)
    kube.delete_all(KUEUE_API, "ClusterQueue", labels=sel)
    kube.delete_all("v1", "Node", labels=sel)
    awaited = _replace_kueue_objects(kube, sel, reuse)
    for ns in namespaces:
        kube.delete("v1", "Namespace", ns)  # not awaited: nothing reuses a namespace name
    deadline = time.monotonic() + t.cleanup
    while True:
        left = _leftovers(kube, namespaces, sel, awaited)
        if not left:
            return
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"waited {t.cleanup:.0f}s for run {run_id}'s objects to be deleted; "
                f"still there: {', '.join(left[:12])}"
            )
        for ns in namespaces:
            _force_pods(kube, ns, sel)
        time.sleep(0.2)


def _replace_kueue_objects(kube: Kube, sel: str, reuse: Sequence[Obj]) -> list[tuple[str, str]]:
    """Delete the run's Topologies and ResourceFlavors except identical ones in `reuse`
    (a flavor only together with its topology); returns the (kind, name) deleted."""
    wanted = {(o["kind"], o["metadata"]["name"]): o.get("spec") for o in reuse}
    deleted: list[tuple[str, str]] = []
    kept: set[tuple[str, str]] = set()
    for kind in ("Topology", "ResourceFlavor"):
        for obj in kube.list(KUEUE_API, kind, labels=sel):
            key = (kind, obj["metadata"]["name"])
            same = key in wanted and obj.get("spec") == wanted[key]
            if kind == "ResourceFlavor":
                topology = (obj.get("spec") or {}).get("topologyName")
                same = same and ("Topology", topology) in kept
            if same and not obj["metadata"].get("deletionTimestamp"):
                kept.add(key)
                continue
            kube.delete(KUEUE_API, kind, key[1])
            deleted.append(key)
    return deleted


def _force_pods(kube: Kube, ns: str, sel: str) -> None:
    """Pods go at once (grace 0); a Job's tracking finalizer is dropped once they terminate,
    because a recreated node of the same name must not inherit their usage."""
    kube.delete_all("v1", "Pod", ns, sel, grace_seconds=0)
    stuck = [
        p["metadata"]["name"]
        for p in kube.list("v1", "Pod", ns, sel)
        if p["metadata"].get("deletionTimestamp") and p["metadata"].get("finalizers")
    ]

    def unblock(name: str) -> None:
        with contextlib.suppress(NotFound):
            kube.patch("v1", "Pod", name, {"metadata": {"finalizers": None}}, namespace=ns)

    in_parallel(unblock, stuck)


def _leftovers(
    kube: Kube, namespaces: Iterable[str], sel: str, awaited: Iterable[tuple[str, str]]
) -> list[str]:
    left = []
    for ns in namespaces:
        for api, kind in NAMESPACED:
            try:
                items = kube.list(api, kind, ns, sel)
            except NotFound:
                continue
            left += [f"{kind} {ns}/{o['metadata']['name']}" for o in items]
    left += [f"Node {o['metadata']['name']}" for o in kube.list("v1", "Node", labels=sel)]
    for kind, name in awaited:
        if kube.get_or_none(KUEUE_API, kind, name) is not None:
            left.append(f"{kind} {name}")
    return left


def create_nodes(kube: Kube, nodes: Iterable[Node], names: Names, t: Timeouts) -> None:
    """Create the nodes; ready ones must turn Ready under KWOK, the others must not."""
    nodes = list(nodes)
    kube.create_all(objects.node(n, names) for n in nodes)
    wait_for_all(
        kube,
        "v1",
        "Node",
        [n.name for n in nodes if n.ready],
        node_ready,
        labels=f"{RUN_LABEL}={names.run_id}",
        what="Ready without the not-ready taint",
        timeout=t.nodes,
        interval=t.interval,
    )
    for n in nodes:
        if not n.ready:
            check_not_ready(kube, n.name)


def check_not_ready(kube: Kube, name: str) -> None:
    """A `ready: false` node must not show Ready=True (Kueue's TAS cache skips it then)."""
    cond = get_condition(kube.get("v1", "Node", name), "Ready")
    if cond is not None and cond.get("status") == "True":
        raise KubeError(f"Node {name} is Ready=True although the scenario says ready: false")


def create_usage(
    kube: Kube, usage: Usage, index: int, names: Names, ready: set[str], t: Timeouts
) -> None:
    """Create a usage entry's pods and wait until KWOK reports them Running (on ready nodes)."""
    pods = objects.usage_pods(usage, index, names)
    kube.create_all(pods)
    if usage.node not in ready:
        return
    wait_for_all(
        kube,
        "v1",
        "Pod",
        [pod["metadata"]["name"] for pod in pods],
        _running,
        labels=f"{objects.USAGE_LABEL}={objects.usage_key(usage, index)}",
        namespace=names.namespace,
        what="Running",
        timeout=t.pods,
        interval=t.interval,
    )


def _running(obj: Obj | None) -> tuple[bool, str]:
    phase = ((obj or {}).get("status") or {}).get("phase")
    return phase == "Running", f"phase {phase}"


def reusable(scenario: Scenario, names: Names) -> list[Obj]:
    """The cluster-scoped objects a later scenario may share: Topology and ResourceFlavor."""
    return [objects.topology(scenario, names), objects.resource_flavor(scenario, names)]


def shape(kube: Kube, scenario: Scenario, names: Names, t: Timeouts) -> None:
    """Namespace, nodes, usage, then Topology, ResourceFlavor and queues, all Active."""
    kube.create(objects.namespace(names))
    create_nodes(kube, scenario.nodes, names, t)
    ready = {n.name for n in scenario.nodes if n.ready}
    for index, usage in enumerate(scenario.usage):
        create_usage(kube, usage, index, names, ready, t)
    for kept in reusable(scenario, names):  # left in place by clear() when identical
        with contextlib.suppress(Conflict):
            kube.create(kept)
    kube.create(objects.cluster_queue(scenario, names))
    kube.create(objects.local_queue(names))
    active = has_condition("Active")
    wait_for(
        kube,
        KUEUE_API,
        "ClusterQueue",
        names.cluster_queue,
        active,
        what="Active",
        timeout=t.settle,
    )
    wait_for(
        kube,
        KUEUE_API,
        "LocalQueue",
        names.local_queue,
        active,
        namespace=names.namespace,
        what="Active",
        timeout=t.settle,
    )
