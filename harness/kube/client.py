"""The one object that talks to an API server: plain-dict CRUD over JSON REST.

Why not the generated `kubernetes` client: Kueue's CRDs are read as plain dicts anyway, and
the generated ApiClient's internals changed shape between releases (31 -> 37). We keep
`kubernetes.config` for kubeconfig loading (inline data, exec plugins, tokens) and send
requests with urllib3, resolving kind -> resource path through API discovery.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from harness.kube.errors import Conflict, KubeError, NotFound

Obj = dict[str, Any]
T = TypeVar("T")
FIELD_MANAGER = "kueue-tas-harness"
CREATE_WORKERS = 8  # parallel POSTs in create_all; also the connection pool size
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
    all calls have ended (urllib3's pool is thread-safe)."""
    items = list(items)
    if len(items) <= 1:
        for item in items:
            call(item)
        return
    with ThreadPoolExecutor(CREATE_WORKERS, thread_name_prefix="kth-kube") as pool:
        for future in [pool.submit(call, item) for item in items]:
            future.result()


class Kube:
    """A connection to one cluster, loaded from a kubeconfig file (never ~/.kube)."""

    def __init__(self, kubeconfig: Path, *, timeout: float = 30.0) -> None:
        cfg = k8s_client.Configuration()
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), client_configuration=cfg, persist_config=False
        )
        self.kubeconfig = kubeconfig
        self.host = str(cfg.host).rstrip("/")
        self._headers = {"Accept": "application/json", "User-Agent": FIELD_MANAGER}
        token = cfg.api_key.get("authorization") if cfg.api_key else None
        if token:
            self._headers["Authorization"] = str(token)
        self._http = urllib3.PoolManager(
            maxsize=CREATE_WORKERS,
            cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            ca_certs=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
            timeout=urllib3.Timeout(connect=5.0, read=timeout),
            retries=urllib3.Retry(
                total=3, connect=3, read=0, status=0, other=0, redirect=0, backoff_factor=0.2
            ),
        )
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

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
        headers = dict(self._headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        try:
            resp = self._http.request(method, url, body=data, headers=headers)
        except urllib3.exceptions.HTTPError as err:
            raise KubeError(f"{method} {path}: cannot reach API server {self.host}: {err}") from err
        try:
            payload: Any = json.loads(resp.data) if resp.data else None
        except ValueError:  # e.g. a plain-text 503 from a starting API server
            payload = None
        if resp.status < 400:
            return payload
        status = payload if isinstance(payload, dict) else {}
        message = f"{method} {path}: {resp.status} {status.get('message') or resp.data[:300]!r}"
        reason = str(status.get("reason", ""))
        if resp.status == 404:
            raise NotFound(message, resp.status, reason)
        if resp.status == 409:
            raise Conflict(message, resp.status, reason)
        raise KubeError(message, resp.status, reason)

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
    ) -> list[Obj]:
        """Items of a kind (all namespaces when a namespaced kind gets no namespace)."""
        plural, namespaced = self._resource(api_version, kind)
        if namespaced and namespace:
            path = self.path(api_version, kind, namespace=namespace)
        else:
            path = ("/api/v1" if api_version == "v1" else f"/apis/{api_version}") + f"/{plural}"
        sel = selector(labels)
        items: list[Obj] = self.request("GET", path, query={"labelSelector": sel} if sel else None)[
            "items"
        ]
        return items

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

    def apply(self, obj: Obj, *, subresource: str = "") -> Obj:
        """Server-side apply (create or update the fields we own), forcing conflicts."""
        api_version, kind, name, namespace = _ref(obj)
        out: Obj = self.request(
            "PATCH",
            self.path(api_version, kind, name, namespace, subresource),
            obj,
            query={"fieldManager": FIELD_MANAGER, "force": "true"},
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
        self._http.clear()
