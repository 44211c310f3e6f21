"""Kueue's manifests, read from its Go module tree and rewritten for a Kueue on 127.0.0.1.

What we reproduce from kustomize (config/components/{crd,webhook}/kustomization.yaml) is
read from those files rather than restated here, so a new Kueue version brings its own list:

- Webhooks: `clientConfig.service` becomes `clientConfig.url: https://127.0.0.1:PORT/<path>`
  (Endpoints refuse loopback addresses, so a Service cannot reach a local process), with the
  run's CA as caBundle; the kustomization's namespaceSelector exclusions
  (kube-system, kueue-system) are applied to the webhooks it names; configs get the
  `kueue-` prefix of config/default.
- CRDs: conversion strategy **Webhook** for the CRDs whose `webhook_in_*` patch the
  kustomization enables (localqueues, clusterqueues, cohorts, workloads, multikueueclusters).
  Chosen deliberately over strategy None: the controller-manager's namespace and garbage
  collectors list every served version, and with None a v1beta1 read would relabel v1beta2
  data instead of converting it, unlike any real install. The price is that Kueue must be
  up whenever v1beta1 is touched, which holds because Kueue stops first at teardown only
  after the harness's own objects are gone.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

Obj = dict[str, Any]
CRD_DIR = Path("config/components/crd")
WEBHOOK_DIR = Path("config/components/webhook")
NAME_PREFIX = "kueue-"
_TARGET = re.compile(r"^webhooks\.\[name=([^\]]+)\]\.namespaceSelector$")


class ManifestError(HarnessError):
    """Kueue's module tree does not look the way this harness expects."""


# libyaml's loader when present: Kueue's CRDs are large (pure Python takes seconds).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_all(path: Path) -> list[Obj]:
    try:
        return [d for d in yaml.load_all(path.read_text(), Loader=_LOADER) if d]
    except (OSError, yaml.YAMLError) as err:
        raise ManifestError(f"{path}: cannot read: {err}") from err


def url_config(base_url: str, path: str, ca_b64: str) -> Obj:
    return {"url": base_url.rstrip("/") + path, "caBundle": ca_b64}


def namespace_selectors(kustomization: Path) -> dict[str, Obj]:
    """Webhook name -> namespaceSelector, as the webhook kustomization's patches and
    replacements would set them."""
    (kust,) = load_all(kustomization)
    from_patches: dict[str, Obj] = {}
    for patch in kust.get("patches") or []:
        for doc in yaml.safe_load_all(patch.get("patch", "")):
            for wh in (doc or {}).get("webhooks") or []:
                if "namespaceSelector" in wh:
                    from_patches[wh["name"]] = wh["namespaceSelector"]
    result = dict(from_patches)
    for rep in kust.get("replacements") or []:
        match = _TARGET.match(rep.get("source", {}).get("fieldPath", ""))
        if not match or match.group(1) not in from_patches:
            raise ManifestError(f"{kustomization}: unexpected replacement source {rep['source']}")
        sel = from_patches[match.group(1)]
        for target in rep.get("targets") or []:
            for field_path in target.get("fieldPaths") or []:
                hit = _TARGET.match(field_path)
                if not hit:
                    raise ManifestError(f"{kustomization}: unexpected fieldPath {field_path}")
                result[hit.group(1)] = sel
    if not result:
        raise ManifestError(f"{kustomization}: no namespaceSelector exclusions found")
    return result


def webhook_configurations(module_dir: Path, base_url: str, ca_b64: str) -> list[Obj]:
    """The Mutating and Validating webhook configurations, pointed at base_url."""
    directory = module_dir / WEBHOOK_DIR
    selectors = namespace_selectors(directory / "kustomization.yaml")
    docs = load_all(directory / "manifests.yaml")
    seen: set[str] = set()
    for doc in docs:
        doc["metadata"]["name"] = NAME_PREFIX + doc["metadata"]["name"]
        for wh in doc.get("webhooks") or []:
            service = wh["clientConfig"].get("service") or {}
            if "path" not in service:
                raise ManifestError(f"{directory}: webhook {wh['name']} has no service path")
            wh["clientConfig"] = url_config(base_url, service["path"], ca_b64)
            if wh["name"] in selectors:
                wh["namespaceSelector"] = copy.deepcopy(selectors[wh["name"]])
                seen.add(wh["name"])
    missing = set(selectors) - seen
    if missing:
        raise ManifestError(f"{directory}: kustomization names unknown webhooks {sorted(missing)}")
    return docs


def crds(module_dir: Path, base_url: str, ca_b64: str) -> list[Obj]:
    """Kueue's CRDs (the kustomization's resources) with conversion webhooks pointed at
    base_url/convert for the CRDs whose webhook patch is enabled."""
    directory = module_dir / CRD_DIR
    (kust,) = load_all(directory / "kustomization.yaml")
    conversions: dict[str, Obj] = {}
    for patch in kust.get("patches") or []:
        for doc in load_all(directory / patch["path"]):
            conversion = (doc.get("spec") or {}).get("conversion")
            if conversion:
                conversions[doc["metadata"]["name"]] = conversion
    out = []
    for resource in kust.get("resources") or []:
        for crd in load_all(directory / resource):
            conv = conversions.pop(crd["metadata"]["name"], None)
            if conv is not None:
                conv = copy.deepcopy(conv)
                path = conv["webhook"]["clientConfig"].get("service", {}).get("path", "/convert")
                conv["webhook"]["clientConfig"] = url_config(base_url, path, ca_b64)
                crd["spec"]["conversion"] = conv
            out.append(crd)
    if conversions:
        raise ManifestError(f"{directory}: conversion patches for unknown CRDs {conversions}")
    return out


def _merge(base: Obj, extra: Mapping[str, Any]) -> Obj:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


# batch/job for one-pod-set workloads; JobSet for several pod sets (its CRD is installed,
# its controller is not: Kueue's webhook, Workload and admission are all we need of it).
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")


def kueue_config(
    *,
    health_port: int,
    webhook_port: int,
    cert_dir: Path,
    visibility_port: int | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    overrides: Mapping[str, Any] | None = None,
    namespace: str = "kueue-system",
) -> Obj:
    """Kueue's Configuration for a local process: our certs, TAS on, batch/job and JobSet,
    no metrics server, no leader election. The visibility server (VisibilityOnDemand, Beta
    and on by default since Kueue v0.9) listens on 127.0.0.1:visibility_port; without a
    port (or with the gate off) it stays off, as Kueue would otherwise listen on 0.0.0.0:8082
    (apis/config/v1beta2/defaults.go), which parallel clusters cannot share."""
    gates = {"TopologyAwareScheduling": True, **(feature_gates or {})}
    gates.setdefault("VisibilityOnDemand", visibility_port is not None)
    if gates["VisibilityOnDemand"] and visibility_port is None:
        raise ManifestError(
            "feature gate VisibilityOnDemand needs a loopback port for Kueue's visibility "
            "server (kueue_config(visibility_port=...))"
        )
    cfg: Obj = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": namespace,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "featureGates": gates,
    }
    if gates["VisibilityOnDemand"]:
        cfg["visibilityServer"] = {"bindAddress": "127.0.0.1", "bindPort": visibility_port}
    return _merge(cfg, overrides or {})
