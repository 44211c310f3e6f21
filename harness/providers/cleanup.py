"""Delete everything a run created on a cluster: one list of kinds, one function.

Every object the harness creates carries the run label, so clearing is one label query per
kind. The runner clears before each scenario (names are reused across scenarios, so it waits
until they are gone); a provider on someone else's cluster clears the same way when it stops.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence

import tenacity

from harness.install.kueue import JOBSET_API
from harness.install.lws import LWS_API
from harness.kube import KUEUE_API, RUN_LABEL, Kube, KubeError, NotFound, Obj, in_parallel
from harness.kube.wait import poll_until

NAMESPACED = (
    (JOBSET_API, "JobSet"),  # not served on clusters without the JobSet CRD
    (LWS_API, "LeaderWorkerSet"),  # nor this one without LWS's (its StatefulSets: GC)
    ("batch/v1", "Job"),  # after JobSets: a JobSet makes a deleted child Job again
    (KUEUE_API, "Workload"),
    ("v1", "Pod"),
    (KUEUE_API, "LocalQueue"),
)
"""Kinds a run creates inside its namespaces (deleted before the namespace itself)."""
CLUSTER_SCOPED = (
    (KUEUE_API, "ClusterQueue"),
    (KUEUE_API, "Cohort"),
    (KUEUE_API, "AdmissionCheck"),
    ("v1", "Node"),
    (KUEUE_API, "ResourceFlavor"),
    (KUEUE_API, "Topology"),
    (KUEUE_API, "WorkloadPriorityClass"),
)
"""Cluster-scoped kinds a run creates, in deletion order (Kueue's finalizers hold a
ResourceFlavor while a ClusterQueue uses it, and a Topology while a flavor names it)."""
KEPT_KINDS = (
    "Topology",
    "ResourceFlavor",
    "AdmissionCheck",
    "ClusterQueue",
    "WorkloadPriorityClass",
    "Cohort",
)
"""Kinds an identical object of the next scenario may keep, in the order decided (a flavor
only with its Topology, a ClusterQueue only with all its flavors)."""

CLEARED_LABEL = "kueue-tas-harness/cleared"
"""On a namespace of a finished scenario kept (emptied) on a cluster that ends with the run."""

_retry = tenacity.retry(
    retry=tenacity.retry_if_exception_type(KubeError),
    stop=tenacity.stop_after_delay(20),
    wait=tenacity.wait_exponential(multiplier=0.2, max=2),
    reraise=True,
)


@_retry
def clear_run(
    kube: Kube,
    run_id: str,
    timeout: float,
    reuse: Sequence[Obj] = (),
    everything: bool = False,
    keep_namespaces: bool = False,
) -> None:
    """Delete everything labelled with the run id and wait until it is gone. Retried: a
    fresh API server answers 429 while a CRD's storage initialises.

    `reuse` lists the Topology and ResourceFlavor the next scenario needs: one that exists
    with exactly that spec is kept, which saves waiting for Kueue's finalizer chain
    (Workload -> ClusterQueue -> ResourceFlavor -> Topology). Between scenarios namespaces and
    ClusterQueues get new names, so their deletion is awaited only with `everything`.

    With `keep_namespaces` (a cluster that goes away with the run) an emptied namespace is
    labelled CLEARED_LABEL instead of deleted: Kubernetes' namespace controller lists and
    deletes every namespaced kind of the API to remove one (~90 requests, 0.1 CPU-s here),
    more than the scenario's own clearing."""
    sel = f"{RUN_LABEL}={run_id}"
    # A Terminating or CLEARED_LABEL namespace was emptied by an earlier clear (which waited
    # for its objects); listing its kinds again each time cost 2-3 times the clearing's
    # requests.
    namespaces = [
        n["metadata"]["name"]
        for n in kube.list("v1", "Namespace", labels=sel)
        if everything or not _emptied(n)
    ]
    for ns in namespaces:
        for api, kind in NAMESPACED:
            with contextlib.suppress(NotFound):
                kube.delete_all(api, kind, ns, _selector(kind, sel))
        _force_pods(kube, ns, sel)
    kube.delete_all("v1", "Node", labels=sel)  # Kueue's kinds: _replace_kueue_objects
    awaited = _replace_kueue_objects(kube, sel, reuse, timeout)
    for ns in namespaces:
        if keep_namespaces and not everything:
            labels = {CLEARED_LABEL: "true"}
            kube.patch("v1", "Namespace", ns, {"metadata": {"labels": labels}})
        else:
            kube.delete("v1", "Namespace", ns)

    gone = Leftovers(kube, namespaces, sel, awaited, everything)
    poll_until(gone, what=f"run {run_id}'s objects to be deleted", timeout=timeout, interval=0.1)


def _emptied(namespace: Obj) -> bool:
    meta = namespace["metadata"]
    return bool(meta.get("deletionTimestamp")) or CLEARED_LABEL in (meta.get("labels") or {})


def _replace_kueue_objects(
    kube: Kube, sel: str, reuse: Sequence[Obj], timeout: float
) -> list[tuple[str, str]]:
    """Delete the run's Kueue objects except identical ones in `reuse` (a flavor only
    together with its Topology, a ClusterQueue only with all its flavors); returns the
    (kind, name) to wait for: every deleted Topology and flavor, and a deleted ClusterQueue
    or WorkloadPriorityClass whose name `reuse` creates again."""
    wanted = {(o["kind"], o["metadata"]["name"]): content(o) for o in reuse}
    naming: dict[str, str] = {}  # flavor -> the Topology it names
    doomed: list[tuple[str, str]] = []
    kept: set[tuple[str, str]] = set()
    for kind in KEPT_KINDS:
        for obj in _labelled(kube, KUEUE_API, kind, sel):
            key = (kind, obj["metadata"]["name"])
            spec = obj.get("spec") or {}
            same = key in wanted and content(obj) == wanted[key]
            if kind == "ResourceFlavor" and spec.get("topologyName") is not None:
                naming[obj["metadata"]["name"]] = spec["topologyName"]
                same = same and ("Topology", spec["topologyName"]) in kept
            if kind == "ClusterQueue":
                flavors = {
                    f["name"] for g in spec.get("resourceGroups") or [] for f in g["flavors"]
                }
                same = same and all(("ResourceFlavor", f) in kept for f in flavors)
                # Kueue's finalizer holds an AdmissionCheck while a ClusterQueue uses it.
                checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks")
                same = same and all(("AdmissionCheck", c["name"]) in kept for c in checks or [])
            if same and not obj["metadata"].get("deletionTimestamp"):
                kept.add(key)
            else:
                doomed.append(key)
    # Kueue's finalizers hold a flavor while a ClusterQueue uses it and a Topology while a
    # flavor names it.
    for kind, name in doomed:
        kube.delete(KUEUE_API, kind, name)
    topologies = [name for kind, name in doomed if kind == "Topology"]
    if topologies:
        _await_flavors_gone(kube, [f for f, t in naming.items() if t in topologies], timeout)
        for name in topologies:
            _nudge(kube, name, 1)
    return [
        (kind, name)
        for kind, name in doomed
        if kind in ("Topology", "ResourceFlavor", "AdmissionCheck") or (kind, name) in wanted
    ]


def _await_flavors_gone(kube: Kube, flavors: Sequence[str], timeout: float) -> None:
    """Wait until these flavors are deleted (then _nudge their Topology)."""

    def gone() -> tuple[bool, str]:
        left = [f for f in flavors if kube.get_or_none(KUEUE_API, "ResourceFlavor", f)]
        return not left, f"still there: {', '.join(left)}"

    poll_until(gone, what="the deleted flavors to go", timeout=timeout, interval=0.05)


NUDGED = "kueue-tas-harness/flavors-gone"
"""Annotation the clear writes on a deleted Topology once its flavors are gone: the number
of the nudge, so that each one is an update (an unchanged value writes nothing)."""
RENUDGE_EVERY = 1.0
"""Seconds between further nudges of a deleted Topology that is still there (Leftovers)."""


def _nudge(kube: Kube, topology: str, count: int) -> None:
    """Make Kueue reconcile a deleted Topology now that its flavors are gone. Kueue removes
    its finalizer when a reconcile finds no flavor naming it; the reconcile a flavor's
    delete event sets off comes UpdatesBatchPeriod (1 s) later
    (pkg/controller/tas/topology_controller.go resourceFlavorHandler.Delete, v0.17-v0.19),
    which 45 of the 114 clears of suites/kueue-cases waited out. An update event reconciles
    at once. Still deleted in the same order as before: deleting the Topology only after its
    flavors were gone lost that later reconcile when Kueue's cache still held a flavor at
    the Topology's own event (make e2e, 6 Topologies never deleted on a loaded machine).
    If this reconcile comes too early, the 1 s one still follows, and Leftovers nudges again
    while the Topology stays: Kueue's ResourceFlavor controller drops a deleted flavor from
    the cache the Topology's reconcile reads (resourceflavor_controller.go Delete) in its own
    event handler, which on a loaded machine ran after both reconciles (make e2e, 5
    Topologies never deleted in one run: nothing reconciles them again)."""
    patch = {"metadata": {"annotations": {NUDGED: str(count)}}}
    with contextlib.suppress(NotFound):
        kube.patch(KUEUE_API, "Topology", topology, patch)


def content(obj: Obj) -> Obj:
    """What makes two objects of a kind the same: all but metadata and status (a
    WorkloadPriorityClass keeps its `value` outside any spec)."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


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


def _labelled(kube: Kube, api: str, kind: str, sel: str | None, ns: str | None = None) -> list[Obj]:
    """The run's objects of a kind; none when the cluster does not serve it (a refused
    cluster without Kueue's CRDs, or one without JobSet's)."""
    try:
        return kube.list(api, kind, ns, sel)
    except NotFound:
        return []


UNLABELLED = ("Workload",)
"""Namespaced kinds cleared whatever their labels: Kueue makes a Job's Workload without the
run label (it copies only `labelKeysToCopy`), and in a namespace of the run every Workload is
the run's. Left to the garbage collector, a preempted Job's pending Workload outlived its Job
by minutes once (`make e2e`, 2026-12-07), counted in the ClusterQueue the next scenario kept."""


def _selector(kind: str, sel: str) -> str | None:
    return None if kind in UNLABELLED else sel


RECREATED = ("Workload", "Pod")
"""Kinds a controller makes again while an owner is left (Kueue a pod group's Workload, the
Job and StatefulSet controllers pods): looked at until the last look."""


class Leftovers:
    """The probe of a clear's wait: what of the run is still there. A kind nothing makes again
    once the run's objects are deleted (Jobs, JobSets, LeaderWorkerSets, LocalQueues, Nodes,
    namespaces, the awaited Kueue objects) is listed until seen empty, then no more; with six
    clusters on two cores a clear takes 5-8 looks, and listing every kind on each look was
    most of a scenario's requests. A pod left is taken off again (one whose node went away
    stays Terminating). A deleted Topology still there is nudged again every RENUDGE_EVERY
    seconds (_nudge)."""

    def __init__(
        self,
        kube: Kube,
        namespaces: Sequence[str],
        sel: str,
        awaited: Iterable[tuple[str, str]],
        everything: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube, self.sel, self.clock = kube, sel, clock
        started = clock()
        self.nudged = {name: (1, started) for kind, name in awaited if kind == "Topology"}
        """Topology -> (nudges so far, when the last one was)."""
        self.looks: list[tuple[str, str, str | None, str | None]] = [
            (api, kind, ns, None) for ns in namespaces for api, kind in NAMESPACED
        ]
        if everything:
            self.looks += [("v1", "Namespace", None, None)]
            self.looks += [(api, kind, None, None) for api, kind in CLUSTER_SCOPED]
        else:
            self.looks += [("v1", "Node", None, None)]
            self.looks += [(KUEUE_API, kind, None, name) for kind, name in awaited]
        self.done: set[tuple[str, str, str | None, str | None]] = set()

    def __call__(self) -> tuple[bool, str]:
        left: list[str] = []
        for look in self.looks:
            if look in self.done:
                continue
            api, kind, ns, name = look
            found = self._find(api, kind, ns, name)
            if not found and kind not in RECREATED:
                self.done.add(look)
            if found and kind == "Pod" and ns is not None:
                _force_pods(self.kube, ns, self.sel)
            if found and kind == "Topology" and name in self.nudged:
                self._nudge_again(name)
            left += found
        return not left, f"still there: {', '.join(left[:12])}"

    def _nudge_again(self, topology: str) -> None:
        count, last = self.nudged[topology]
        now = self.clock()
        if now - last >= RENUDGE_EVERY:
            _nudge(self.kube, topology, count + 1)
            self.nudged[topology] = (count + 1, now)

    def _find(self, api: str, kind: str, ns: str | None, name: str | None) -> list[str]:
        if name is not None:
            return [f"{kind} {name}"] if self.kube.get_or_none(api, kind, name) else []
        where = f"{ns}/" if ns is not None else ""
        return [
            f"{kind} {where}{o['metadata']['name']}"
            for o in _labelled(
                self.kube, api, kind, self.sel if ns is None else _selector(kind, self.sel), ns
            )
        ]
