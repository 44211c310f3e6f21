"""A clear's wait on a real API server: what it looks at again, and what it stops looking at."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from harness.kube import KUEUE_API, RUN_LABEL, Kube
from harness.providers.cleanup import NUDGED, RENUDGE_EVERY, Leftovers, clear_run

RUN = "looks-1"
SEL = f"{RUN_LABEL}={RUN}"


class CountingKube(Kube):
    """The real client, writing down each request's method and path."""

    def __init__(self, kubeconfig: Path) -> None:
        super().__init__(kubeconfig)
        self.sent: list[str] = []

    def request(self, method: str, path: str, body: Any = None, *,
                query: Mapping[str, str] | None = None,
                content_type: str = "application/json") -> Any:  # fmt: skip
        self.sent.append(f"{method} {path}")
        return super().request(method, path, body, query=query, content_type=content_type)


@pytest.fixture(scope="module")
def kube(apiserver_only: Callable[[], AbstractContextManager[Any]]) -> Iterator[CountingKube]:
    """A bare API server (no Kueue, no controllers): nothing deletes but the test."""
    with apiserver_only() as api:
        client = CountingKube(api.kubeconfig)
        yield client
        client.close()


def labelled(kind: str, name: str, **extra: Any) -> dict[str, Any]:
    """A core object of the run; `meta` adds to its metadata."""
    meta = {"name": name, "labels": {RUN_LABEL: RUN}, **extra.pop("meta", {})}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **extra}


POD_SPEC = {"containers": [{"name": "c", "image": "x"}]}
ONCE = {"jobs", "jobsets", "leaderworkersets", "localqueues"}
"""Kinds nothing makes again once deleted: listed until seen empty, then no more."""


def gets(sent: list[str]) -> list[str]:
    return [s for s in sent if s.startswith("GET")]


def looked_at(sent: list[str]) -> set[str]:
    """The resources the GETs named (a bare API server serves no Kueue kinds: for those the
    client asks discovery, which names the group version instead)."""
    return {s.split("?")[0].rsplit("/", 1)[-1] for s in gets(sent)}


@pytest.mark.cluster
def test_a_kind_seen_empty_is_not_listed_again_pods_are(kube: CountingKube) -> None:
    kube.create(labelled("Namespace", "looks-a"))
    kube.create(labelled("Node", "looks-node", meta={"finalizers": ["kth.test/hold"]}))
    kube.create(labelled("Pod", "p", spec=POD_SPEC, meta={"namespace": "looks-a"}))
    kube.delete("v1", "Node", "looks-node")  # held by its finalizer until the test lets go
    look = Leftovers(kube, ["looks-a"], SEL, [], everything=False)

    kube.sent.clear()
    done, seen = look()
    assert not done and "Pod looks-a/p" in seen and "Node looks-node" in seen
    assert {"pods", "nodes", "jobs"} <= looked_at(kube.sent), kube.sent

    kube.sent.clear()
    done, seen = look()  # the pod was taken off (grace 0, no node); the node is held
    assert not done and seen == "still there: Node looks-node"
    again = looked_at(kube.sent)
    assert {"pods", "nodes"} <= again and not again & ONCE, kube.sent
    assert len(gets(kube.sent)) == 3, kube.sent  # Workloads, Pods, Nodes: one GET each

    kube.patch("v1", "Node", "looks-node", {"metadata": {"finalizers": None}})
    kube.sent.clear()
    assert look() == (True, "still there: ")
    last = looked_at(kube.sent)
    assert {"pods", "nodes"} <= last and not last & ONCE, kube.sent
    assert len(gets(kube.sent)) == 3, kube.sent


@pytest.mark.cluster
def test_clear_run_leaves_nothing_of_the_run_and_keeps_the_namespace(kube: CountingKube) -> None:
    kube.create(labelled("Namespace", "looks-b"))
    kube.create(labelled("Pod", "q", spec=POD_SPEC, meta={"namespace": "looks-b"}))
    kube.create(labelled("Node", "looks-node-b"))
    clear_run(kube, RUN, timeout=30, keep_namespaces=True)
    assert kube.list("v1", "Pod", "looks-b", SEL) == []
    assert kube.list("v1", "Node", labels=SEL) == []
    namespace = kube.get("v1", "Namespace", "looks-b")
    assert namespace["metadata"]["labels"]["kueue-tas-harness/cleared"] == "true"


@pytest.fixture(scope="module")
def tas_kube(apiserver_only: Callable[[], AbstractContextManager[Any]]) -> Iterator[CountingKube]:
    """A bare API server serving Kueue's Topology and ResourceFlavor (no Kueue: only the
    test removes a finalizer)."""
    from harness import toolchain
    from harness.install import kueue as kueue_install
    from harness.install import manifests

    with apiserver_only() as api:
        kube = CountingKube(api.kubeconfig)
        crds = manifests.crds(toolchain.kueue_module_dir(), "https://127.0.0.1:1", "")
        wanted = ("Topology", "ResourceFlavor")
        kueue_install.install_crds(kube, [c for c in crds if c["spec"]["names"]["kind"] in wanted])
        yield kube
        kube.close()


def topology(name: str, **meta: Any) -> dict[str, Any]:
    levels = [{"nodeLabel": "kubernetes.io/hostname"}]
    metadata = {"name": name, "labels": {RUN_LABEL: RUN}, **meta}
    return {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": metadata,
            "spec": {"levels": levels}}  # fmt: skip


@pytest.mark.cluster
def test_a_deleted_topology_is_nudged_after_its_flavors_are_gone(tas_kube: CountingKube) -> None:
    """Kueue removes a deleted Topology's finalizer when a reconcile finds no flavor naming
    it; the one a flavor's deletion triggers runs 1 s later (UpdatesBatchPeriod), the one
    an update of the Topology triggers at once. So once the clear has seen the flavors gone
    (here no Kueue holds them: a GET answers 404) it patches the deleted Topology."""
    kube = tas_kube
    kube.create(topology("t"))
    spec = {"nodeLabels": {"pool": "a"}, "topologyName": "t"}
    kube.create({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "spec": spec,
                 "metadata": {"name": "f", "labels": {RUN_LABEL: RUN}}})  # fmt: skip
    kube.sent.clear()
    clear_run(kube, RUN, timeout=30)
    flavor, path = "/resourceflavors/f", "/topologies/t"
    order = [s for s in kube.sent if s.endswith((flavor, path))]
    api = f"/apis/{KUEUE_API}"
    assert order[:4] == [f"DELETE {api}{path}", f"DELETE {api}{flavor}",
                         f"GET {api}{flavor}", f"PATCH {api}{path}"], order  # fmt: skip
    assert kube.get_or_none(KUEUE_API, "Topology", "t") is None


@pytest.mark.cluster
def test_a_deleted_topology_still_there_is_nudged_again_each_second(
    tas_kube: CountingKube,
) -> None:
    """When Kueue's reconciles all came before its cache forgot the flavors, nothing
    reconciles the Topology again: the clear's wait patches it anew (a new value, so the
    patch is an update) every RENUDGE_EVERY seconds while it is there."""
    kube = tas_kube
    kube.create(topology("held", finalizers=["kth.test/hold"]))
    kube.delete(KUEUE_API, "Topology", "held")  # held by its finalizer, as Kueue's would
    now = [100.0]
    look = Leftovers(kube, [], SEL, [("Topology", "held")], everything=False, clock=lambda: now[0])

    def nudge() -> str | None:
        annotations = kube.get(KUEUE_API, "Topology", "held")["metadata"].get("annotations")
        return (annotations or {}).get(NUDGED)

    assert look() == (False, "still there: Topology held") and nudge() is None
    now[0] += RENUDGE_EVERY
    look()
    assert nudge() == "2"
    now[0] += RENUDGE_EVERY / 2
    look()
    assert nudge() == "2"
    now[0] += RENUDGE_EVERY / 2
    look()
    assert nudge() == "3"
    kube.patch(KUEUE_API, "Topology", "held", {"metadata": {"finalizers": None}})
    assert look() == (True, "still there: ")
