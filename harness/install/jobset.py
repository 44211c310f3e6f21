"""JobSet's manifests from its Go module, rewritten for a JobSet controller on 127.0.0.1.

Kueue v0.19.2 is built against JobSet v0.12.0 (its go.mod); with the JobSet controller
running, a workload with several pod sets is a real JobSet whose pods are created, ungated by
Kueue's TAS and bound by kube-scheduler, like a Job's. As for Kueue, what kustomize would do
(config/components/webhook: JSON patches that give the pod webhooks an objectSelector, and
config/default's `jobset-` name prefix) is read from the module, not restated.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from harness.install.controller_config import controller_config
from harness.install.manifests import ManifestError, load_all, url_config
from harness.kube import Kube, KubeError, poll_until

Obj = dict[str, Any]
CRD = Path("config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")
WEBHOOK_DIR = Path("config/components/webhook")
NAME_PREFIX = "jobset-"


def crds(jobset_dir: Path) -> list[Obj]:
    """The JobSet CRD, as published (no conversion webhook)."""
    path = jobset_dir / CRD
    if not path.is_file():
        raise ManifestError(f"{path}: JobSet CRD not found in the JobSet module")
    return [d for d in load_all(path) if d.get("kind") == "CustomResourceDefinition"]


def _patched(doc: Obj, ops: Iterable[Obj], where: Path) -> None:
    """Apply the kustomization's JSON patches; JobSet's only replace `/webhooks/N`."""
    for op in ops:
        parts = str(op.get("path", "")).strip("/").split("/")
        if op.get("op") != "replace" or len(parts) != 2 or parts[0] != "webhooks":
            raise ManifestError(f"{where}: unexpected patch {op.get('op')} {op.get('path')}")
        doc["webhooks"][int(parts[1])] = op["value"]


def webhook_configurations(jobset_dir: Path, base_url: str, ca_b64: str) -> list[Obj]:
    """JobSet's Mutating and Validating webhook configurations, pointed at base_url."""
    return kustomized_webhooks(jobset_dir / WEBHOOK_DIR, NAME_PREFIX, base_url, ca_b64)


def kustomized_webhooks(directory: Path, prefix: str, base_url: str, ca_b64: str) -> list[Obj]:
    """A kubebuilder webhook kustomization (manifests.yaml plus JSON patches replacing
    `/webhooks/N`) as kustomize would render it, names prefixed, pointed at base_url
    (JobSet's and LeaderWorkerSet's have this shape)."""
    (kust,) = load_all(directory / "kustomization.yaml")
    docs = [d for d in load_all(directory / "manifests.yaml") if "webhooks" in d]
    by_kind = {d["kind"]: d for d in docs}
    for patch in kust.get("patches") or []:
        kind = (patch.get("target") or {}).get("kind")
        if kind not in by_kind:
            raise ManifestError(f"{directory}: patch for unknown target {patch.get('target')}")
        ops = yaml.safe_load((directory / patch["path"]).read_text()) or []
        _patched(by_kind[kind], ops, directory / patch["path"])
    for doc in docs:
        doc["metadata"]["name"] = prefix + doc["metadata"]["name"]
        for wh in doc["webhooks"]:
            path = (wh["clientConfig"].get("service") or {}).get("path")
            if not path:
                raise ManifestError(f"{directory}: webhook {wh['name']} has no service path")
            wh["clientConfig"] = url_config(base_url, path, ca_b64)
    return docs


def config(*, health_port: int, webhook_port: int, cert_dir: Path) -> Obj:
    """JobSet's Configuration for a local process (harness/install/controller_config.py)."""
    return controller_config(
        "config.jobset.x-k8s.io/v1alpha1",
        health_port=health_port,
        webhook_port=webhook_port,
        cert_dir=cert_dir,
    )


def webhook_defaults(kube: Kube, probe: Obj) -> tuple[bool, str]:
    """Whether JobSet's own webhook (hence its controller, the same process) answers: a
    dry-run JobSet without a success policy comes back with the default one."""
    try:
        out = kube.create(probe, dry_run=True)
    except KubeError as err:
        return False, str(err)
    policy = (out.get("spec") or {}).get("successPolicy")
    return policy is not None, f"dry-run JobSet came back with successPolicy={policy}"


def wait_webhook_defaults(kube: Kube, probe: Obj, timeout: float = 60.0) -> None:
    """Ready means the API server calls JobSet's own webhook: a server-side dry-run JobSet
    (`probe`, without a success policy) comes back with the default one (nothing stored)."""

    poll_until(
        lambda: webhook_defaults(kube, probe),
        what="JobSet's webhook to default a dry-run JobSet",
        timeout=timeout,
    )
