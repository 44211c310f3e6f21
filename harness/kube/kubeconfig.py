"""Kubeconfig files -> what one connection needs: server, TLS, proxy and user credentials.

Read the way kubectl (client-go's clientcmd) reads them, so a real cluster's kubeconfig works
unchanged: several files merge (the first file that names a cluster, user or context wins;
$KUBECONFIG lists them), relative paths are relative to the file that holds them, and the
same contradictions are refused (clientcmd/validation.go): a CA given as file and as data, a
CA together with insecure-skip-tls-verify, a client certificate without its key, a bearer
token together with basic auth. Every problem is one line naming the file and the key.

Users may authenticate with a token, a tokenFile (re-read, as client-go does), basic auth, a
client certificate, or an exec credential plugin (harness.kube.auth runs it). The removed
in-tree auth providers (gcp, azure) and oidc's refresh are not supported: an exec plugin
(e.g. kubelogin, gke-gcloud-auth-plugin) does the same.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import InputError
from harness.scenario.keypath import KeyPath, kind

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
"""What client-go v0.36 accepts (v1alpha1 was removed in 1.24)."""
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
"""The cluster extension whose content the plugin gets as spec.cluster.config."""


class KubeconfigError(InputError):
    """A kubeconfig is unreadable, malformed, or names a context, cluster or user it lacks."""


@dataclass(frozen=True)
class ExecPlugin:
    """users[].user.exec: a command that prints an ExecCredential (token or client cert)."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    api_version: str
    interactive_mode: str
    install_hint: str
    cluster: Mapping[str, Any] | None
    """spec.cluster for the plugin (provideClusterInfo), else None."""
    where: str
    """`FILE: users[name=...].user.exec`, for messages."""


@dataclass(frozen=True)
class Access:
    """Everything needed to reach and authenticate to one cluster."""

    server: str
    ca_pem: bytes | None = None
    """None: the system's trust store."""
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    token: str | None = None
    token_file: Path | None = None
    basic: tuple[str, str] | None = None
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    exec_plugin: ExecPlugin | None = None
    impersonate: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """HTTP header -> values (Impersonate-User, Impersonate-Group, ...)."""
    namespace: str = "default"
    context: str = ""
    user: str = ""
    source: str = ""
    """The kubeconfig file(s), for messages."""


def files_from(kubeconfig: str | os.PathLike[str] | None) -> list[Path]:
    """The kubeconfig files to read: the one given, else $KUBECONFIG's list. Never
    ~/.kube/config: the harness must not pick a cluster by accident."""
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    listed = [p for p in (os.environ.get("KUBECONFIG") or "").split(os.pathsep) if p]
    if not listed:
        raise KubeconfigError(
            "kubeconfig",
            "",
            "no kubeconfig given: pass --kubeconfig FILE or set KUBECONFIG "
            "(~/.kube/config is never read by default)",
        )
    return [Path(p).expanduser() for p in listed]


def load(files: Sequence[Path], context: str | None = None) -> Access:
    """The Access of `context` (default: current-context) from the merged files."""
    merged: dict[str, dict[str, KeyPath]] = {"clusters": {}, "users": {}, "contexts": {}}
    current = ""
    for path in files:
        doc = _read(path)
        top = doc.value
        for section, entries in merged.items():
            for entry in _entries(doc, section):
                entries.setdefault(entry.value["name"], entry)
        if not current and isinstance(top.get("current-context"), str):
            current = top["current-context"]
    source = ", ".join(str(p) for p in files)
    name = context or current
    if not name:
        raise KubeconfigError(source, "current-context", "not set: give --context NAME")
    if name not in merged["contexts"]:
        known = ", ".join(sorted(merged["contexts"])) or "none"
        raise KubeconfigError(source, "contexts", f"no context {name!r} (contexts: {known})")
    ctx_at = merged["contexts"][name]
    ctx = _body(ctx_at, "context")
    cluster_at = _named(merged, "clusters", ctx, ctx_at)
    user_name = ctx.value.get("user") or ""
    user_at = merged["users"].get(user_name) if user_name else None
    if user_name and user_at is None:
        ctx.child("user", user_name).fail(f"no user named {user_name!r} in users")
    cluster_body = _body(cluster_at, "cluster")
    cluster = _cluster(cluster_body)
    extension = _exec_extension(cluster_body)
    user = _user(_body(user_at, "user"), cluster, extension) if user_at is not None else {}
    namespace = ctx.value.get("namespace") or "default"
    return Access(
        **cluster, **user, namespace=str(namespace), context=name, user=user_name, source=source
    )


def _read(path: Path) -> KeyPath:
    file = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise KubeconfigError(file, "", f"cannot read kubeconfig: {err}") from None
    except yaml.YAMLError as err:
        raise KubeconfigError(file, "", f"not YAML: {str(err).splitlines()[0]}") from None
    if data is None:
        data = {}
    at = KeyPath(file, "", data, KubeconfigError)
    if not isinstance(data, dict):
        at.fail(f"a kubeconfig is a mapping, got {kind(data)}")
    return at


def _entries(doc: KeyPath, section: str) -> list[KeyPath]:
    raw = doc.value.get(section)
    if raw is None:
        return []
    out = []
    for item in doc.child(section, raw).items():
        if not isinstance(item.value, dict) or not isinstance(item.value.get("name"), str):
            item.fail("needs a name")
        out.append(KeyPath(doc.file, f"{section}[name={item.value['name']}]", item.value,
                           KubeconfigError))  # fmt: skip
    return out


def _body(entry: KeyPath, key: str) -> KeyPath:
    value = entry.value.get(key) or {}
    at = entry.child(key, value)
    if not isinstance(value, dict):
        at.fail(f"must be a mapping, got {kind(value)}")
    return at


def _named(
    merged: Mapping[str, Mapping[str, KeyPath]], section: str, ctx: KeyPath, ctx_at: KeyPath
) -> KeyPath:
    key = section[:-1]
    name = ctx.value.get(key)
    if not isinstance(name, str) or not name:
        ctx.child(key, name).fail("missing: the context must name a cluster")
    if name not in merged[section]:
        ctx.child(key, name).fail(f"no {key} named {name!r} in {section}")
    return merged[section][name]


def _file_or_data(at: KeyPath, file_key: str, data_key: str) -> bytes | None:
    """client-go's FileOrData: base64 `*-data` inline, or a file relative to the kubeconfig."""
    has_file, has_data = bool(at.value.get(file_key)), bool(at.value.get(data_key))
    if has_file and has_data:
        at.child(file_key, None).fail(f"{data_key} and {file_key} are both specified; give one")
    if has_data:
        try:
            return base64.b64decode(str(at.value[data_key]), validate=True)
        except (binascii.Error, ValueError):
            at.child(data_key, None).fail("is not base64")
    if has_file:
        path = _relative(at, str(at.value[file_key]))
        try:
            return path.read_bytes()
        except OSError as err:
            at.child(file_key, str(path)).fail(f"cannot read {path}: {err.strerror}")
    return None


def _relative(at: KeyPath, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(at.file).parent / path


def _cluster(at: KeyPath) -> dict[str, Any]:
    server = at.value.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        at.child("server", server).fail("must be an https:// (or http://) URL")
    ca = _file_or_data(at, "certificate-authority", "certificate-authority-data")
    insecure = at.value.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        at.child("insecure-skip-tls-verify", insecure).fail(
            f"must be true or false, got {kind(insecure)}"
        )
    if insecure and ca is not None:
        at.child("insecure-skip-tls-verify", insecure).fail(
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    proxy = at.value.get("proxy-url") or None
    if proxy is not None and not str(proxy).startswith(("http://", "https://", "socks5://")):
        at.child("proxy-url", proxy).fail("must be an http://, https:// or socks5:// URL")
    return {
        "server": server.rstrip("/"),
        "ca_pem": ca,
        "insecure": insecure,
        "tls_server_name": at.value.get("tls-server-name") or None,
        "proxy_url": str(proxy) if proxy else None,
    }


def _exec_extension(at: KeyPath) -> Any:
    """The cluster's client.authentication.k8s.io/exec extension (the plugin's
    spec.cluster.config), or None."""
    for item in at.value.get("extensions") or []:
        if isinstance(item, dict) and item.get("name") == EXEC_EXTENSION:
            return item.get("extension")
    return None


def _user(at: KeyPath, cluster: Mapping[str, Any], extension: Any) -> dict[str, Any]:
    user = at.value
    if user.get("auth-provider"):
        provider = (user["auth-provider"] or {}).get("name", "")
        at.child("auth-provider", None).fail(
            f"auth provider {provider!r} is not supported (kubectl removed the in-tree ones in "
            "1.26): use an exec credential plugin such as kubelogin or gke-gcloud-auth-plugin"
        )
    out: dict[str, Any] = {}
    token = user.get("token") or None
    token_file = _relative(at, str(user["tokenFile"])) if user.get("tokenFile") else None
    if (token or token_file) and (user.get("username") or user.get("password")):
        at.fail("username/password or bearer token may be set, but not both")
    if user.get("username") or user.get("password"):
        out["basic"] = (str(user.get("username") or ""), str(user.get("password") or ""))
    out["token"], out["token_file"] = (str(token) if token else None), token_file
    cert = _file_or_data(at, "client-certificate", "client-certificate-data")
    key = _file_or_data(at, "client-key", "client-key-data")
    if (cert is None) != (key is None):
        missing = "client-key-data or client-key" if key is None else "client-certificate(-data)"
        at.fail(f"{missing} must be specified to use the clientCert authentication method")
    out["cert_pem"], out["key_pem"] = cert, key
    if user.get("exec"):
        out["exec_plugin"] = _exec(at.child("exec", user["exec"]), cluster, extension)
    out["impersonate"] = _impersonate(at)
    return out


def _exec(at: KeyPath, cluster: Mapping[str, Any], extension: Any) -> ExecPlugin:
    if not isinstance(at.value, dict):
        at.fail(f"must be a mapping, got {kind(at.value)}")
    command = at.value.get("command")
    if not isinstance(command, str) or not command:
        at.child("command", command).fail("missing: the plugin's command")
    if os.sep in command and not Path(command).is_absolute():
        command = str(_relative(at, command))  # clientcmd resolves paths with a separator
    api_version = at.value.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        at.child("apiVersion", api_version).fail(
            f"must be one of {', '.join(EXEC_API_VERSIONS)}, got {api_version!r}"
        )
    mode = at.value.get("interactiveMode") or ("" if api_version.endswith("/v1") else "IfAvailable")
    if mode not in INTERACTIVE_MODES:
        at.child("interactiveMode", mode or None).fail(
            f"must be one of {', '.join(INTERACTIVE_MODES)} (required for {api_version})"
        )
    env = {}
    for item in at.child("env", at.value.get("env") or []).items():
        if not isinstance(item.value, dict) or not isinstance(item.value.get("name"), str):
            item.fail("needs a name and a value")
        env[item.value["name"]] = str(item.value.get("value") or "")
    args = at.value.get("args") or []
    if not isinstance(args, list):
        at.child("args", args).fail(f"must be a list, got {kind(args)}")
    return ExecPlugin(
        command=command,
        args=tuple(str(a) for a in args),
        env=env,
        api_version=api_version,
        interactive_mode=mode,
        install_hint=str(at.value.get("installHint") or ""),
        cluster=_exec_cluster(cluster, extension) if at.value.get("provideClusterInfo") else None,
        where=f"{at.file}: {at.path}",
    )


def _exec_cluster(cluster: Mapping[str, Any], extension: Any) -> dict[str, Any]:
    """ExecCredential spec.cluster (client.authentication.k8s.io Cluster)."""
    out: dict[str, Any] = {"server": cluster["server"]}
    if cluster["tls_server_name"]:
        out["tls-server-name"] = cluster["tls_server_name"]
    if cluster["insecure"]:
        out["insecure-skip-tls-verify"] = True
    if cluster["ca_pem"]:
        out["certificate-authority-data"] = base64.b64encode(cluster["ca_pem"]).decode()
    if cluster["proxy_url"]:
        out["proxy-url"] = cluster["proxy_url"]
    if extension is not None:
        out["config"] = extension
    return out


IMPERSONATE = {
    "as": "Impersonate-User",
    "as-uid": "Impersonate-Uid",
    "as-groups": "Impersonate-Group",
}


def _impersonate(at: KeyPath) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for key, header in IMPERSONATE.items():
        value = at.value.get(key)
        if value:
            out[header] = tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)
    for key, values in (at.value.get("as-user-extra") or {}).items():
        out[f"Impersonate-Extra-{key}"] = tuple(str(v) for v in values)
    return out
