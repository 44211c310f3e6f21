"""Watch-fed copies against a real API server (harness.kube.informer): a wait reads them
without requests and wakes when a watched object changes; reads outside a wait, and reads
while a copy has lost its watch, go to the API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from harness.kube import Kube, KubeError, WaitTimeout, absent, poll_until, wait_for
from harness.kube import informer as informer_module
from harness.kube.client import lagging_reads
from harness.kube.informer import watching

pytestmark = pytest.mark.cluster

NS = "informed"
CONFIG_MAP = ("v1", "ConfigMap")


@pytest.fixture(scope="module")
def kube(apiserver_only: Callable[..., AbstractContextManager[Any]]) -> Iterator[Kube]:
    with apiserver_only() as api:
        client = Kube(api.kubeconfig)
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        yield client
        client.close()


@pytest.fixture
def config_map_gets(kube: Kube, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of every GET of a ConfigMap (one or a list) the client sends."""
    sent: list[str] = []
    request = kube.request

    def counting(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        if method == "GET" and "/configmaps" in path:
            sent.append(path)
        return request(method, path, *args, **kwargs)

    monkeypatch.setattr(kube, "request", counting)
    return sent


def config_map(name: str, **labels: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": NS, "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def created_later(kube: Kube, obj: dict[str, Any], seconds: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), kube.create(obj)))
    thread.start()
    return thread


def test_a_wait_wakes_on_the_change_and_reads_without_requests(
    kube: Kube, config_map_gets: list[str]
) -> None:
    with watching(kube, [CONFIG_MAP], [NS]):
        listed_at_start = len(config_map_gets)
        thread = created_later(kube, config_map("woken"), 0.5)
        started = time.monotonic()
        # A 30 s pause between polls: only a wake-up on the watch event ends it sooner.
        wait_for(kube, *CONFIG_MAP, "woken", lambda o: (o is not None, "seen"),
                 namespace=NS, what="created", timeout=60, interval=30)  # fmt: skip
        waited = time.monotonic() - started
        thread.join()
        during_wait = config_map_gets[listed_at_start:]
    assert waited < 10, f"the wait slept through the change ({waited:.1f}s)"
    # Its polls read the copy; the one GET is the API server confirming what the copy said.
    assert during_wait == [f"/api/v1/namespaces/{NS}/configmaps/woken"], during_wait


def test_a_stalled_copy_simulated_cannot_end_a_wait_the_api_server_contradicts(
    kube: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stall is simulated (a watch that delivers nothing): the copy keeps saying 'old'
    while the API server says 'new', as a watch lagging on a loaded machine would."""
    kube.create({**config_map("phase"), "data": {"phase": "old"}})
    released = threading.Event()

    def stalled(path: str, query: Any, *, owner: object) -> Iterator[dict[str, Any]]:
        released.wait(60)
        yield from ()

    with watching(kube, [CONFIG_MAP], [NS]):
        assert kube.cache is not None
        (informer,) = kube.cache.informers.values()  # type: ignore[attr-defined]
        monkeypatch.setattr(kube, "watch", stalled)
        kube.stop_watches(informer)  # the real watch ends; the next one is the stalled one
        kube.patch(*CONFIG_MAP, "phase", {"data": {"phase": "new"}}, namespace=NS)
        try:
            with pytest.raises(WaitTimeout):
                wait_for(kube, *CONFIG_MAP, "phase",
                         lambda o: ((o or {}).get("data", {}).get("phase") == "old", "old"),
                         namespace=NS, what="the old phase", timeout=2, interval=0.1)  # fmt: skip
            assert informer.get("phase")[1]["data"] == {"phase": "old"}, "the copy was not stale"
        finally:
            released.set()


def test_reads_outside_a_wait_ask_the_api_server(kube: Kube, config_map_gets: list[str]) -> None:
    kube.create(config_map("direct"))
    with watching(kube, [CONFIG_MAP], [NS]):
        before = len(config_map_gets)
        assert kube.get(*CONFIG_MAP, "direct", NS)["metadata"]["name"] == "direct"
        assert len(config_map_gets) == before + 1


def test_a_deleted_object_leaves_the_copy_and_selectors_filter_it(kube: Kube) -> None:
    kube.create(config_map("doomed", role="a"))
    kube.create(config_map("kept", role="b"))
    with watching(kube, [CONFIG_MAP], [NS]):
        kube.delete(*CONFIG_MAP, "doomed", NS)
        wait_for(kube, *CONFIG_MAP, "doomed", absent, namespace=NS, what="gone", timeout=30)

        def only_kept() -> tuple[bool, str]:
            names = [o["metadata"]["name"] for o in kube.list(*CONFIG_MAP, NS, "role")]
            return names == ["kept"], f"listed {names}"

        poll_until(only_kept, what="the copy to list only 'kept'", timeout=30, interval=0.1)


def test_an_ended_watch_resumes_where_it_stopped(kube: Kube) -> None:
    with watching(kube, [CONFIG_MAP], [NS]):
        assert kube.cache is not None
        (informer,) = kube.cache.informers.values()  # type: ignore[attr-defined]
        kube.stop_watches(informer)  # as the API server ends one after its timeoutSeconds
        kube.create(config_map("after-end"))

        def copied() -> tuple[bool, str]:
            answered, obj = informer.get("after-end")
            return answered and obj is not None, f"answered {answered}, found {obj is not None}"

        poll_until(copied, what="the copy to hold 'after-end'", timeout=30, interval=0.1)


def test_a_failed_watch_simulated_lists_again_and_the_api_server_answers_meanwhile(
    kube: Kube, config_map_gets: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure is simulated (a raised KubeError where a dropped connection would be):
    the API server here does not drop connections on demand."""
    monkeypatch.setattr(informer_module, "RELIST_AFTER_S", 2.0)
    real_watch = kube.watch
    failed: list[str] = []

    def failing_once(path: str, query: Any, *, owner: object) -> Any:
        if not failed:
            failed.append(path)
            raise KubeError("connection reset by peer (simulated)")
        return real_watch(path, query, owner=owner)

    with watching(kube, [CONFIG_MAP], [NS]):
        assert kube.cache is not None
        (informer,) = kube.cache.informers.values()  # type: ignore[attr-defined]
        monkeypatch.setattr(kube, "watch", failing_once)
        kube.stop_watches(informer)
        poll_until(lambda: (not informer.get("x")[0], "in sync"), what="the copy to be out of "
                   "sync", timeout=30, interval=0.05)  # fmt: skip
        before = len(config_map_gets)
        with lagging_reads() as served:
            kube.get_or_none(*CONFIG_MAP, "x", NS)
        assert (served.count, len(config_map_gets)) == (0, before + 1)
        kube.create(config_map("after-failure"))

        def copied() -> tuple[bool, str]:
            answered, obj = informer.get("after-failure")
            return answered and obj is not None, f"answered {answered}, found {obj is not None}"

        poll_until(copied, what="the copy to list again", timeout=30, interval=0.1)
    assert failed, "the watch never failed"
