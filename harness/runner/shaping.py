"""Shape a cluster for one scenario: namespace, nodes, usage, then Kueue's objects (every
Topology, ResourceFlavor, WorkloadPriorityClass, ClusterQueue and a LocalQueue for each).

Clearing away what the run created before is harness.providers.cleanup.clear_run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from harness import progress
from harness.kube import (
    KUEUE_API,
    RUN_LABEL,
    Conflict,
    Kube,
    KubeError,
    NotFound,
    WaitTimeout,
    absent,
    has_condition,
    node_ready,
    wait_for,
    wait_for_all,
)
from harness.kube import condition as get_condition
from harness.kube.wait import poll_until
from harness.kueue.queue_activity import inactive_reason
from harness.providers.cleanup import content
from harness.runner import check_controller, objects, world
from harness.runner.objects import Names, Obj
from harness.runner.waits import Timeouts
from harness.scenario.model import Node, Scenario, Usage

logger = progress.logger("runner")


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
    kube: Kube, usage: Iterable[tuple[int, Usage]], names: Names, ready: set[str], t: Timeouts
) -> None:
    """Create the pods of every (index, usage entry) at once and wait, with one list per
    round, until KWOK reports those on ready nodes Running: entry by entry, a 2,048-node
    scenario with 1,024 entries spent 78 s here."""
    entries = list(usage)
    pods = [pod for index, u in entries for pod in objects.usage_pods(u, index, names)]
    if pods:
        await_webhook_namespace(kube, pods[0], timeout=t.settle, interval=t.interval)
    kube.create_all(pods)
    wait_for_all(
        kube,
        "v1",
        "Pod",
        [p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] in ready],
        _running,
        labels=f"{names.run_selector},{objects.USAGE_LABEL}",
        namespace=names.namespace,
        what="Running",
        timeout=t.pods,
        interval=t.interval,
    )


def await_webhook_namespace(kube: Kube, pod: Obj, *, timeout: float, interval: float) -> None:
    """Kueue's pod webhook reads Namespaces from its informer cache, so a pod posted right
    after its namespace was created can be refused 404 'Namespace "..." not found' until
    the cache has it (once in four e2e runs). A dry run stores nothing and shows when the
    webhook sees the namespace; any other answer is left to the real POST."""

    def seen() -> tuple[bool, str]:
        try:
            kube.create(pod, dry_run=True)
        except NotFound as err:
            if "admission webhook" in str(err) and "Namespace" in str(err):
                return False, str(err)
        except KubeError:
            pass
        return True, "the webhook sees the namespace"

    poll_until(
        seen, what="Kueue's pod webhook to see the namespace", timeout=timeout, interval=interval
    )


def _running(obj: Obj | None) -> tuple[bool, str]:
    phase = ((obj or {}).get("status") or {}).get("phase")
    return phase == "Running", f"phase {phase}"


def reusable(scenario: Scenario, names: Names) -> list[Obj]:
    """The cluster-scoped objects a later scenario may share when identical: every Kueue
    object (ClusterQueues have fixed names, so one that differs must be gone before it is
    created)."""
    return world.cluster_objects(scenario, names)


def shape(kube: Kube, scenario: Scenario, names: Names, t: Timeouts) -> None:
    """Namespace, nodes, usage, then Kueue's objects, all Active."""
    kube.create(objects.namespace(names))
    for ns in scenario.namespaces:
        kube.create(objects.namespace(names, names.real(ns.name), ns.labels))
    create_nodes(kube, scenario.nodes, names, t)
    ready = {n.name for n in scenario.nodes if n.ready}
    create_usage(kube, enumerate(scenario.usage), names, ready, t)
    shape_world(kube, scenario, names, t)


def create_or_keep(kube: Kube, obj: Obj, names: Names) -> bool:
    """Create a cluster-scoped object; one of that name may stay only if this run made it
    (the previous scenario's, kept by clear_run) and it is identical. Anything else there
    is an error: on a cluster someone else runs, their object of the same name is never
    used nor changed. True when kept."""
    try:
        kube.create(obj)
        return False
    except Conflict:
        meta = obj["metadata"]
        there = kube.get(obj["apiVersion"], obj["kind"], meta["name"])
        labels = there["metadata"].get("labels") or {}
        if labels.get(RUN_LABEL) != names.run_id:
            raise KubeError(
                f"{obj['kind']} {meta['name']} exists and was not made by this run (no label "
                f"{names.run_selector}); the harness leaves it alone: rename it in the scenario"
            ) from None
        if content(there) != content(obj) or there["metadata"].get("deletionTimestamp"):
            raise KubeError(
                f"{obj['kind']} {meta['name']} exists and differs from the scenario's "
                f"(being deleted, or changed since): {content(there)}"
            ) from None
        return True


def shape_world(kube: Kube, scenario: Scenario, names: Names, t: Timeouts) -> None:
    """Every Topology, ResourceFlavor, WorkloadPriorityClass and ClusterQueue (kept when
    identical), then one LocalQueue per ClusterQueue, held when it has `admitted` entries
    (harness.runner.preadmit); returns once Kueue shows them all ready and empty."""
    kept = set()
    for obj in world.cluster_objects(scenario, names):
        if create_or_keep(kube, obj, names):
            kept.add((obj["kind"], obj["metadata"]["name"]))
    check_controller.report_active(kube, scenario.admission_checks)
    held = world.held_queues(scenario)
    for lq in scenario.queues():
        kube.create(world.scenario_local_queue(lq, names, hold=lq.cluster_queue in held))
    for cq in scenario.cluster_queues:
        inactive = inactive_reason(cq, scenario.admission_checks)
        if ("ClusterQueue", cq.name) in kept:
            _empty_or_replaced(kube, cq.name, world.cluster_objects(scenario, names), t)
        wait_for(
            kube,
            KUEUE_API,
            "ClusterQueue",
            cq.name,
            _inactive_and_empty(inactive) if inactive else _active_and_empty,
            what=f"Active False ({inactive})" if inactive else "Active and holding no workload",
            timeout=t.settle,
            interval=t.interval,
        )
        for lq in (q for q in scenario.queues() if q.cluster_queue == cq.name):
            off = cq.name in held or inactive or lq.stop_policy != "None"
            wait_for(
                kube,
                KUEUE_API,
                "LocalQueue",
                lq.name,
                has_condition("Active", "False" if off else "True"),
                namespace=names.real(lq.namespace),
                what="held (Active False)" if off else "Active",
                timeout=t.settle,
                interval=t.interval,
            )


def _empty_or_replaced(kube: Kube, name: str, objs: list[Obj], t: Timeouts) -> None:
    """A kept ClusterQueue that still counts a workload `kept_queue` seconds after the
    previous scenario's workloads are gone is deleted and made again. Kueue v0.19.2 can keep
    a pending Workload deleted in the middle of a scheduling cycle in its queue (a ClusterQueue
    counted 1 pending for minutes, `make e2e` 2026-12-07, suites/fair-sharing); a new
    ClusterQueue starts from the workloads Kueue's informer still has."""
    try:
        wait_for(kube, KUEUE_API, "ClusterQueue", name, _counts_nothing,
                 what="holding no workload", timeout=t.kept_queue, interval=t.interval)  # fmt: skip
        return
    except WaitTimeout as stale:
        logger.info(f"ClusterQueue {name} made again: {stale}")
    kube.delete(KUEUE_API, "ClusterQueue", name)
    wait_for(kube, KUEUE_API, "ClusterQueue", name, absent, what="deleted",
             timeout=t.settle, interval=t.interval)  # fmt: skip
    kube.create(
        next(o for o in objs if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == name)
    )


def _counts_nothing(obj: Obj | None) -> tuple[bool, str]:
    status = (obj or {}).get("status") or {}
    counts = (status.get("reservingWorkloads", 0), status.get("pendingWorkloads", 0))
    return counts == (0, 0), f"reserving/pending {counts}"


def _inactive_and_empty(reason: str) -> Callable[[Obj | None], tuple[bool, str]]:
    """A ClusterQueue Kueue keeps inactive (harness.kueue.queue_activity), for that reason."""

    def check(obj: Obj | None) -> tuple[bool, str]:
        conditions = ((obj or {}).get("status") or {}).get("conditions") or []
        active: dict[str, str] = next((c for c in conditions if c.get("type") == "Active"), {})
        status = (obj or {}).get("status") or {}
        counts = (status.get("reservingWorkloads", 0), status.get("pendingWorkloads", 0))
        seen = f"Active {active.get('status')} ({active.get('reason')}); reserving/pending {counts}"
        held = active.get("status") == "False" and reason in str(active.get("reason", ""))
        return held and counts == (0, 0), seen

    return check


def _active_and_empty(obj: Obj | None) -> tuple[bool, str]:
    """A kept ClusterQueue may still count the previous scenario's workloads for a moment."""
    active, seen = has_condition("Active")(obj)
    status = (obj or {}).get("status") or {}
    counts = (status.get("reservingWorkloads", 0), status.get("pendingWorkloads", 0))
    return active and counts == (0, 0), f"{seen}; reserving/pending {counts}"


def await_local_queue(
    kube: Kube,
    queue: str,
    names: Names,
    t: Timeouts,
    what: str,
    active: bool = True,
    namespace: str = "",
) -> None:
    """A LocalQueue of the run is Active (Kueue admits nothing through one that is not);
    `active` False: the LocalQueue of an inactive ClusterQueue, which Kueue keeps inactive
    (reason ClusterQueueIsInactive)."""
    wait_for(
        kube,
        KUEUE_API,
        "LocalQueue",
        queue,
        has_condition("Active", "True" if active else "False"),
        namespace=namespace or names.namespace,
        what=what,
        timeout=t.settle,
        interval=t.interval,
    )
