"""LeaderWorkerSet's manifests from its Go module, rewritten for an LWS controller on 127.0.0.1.

Kueue v0.19.2 builds one Workload per LeaderWorkerSet group (pkg/controller/jobs/
leaderworkerset) from the LWS object alone; the LWS controller (sigs.k8s.io/lws v0.8.0, the
newest the module proxy serves) makes the groups' StatefulSets and pods, which Kueue's pod
webhook gates and its TAS ungater places. Its config/webhook kustomization has the same shape
as JobSet's (JSON patches replacing `/webhooks/N`, config/default's `lws-` name prefix), so the
same reading serves both (harness.install.jobset.kustomized_webhooks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.install.controller_config import controller_config
from harness.install.jobset import kustomized_webhooks
from harness.install.manifests import ManifestError, load_all
from harness.kube import Kube, KubeError, poll_until
from harness.kueue.keys import QUEUE_LABEL

Obj = dict[str, Any]
LWS_API = "leaderworkerset.x-k8s.io/v1"
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
"""Kueue's integration name (integrations.frameworks); it implicitly enables "pod"."""
SUSPENDED_BY_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
"""The annotation Kueue's LeaderWorkerSet webhook puts on a queued LWS's pod templates in
every version (pkg/controller/jobs/pod/constants SuspendedByParentAnnotation)."""
CRD = Path("config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml")
WEBHOOK_DIR = Path("config/webhook")
NAME_PREFIX = "lws-"


def crds(lws_dir: Path) -> list[Obj]:
    """The LeaderWorkerSet CRD as published: one served version (v1), so the kustomization's
    conversion webhook patch has nothing to convert and is left out."""
    path = lws_dir / CRD
    if not path.is_file():
        raise ManifestError(f"{path}: LeaderWorkerSet CRD not found in the LWS module")
    return [d for d in load_all(path) if d.get("kind") == "CustomResourceDefinition"]


def webhook_configurations(lws_dir: Path, base_url: str, ca_b64: str) -> list[Obj]:
    """LWS's Mutating and Validating webhook configurations, pointed at base_url."""
    return kustomized_webhooks(lws_dir / WEBHOOK_DIR, NAME_PREFIX, base_url, ca_b64)


def config(*, health_port: int, webhook_port: int, cert_dir: Path) -> Obj:
    """LWS's Configuration for a local process (harness/install/controller_config.py)."""
    return controller_config(
        "config.lws.x-k8s.io/v1alpha1",
        health_port=health_port,
        webhook_port=webhook_port,
        cert_dir=cert_dir,
    )


def probe(namespace: str) -> Obj:
    """A queue-labelled LeaderWorkerSet without networkConfig: LWS's webhook defaults it
    (subdomainPolicy Shared), Kueue's marks the worker template as suspended by its parent
    (SUSPENDED_BY_PARENT; Kueue v0.17.1 does not copy the queue label there, v0.18 does)."""
    pod = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {
            "generateName": "kth-probe-",
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "kth-probe"},
        },
        "spec": {"leaderWorkerTemplate": {"size": 1, "workerTemplate": {"spec": pod}}},
    }


def webhooks_answer(kube: Kube, namespace: str = "default") -> tuple[bool, str]:
    """Whether both webhooks mutate a dry-run LeaderWorkerSet (nothing is stored)."""
    try:
        out = kube.create(probe(namespace), dry_run=True)
    except KubeError as err:
        return False, str(err)
    spec = out.get("spec") or {}
    policy = (spec.get("networkConfig") or {}).get("subdomainPolicy")
    worker = spec["leaderWorkerTemplate"]["workerTemplate"]
    parent = ((worker.get("metadata") or {}).get("annotations") or {}).get(SUSPENDED_BY_PARENT)
    return policy is not None and parent is not None, (
        f"dry-run LeaderWorkerSet came back with subdomainPolicy={policy} (LWS's webhook), "
        f"worker template {SUSPENDED_BY_PARENT}={parent} (Kueue's)"
    )


def wait_webhooks(kube: Kube, timeout: float = 60.0) -> None:
    """Ready means the API server calls LWS's and Kueue's LeaderWorkerSet webhooks."""
    poll_until(
        lambda: webhooks_answer(kube),
        what="LWS's and Kueue's webhooks to default a dry-run LeaderWorkerSet",
        timeout=timeout,
        interval=0.5,
    )
