"""Applying Kueue's rewritten manifests and proving its webhooks answer."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from harness.kube import Kube, KubeError, Obj, has_condition, poll_until, wait_for
from harness.kueue.keys import JOBSET_API as JOBSET_API
from harness.kueue.keys import QUEUE_LABEL

PROBE_JOB = "kth-webhook-probe"


def install_crds(kube: Kube, crds: Iterable[Obj], timeout: float = 60.0) -> None:
    """Apply the CRDs and wait until each is Established (served by the API server)."""
    todo = list(crds)
    # Concurrent requests: most of the time is the API server's own work per CRD.
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(kube.apply, todo))
    names = [crd["metadata"]["name"] for crd in todo]
    for name in names:
        wait_for(
            kube,
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            name,
            has_condition("Established"),
            what="Established",
            timeout=timeout,
        )


def install_webhooks(kube: Kube, configs: Iterable[Obj]) -> None:
    for config in configs:
        kube.apply(config)


def remove_webhooks(kube: Kube, configs: Iterable[Obj]) -> None:
    """Delete the webhook configurations: with failurePolicy Fail they would block every
    Job and Pod write once Kueue is gone."""
    for config in configs:
        kube.delete(config["apiVersion"], config["kind"], config["metadata"]["name"])


def probe_job(namespace: str) -> Obj:
    """A Job that Kueue's mutating webhook must return with spec.suspend=true."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": PROBE_JOB,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "kth-probe"},
        },
        "spec": {
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        },
    }


def probe_jobset(namespace: str) -> Obj:
    """A JobSet that Kueue's JobSet webhook must return with spec.suspend=true."""
    job = probe_job(namespace)
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": job["metadata"],
        "spec": {
            "suspend": False,
            "replicatedJobs": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {"spec": {"template": job["spec"]["template"]}},
                }
            ],
        },
    }


def jobset_managed(kube: Kube, namespace: str = "default") -> bool:
    """Whether JobSets are served and Kueue manages them: a dry-run queue-labelled JobSet
    comes back suspended. Clusters without the JobSet CRD (kind, existing) answer False."""
    try:
        out = kube.create(probe_jobset(namespace), dry_run=True)
    except KubeError:
        return False
    return (out.get("spec") or {}).get("suspend") is True


def wait_webhook_mutates(kube: Kube, namespace: str = "default", timeout: float = 60.0) -> None:
    """Ready means the API server calls Kueue's Job webhook and it mutates: a server-side
    dry-run create of a queue-labelled Job comes back suspended (nothing is stored)."""

    def probe() -> tuple[bool, str]:
        out = kube.create(probe_job(namespace), dry_run=True)
        suspend = (out.get("spec") or {}).get("suspend")
        return suspend is True, f"dry-run Job came back with spec.suspend={suspend}"

    poll_until(
        probe, what="Kueue's Job webhook to suspend a dry-run Job", timeout=timeout, interval=0.5
    )


def wait_jobset_webhook_mutates(kube: Kube, timeout: float = 60.0) -> None:
    """Like wait_webhook_mutates, for JobSets (a cluster that installed the JobSet CRD)."""
    poll_until(
        lambda: (jobset_managed(kube), "dry-run JobSet not suspended"),
        what="Kueue's JobSet webhook to suspend a dry-run JobSet",
        timeout=timeout,
        interval=0.5,
    )
