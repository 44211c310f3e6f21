"""A clear's wait on a real API server: what it looks at again, and what it stops looking at."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from harness.kube import RUN_LABEL, Kube
from harness.providers.cleanup import Leftovers, clear_run

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


@pytest.mark.cluster
def test_a_deleted_topology_is_nudged_after_its_flavors_are_gone(
    apiserver_only: Callable[[], AbstractContextManager[Any]],
) -> None:
    """Kueue removes a deleted Topology's finalizer when a reconcile finds no flavor naming
    it; the one a flavor's deletion triggers runs 1 s later (UpdatesBatchPeriod), the one
    an update of the Topology triggers at once. So once the clear has seen the flavors gone
    (here no Kueue holds them: a GET answers 404) it patches the deleted Topology."""
    from harness import toolchain
    from harness.install import kueue as kueue_install
    from harness.install import manifests
    from harness.kube import KUEUE_API

    with apiserver_only() as api:
        kube = CountingKube(api.kubeconfig)
        try:
            crds = manifests.crds(toolchain.kueue_module_dir(), "https://127.0.0.1:1", "")
            kueue_install.install_crds(
                kube,
                [c for c in crds if c["spec"]["names"]["kind"] in ("Topology", "ResourceFlavor")],
            )
            levels = [{"nodeLabel": "kubernetes.io/hostname"}]
            kube.create({"apiVersion": KUEUE_API, "kind": "Topology", "spec": {"levels": levels},
                         "metadata": {"name": "t", "labels": {RUN_LABEL: RUN}}})  # fmt: skip
            spec = {"nodeLabels": {"pool": "a"}, "topologyName": "t"}
            kube.create({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "spec": spec,
                         "metadata": {"name": "f", "labels": {RUN_LABEL: RUN}}})  # fmt: skip
            kube.sent.clear()
            clear_run(kube, RUN, timeout=30)
            flavor, topology = "/resourceflavors/f", "/topologies/t"
            order = [s for s in kube.sent if s.endswith((flavor, topology))]
            api = f"/apis/{KUEUE_API}"
            assert order[:4] == [f"DELETE {api}{topology}", f"DELETE {api}{flavor}",
                                 f"GET {api}{flavor}", f"PATCH {api}{topology}"], order  # fmt: skip
            assert kube.get_or_none(KUEUE_API, "Topology", "t") is None
        finally:
            kube.close()
