"""Watch-fed copies of a scenario's Pods and Workloads, read by the runner's waits.

Polling them was most of the runner's requests: on suites v2, pods-ready, kueue-cases and
faults (246 scenarios, 4 clusters, 2026-12-07) 29,110 requests, 14,153 of them lists and
gets of Pods and Workloads at 10 Hz (158 MB of JSON). Polling at 0.4 s instead cut the
scenarios' CPU (API server, etcd, runner) by 15 % but made them 7.5 % slower. A watch
delivers each change once, and a wait wakes when it arrives instead of at its next poll.

Only reads inside a wait use the copy (`harness.kube.wait.poll_for`): a wait tolerates a
copy a few milliseconds behind, as it tolerates the next poll coming a little later. Every
other read still asks the API server, so a read right after the harness's own write sees it.
A copy that lost its watch answers nothing until it has listed again; the API server answers
meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator

from harness.kube.client import Kube, Obj
from harness.kube.errors import KubeError
from harness.kube.wait import waking

logger = logging.getLogger(__name__)

WATCH_SECONDS = 60
"""The API server ends each watch after this long (timeoutSeconds); it is then resumed from
the last resourceVersion seen."""
RELIST_AFTER_S = 0.2
"""Pause before listing again after a watch failed (connection lost, resourceVersion gone)."""


class Informer:
    """One kind in one namespace: listed once, then kept current by a watch in a thread."""

    def __init__(self, kube: Kube, api_version: str, kind: str, namespace: str, changed: Changes):
        self.kube, self.api_version, self.kind, self.namespace = kube, api_version, kind, namespace
        self.path = kube.path(api_version, kind, namespace=namespace)
        self._changed = changed
        self._lock = threading.Lock()
        self._objects: dict[str, tuple[dict[str, str], bytes]] = {}
        self._synced = False
        self._version = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch {kind}", daemon=True)

    def start(self) -> None:
        """List now, so the copy is as new as this call, then keep watching."""
        self._list()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.kube.stop_watches(self)
        self._thread.join(timeout=5)

    def items(self, labels: str | None) -> list[Obj] | None:
        """Copies of the objects whose labels match `labels`; None when the copy is not in
        sync or the selector is not one this module evaluates."""
        with self._lock:
            if not self._synced:
                return None
            kept = list(self._objects.values())
        found = []
        for own, raw in kept:
            match = selector_matches(labels, own)
            if match is None:
                return None
            if match:
                found.append(json.loads(raw))
        return found

    def get(self, name: str) -> tuple[bool, Obj | None]:
        """(answered, object or None when absent); not answered when out of sync."""
        with self._lock:
            if not self._synced:
                return False, None
            entry = self._objects.get(name)
        return True, (json.loads(entry[1]) if entry else None)

    def _list(self) -> None:
        listed = self.kube.request("GET", self.path)
        with self._lock:
            self._objects = {o["metadata"]["name"]: _entry(o) for o in listed.get("items", [])}
            self._version = str((listed.get("metadata") or {}).get("resourceVersion", ""))
            self._synced = True
        self._changed.bump()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch()
            except (KubeError, OSError, ValueError) as err:
                if self._stop.is_set():
                    return
                logger.debug(f"watch of {self.kind}s in {self.namespace} ended: {err}")
                with self._lock:
                    self._synced = False
                self._changed.bump()
                if self._stop.wait(RELIST_AFTER_S):
                    return
                with contextlib.suppress(KubeError, OSError, ValueError):
                    self._list()

    def _watch(self) -> None:
        query = {
            "watch": "1",
            "resourceVersion": self._version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        for event in self.kube.watch(self.path, query, owner=self):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":  # e.g. 410 Gone: the version is too old to resume from
                raise KubeError(f"watch error: {obj.get('message', obj)}")
            meta = obj.get("metadata") or {}
            with self._lock:
                self._version = str(meta.get("resourceVersion", self._version))
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    self._objects.pop(meta.get("name", ""), None)
                else:
                    self._objects[meta.get("name", "")] = _entry(obj)
            self._changed.bump()


def _entry(obj: Obj) -> tuple[dict[str, str], bytes]:
    """Labels for matching, and the object as JSON: every read hands out a copy of its own."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return dict(labels), json.dumps(obj).encode()


BURST_S = 0.1
"""A woken wait probes no sooner than this after its last probe, as when it polled at 10 Hz:
a probe right after an awaited change can come before the changes Kueue makes next (with
20 ms, make test read a pending workload ~15 ms before Kueue's retry after another's
admission rewrote its message: v2-capacity-not-blocked-when-lender-can-reclaim)."""


class Changes:
    """A counter every informer bumps; a wait sleeps until it moves or its pause ends."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._count = 0

    def bump(self) -> None:
        with self._cond:
            self._count += 1
            self._cond.notify_all()

    def sleep(self, seconds: float) -> None:
        """Until the next change or `seconds`, whichever comes first, but at least
        BURST_S (a burst of events, e.g. a Job's pods created together, wakes a wait once)."""
        with self._cond:
            seen = self._count
        time.sleep(min(BURST_S, seconds))
        end = time.monotonic() + seconds - BURST_S
        with self._cond:
            while self._count == seen:
                left = end - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)


class ReadCache:
    """The informers of one scenario, as Kube asks them (harness.kube.client.Kube.cache)."""

    def __init__(self, informers: Iterable[Informer]):
        self.informers = {(i.api_version, i.kind, i.namespace): i for i in informers}

    def list(
        self, api_version: str, kind: str, namespace: str | None, labels: str | None
    ) -> list[Obj] | None:
        found = self.informers.get((api_version, kind, namespace or ""))
        return found.items(labels) if found else None

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None
    ) -> tuple[bool, Obj | None]:
        found = self.informers.get((api_version, kind, namespace or ""))
        return found.get(name) if found else (False, None)


@contextlib.contextmanager
def watching(
    kube: Kube, kinds: Iterable[tuple[str, str]], namespaces: Iterable[str]
) -> Iterator[None]:
    """Within the block, waits read `kinds` in `namespaces` from watch-fed copies and wake
    when any of them changes; the watches stop when it ends."""
    changed = Changes()
    informers: list[Informer] = []
    try:
        for namespace in dict.fromkeys(namespaces):
            for api_version, kind in kinds:
                informer = Informer(kube, api_version, kind, namespace, changed)
                informer.start()
                informers.append(informer)
        kube.cache = ReadCache(informers)
        with waking(changed.sleep):
            yield
    finally:
        kube.cache = None
        for informer in informers:
            informer.stop()


_REQUIREMENT_OPS = ("!=", "==", "=")


def selector_matches(labels: str | None, own: dict[str, str]) -> bool | None:
    """Whether labels `own` satisfy a label selector of equality and existence requirements
    (`a=b,c!=d,e,!f`); None for a form it does not evaluate (set-based `in`/`notin`)."""
    if not labels:
        return True
    for requirement in labels.split(","):
        req = requirement.strip()
        if " in " in req or " notin " in req or "(" in req:
            return None
        for op in _REQUIREMENT_OPS:
            if op in req:
                key, value = (part.strip() for part in req.split(op, 1))
                equal = own.get(key) == value
                if equal == (op == "!="):
                    return False
                break
        else:
            if req.startswith("!"):
                if req[1:].strip() in own:
                    return False
            elif req not in own:
                return False
    return True
