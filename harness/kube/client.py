"""The one object that talks to an API server: plain-dict CRUD over JSON REST.

Why not the generated `kubernetes` client: Kueue's CRDs are read as plain dicts anyway, and
the generated ApiClient's internals changed shape between releases (31 -> 37). Kubeconfigs
are read by harness.kube.kubeconfig the way kubectl reads them (tokens, tokenFile, client
certificates, exec plugins with refresh, tls-server-name, proxies); requests go out with
urllib3 (harness.kube.transport), resolving kind -> resource path through API discovery.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar
from urllib.parse import urlencode

import urllib3

from harness.kube import auth, kubeconfig, transport
from harness.kube.errors import Conflict, KubeError, NotFound

Obj = dict[str, Any]
T = TypeVar("T")
FIELD_MANAGER = "kueue-tas-harness"
CREATE_WORKERS = 8  # parallel POSTs in create_all; also the connection pool size
LIST_PAGE = 500  # kubectl's default --chunk-size
WATCH_READ_TIMEOUT = 120.0
"""A watch is ended by the API server after its timeoutSeconds; silence longer than this
means the connection is gone."""


class Served:
    """How many reads of one probe a watch-fed copy answered."""

    def __init__(self) -> None:
        self.count = 0


_LAGGING_READS: ContextVar[Served | None] = ContextVar("kth_lagging_reads", default=None)


class ReadCache(Protocol):
    """Watch-fed copies that may answer reads inside a wait (harness.kube.informer)."""

    def list(
        self, api_version: str, kind: str, namespace: str | None, labels: str | None
    ) -> list[Obj] | None: ...

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None
    ) -> tuple[bool, Obj | None]: ...


@contextlib.contextmanager
def lagging_reads() -> Iterator[Served]:
    """Within the block, reads may come from a watch-fed copy a few milliseconds behind the
    API server (a wait's probe: it polls again anyway); the count says how many did."""
    served = Served()
    token = _LAGGING_READS.set(served)
    try:
        yield served
    finally:
        _LAGGING_READS.reset(token)


_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


def selector(labels: Mapping[str, str] | str | None) -> str | None:
    """A label selector string from a mapping (`a=b,c=d`) or a ready string."""
    if labels is None or isinstance(labels, str):
        return labels
    return ",".join(f"{k}={v}" for k, v in labels.items())


def _ref(obj: Mapping[str, Any]) -> tuple[str, str, str, str | None]:
    meta = obj.get("metadata") or {}
    return obj["apiVersion"], obj["kind"], meta.get("name", ""), meta.get("namespace")


def in_parallel(call: Callable[[T], object], items: Iterable[T]) -> None:
    """Run `call` on every item over CREATE_WORKERS threads; the first error is raised once
    the calls under way have ended (urllib3's pool is thread-safe)."""
    items = list(items)
    if len(items) <= 1:
        for item in items:
            call(item)
        return
    pool = ThreadPoolExecutor(CREATE_WORKERS, thread_name_prefix="kth-kube")
    try:
        for future in [pool.submit(call, item) for item in items]:
            future.result()
    finally:
        # On an error, Ctrl-C or SIGTERM, requests not yet sent are dropped: waiting for
        # 20,000 queued creates would keep a stopping run alive for minutes.
        pool.shutdown(wait=True, cancel_futures=True)


class Kube:
    """A connection to one cluster, from a kubeconfig file (or $KUBECONFIG's files; never
    ~/.kube/config) and a context (default: its current-context)."""

    def __init__(
        self,
        kubeconfig_file: str | os.PathLike[str] | None,
        *,
        timeout: float = 30.0,
        context: str | None = None,
    ) -> None:
        files = kubeconfig.files_from(kubeconfig_file)
        self.kubeconfig = files[0]
        self.access = kubeconfig.load(files, context)
        self.host = self.access.server
        self.timeout = timeout
        self._auth = auth.authenticator(self.access)
        self._headers = {"Accept": "application/json", "User-Agent": FIELD_MANAGER}
        self._lock = threading.Lock()
        self._pools: dict[tuple[bytes, bytes] | None, urllib3.PoolManager] = {}
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}
        self.cache: ReadCache | None = None
        self._watches: dict[int, tuple[object, urllib3.BaseHTTPResponse]] = {}
        self._ended: set[int] = set()

    def _pool(self, cert: tuple[bytes, bytes] | None) -> urllib3.PoolManager:
        """The pool presenting `cert`; a rotated certificate closes the old connections (as
        client-go does when an exec plugin returns a new one)."""
        with self._lock:
            found = self._pools.get(cert)
            if found is None:
                for old in self._pools.values():
                    old.clear()
                found = transport.pool(
                    self.access, cert, maxsize=CREATE_WORKERS, timeout=self.timeout
                )
                self._pools = {cert: found}
            return found

    # -- transport ---------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """Send one request; returns the decoded JSON body or raises a named KubeError."""
        url = self.host + path + (("?" + urlencode(query)) if query else "")
        data = None
        headers = urllib3.HTTPHeaderDict(self._headers)
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        creds = self._auth.current()
        resp = self._send(method, url, data, headers, creds)
        if resp.status == 401 and self._auth.after_unauthorized(creds):
            # Rules of client-go's exec and tokenFile sources: refresh after a 401; a 401
            # means the request was not processed, so sending it again is safe.
            resp = self._send(method, url, data, headers, self._auth.current())
        try:
            payload: Any = json.loads(resp.data) if resp.data else None
        except ValueError:  # e.g. a plain-text 503 from a starting API server
            payload = None
        if resp.status < 400:
            return payload
        status = payload if isinstance(payload, dict) else {}
        message = f"{method} {path}: {resp.status} {status.get('message') or resp.data[:300]!r}"
        reason = str(status.get("reason", ""))
        if resp.status == 401:
            who = f"user {self.access.user!r}" if self.access.user else "no user"
            message += (
                f" (the API server did not accept the credentials of {who}, context "
                f"{self.access.context!r} in {self.access.source})"
            )
        if resp.status == 404:
            raise NotFound(message, resp.status, reason)
        if resp.status == 409:
            raise Conflict(message, resp.status, reason)
        raise KubeError(message, resp.status, reason)

    def _send(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: urllib3.HTTPHeaderDict,
        creds: auth.Credentials,
    ) -> urllib3.BaseHTTPResponse:
        sent = urllib3.HTTPHeaderDict(headers)
        for name, value in creds.headers:
            sent.add(name, value)
        try:
            return self._pool(creds.cert).request(method, url, body=data, headers=sent)
        except urllib3.exceptions.HTTPError as err:
            path = url[len(self.host) :].split("?")[0]
            raise KubeError(
                f"cannot connect to {self.host} ({transport.unreachable(err)}); {method} {path}"
            ) from err

    def watch(self, path: str, query: Mapping[str, str], *, owner: object) -> Iterator[Obj]:
        """The events of one watch request, decoded, until the server ends it (its
        timeoutSeconds) or `stop_watches(owner)` closes it from another thread."""
        url = self.host + path + "?" + urlencode(query)
        sent = urllib3.HTTPHeaderDict(self._headers)
        creds = self._auth.current()
        for name, value in creds.headers:
            sent.add(name, value)
        timeout = urllib3.Timeout(connect=self.timeout, read=WATCH_READ_TIMEOUT)
        try:
            resp = self._pool(creds.cert).request(
                "GET", url, headers=sent, preload_content=False, timeout=timeout, retries=False
            )
        except urllib3.exceptions.HTTPError as err:
            raise KubeError(f"cannot watch {path} ({transport.unreachable(err)})") from err
        with self._lock:
            ended = id(owner) in self._ended
            self._ended.discard(id(owner))
            if not ended:
                self._watches[id(owner)] = (owner, resp)
        try:
            if ended:  # stopped while this request was on its way
                return
            if resp.status >= 400:
                raise KubeError(f"GET {path} (watch): {resp.status} {resp.read()[:300]!r}")
            pending = b""
            for chunk in resp.stream(64 * 1024):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except urllib3.exceptions.HTTPError as err:
            raise KubeError(f"watch of {path} broke off: {err}") from err
        finally:
            with self._lock:
                self._watches.pop(id(owner), None)
            resp.close()  # never back to the pool half read
            resp.release_conn()

    def stop_watches(self, owner: object) -> None:
        """End the watch `owner` is reading, from another thread; one it is about to open
        ends as soon as it opens."""
        with self._lock:
            found = self._watches.get(id(owner))
            if found is None:
                self._ended.add(id(owner))
        if found is not None:
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                found[1].shutdown()  # the reader sees the response end early

    # -- discovery ---------------------------------------------------------------------

    def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        for refresh in (False, True):
            if refresh or api_version not in self._resources:
                base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
                listing = self.request("GET", base)
                self._resources[api_version] = {
                    r["kind"]: (r["name"], bool(r["namespaced"]))
                    for r in listing.get("resources", [])
                    if "/" not in r["name"]
                }
            found = self._resources[api_version].get(kind)
            if found:
                return found
        raise NotFound(f"kind {kind} is not served by {api_version}")

    def path(
        self,
        api_version: str,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        subresource: str = "",
    ) -> str:
        """REST path of a collection or object, e.g. /apis/batch/v1/namespaces/ns/jobs/x."""
        plural, namespaced = self._resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced:
            if not namespace:
                raise KubeError(f"{kind} {name or '(collection)'} is namespaced: give a namespace")
            base += f"/namespaces/{namespace}"
        parts = [base, plural] + ([name] if name else []) + ([subresource] if subresource else [])
        return "/".join(parts)

    # -- verbs -------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        served = _LAGGING_READS.get()
        if self.cache is not None and served is not None:
            answered, found = self.cache.get(api_version, kind, name, namespace)
            if answered:
                served.count += 1
                if found is None:
                    path = self.path(api_version, kind, name, namespace)
                    raise NotFound(f"GET {path}: 404 (not in the watched copy)", 404, "NotFound")
                return found
        obj: Obj = self.request("GET", self.path(api_version, kind, name, namespace))
        return obj

    def get_or_none(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        try:
            return self.get(api_version, kind, name, namespace)
        except NotFound:
            return None

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        *,
        fields: str | None = None,
        page_size: int = LIST_PAGE,
    ) -> list[Obj]:
        """Items of a kind (all namespaces when a namespaced kind gets no namespace), read in
        pages as kubectl does (`limit` and `continue`), so a large cluster answers in pieces."""
        sel = selector(labels)
        served = _LAGGING_READS.get()
        if self.cache is not None and served is not None and not fields and namespace:
            copied = self.cache.list(api_version, kind, namespace, sel)
            if copied is not None:
                served.count += 1
                return copied
        plural, namespaced = self._resource(api_version, kind)
        if namespaced and namespace:
            path = self.path(api_version, kind, namespace=namespace)
        else:
            path = ("/api/v1" if api_version == "v1" else f"/apis/{api_version}") + f"/{plural}"
        query = {"limit": str(page_size)}
        if sel:
            query["labelSelector"] = sel
        if fields:
            query["fieldSelector"] = fields
        items: list[Obj] = []
        while True:
            page = self.request("GET", path, query=query)
            items += page["items"]
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = token

    def create(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        """POST an object; with dry_run the server runs admission (webhooks) but stores nothing."""
        api_version, kind, _, namespace = _ref(obj)
        query = {"dryRun": "All"} if dry_run else None
        out: Obj = self.request(
            "POST", self.path(api_version, kind, "", namespace), obj, query=query
        )
        return out

    def create_all(self, objs: Iterable[Obj]) -> None:
        """POST many objects over parallel connections (a large scenario creates thousands
        of nodes and pods); the first error is raised once all requests have ended."""
        objs = list(objs)
        if objs:  # the first resolves the resource path once, before the threads start
            self.create(objs[0])
        in_parallel(self.create, objs[1:])

    def apply(self, obj: Obj, *, subresource: str = "", field_manager: str = FIELD_MANAGER) -> Obj:
        """Server-side apply (create or update the fields `field_manager` owns), forcing
        conflicts."""
        api_version, kind, name, namespace = _ref(obj)
        out: Obj = self.request(
            "PATCH",
            self.path(api_version, kind, name, namespace, subresource),
            obj,
            query={"fieldManager": field_manager, "force": "true"},
            content_type=_PATCH_TYPES["apply"],
        )
        return out

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        subresource: str = "",
        patch_type: str = "merge",
    ) -> Obj:
        """PATCH an object or a subresource (e.g. "status" of a Node)."""
        out: Obj = self.request(
            "PATCH",
            self.path(api_version, kind, name, namespace, subresource),
            patch,
            content_type=_PATCH_TYPES[patch_type],
        )
        return out

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        missing_ok: bool = True,
        grace_seconds: int | None = None,
    ) -> None:
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            self.request("DELETE", self.path(api_version, kind, name, namespace), body)
        except NotFound:
            if not missing_ok:
                raise

    def delete_all(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        *,
        grace_seconds: int | None = None,
    ) -> None:
        """Delete every object of a kind (in a namespace) matching the labels, in one call."""
        sel = selector(labels)
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        options["propagationPolicy"] = "Background"
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        self.request(
            "DELETE",
            self.path(api_version, kind, namespace=namespace),
            options,
            query={"labelSelector": sel} if sel else None,
        )

    def server_version(self) -> str:
        version: Obj = self.request("GET", "/version")
        return str(version.get("gitVersion", ""))

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.clear()
