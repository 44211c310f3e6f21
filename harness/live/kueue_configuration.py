"""Kueue's own configuration on a live cluster -> the scenario's `featureGates` and
`kueueConfig` (docs/scenario-format-v2.md), from the ConfigMap Kueue's manifests and Helm
chart mount as its --config (`kueue-manager-config`, key `controller_manager_config.yaml`).
What the contract has no words for is told to Gaps."""

from __future__ import annotations

from typing import Any

import yaml

from harness.errors import HarnessError
from harness.kube import Obj
from harness.kueue.gates import KUEUE_V0_19_GATES
from harness.kueue.versions import DEFAULT_KUEUE
from harness.live.gaps import Gaps
from harness.scenario.keypath import KeyPath
from harness.scenario.kueue_config import SECTIONS
from harness.scenario.load_kueue_config import kueue_config, quota_check_gate

CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
NOT_READ = (
    "Kueue's configuration is not read (no ConfigMap kueue-manager-config with "
    "controller_manager_config.yaml): Kueue v0.19.2's defaults are assumed"
)
MANAGER_ARGS = (
    "Kueue's manager arguments (--feature-gates) are not read: gates given there and not "
    "in its Configuration are missing"
)


def configuration(config_maps: list[Obj], gaps: Gaps) -> dict[str, Any]:
    """`featureGates` and `kueueConfig` of the scenario (either absent when Kueue runs with
    its defaults); none when no single Configuration is found."""
    found = [cm for cm in config_maps if CONFIG_KEY in (cm.get("data") or {})]
    if len(found) != 1:
        gaps.add(NOT_READ if not found else f"{NOT_READ} (found {len(found)})")
        return {}
    where = f"{found[0]['metadata'].get('namespace')}/{CONFIG_MAP}"
    try:
        cfg = yaml.safe_load(found[0]["data"][CONFIG_KEY])
    except yaml.YAMLError as err:
        gaps.add(f"ConfigMap {where}: not YAML ({err.__class__.__name__}): defaults assumed")
        return {}
    if not isinstance(cfg, dict):
        gaps.add(f"ConfigMap {where}: not a Configuration: defaults assumed")
        return {}
    gaps.add(MANAGER_ARGS)
    out: dict[str, Any] = {}
    gates = {k: v for k, v in (cfg.get("featureGates") or {}).items() if isinstance(v, bool)}
    unknown = sorted(set(gates) - set(KUEUE_V0_19_GATES))
    for gate in unknown:
        gaps.add(f"Kueue feature gate {gate}: not a v0.19.2 gate, left out")
    kept = {k: v for k, v in gates.items() if k not in unknown}
    if kept:
        out["featureGates"] = kept
    sections = {k: cfg[k] for k in SECTIONS if cfg.get(k) is not None}
    if sections:
        try:
            kueue_config(
                KeyPath(where, "kueueConfig", sections), quota_check_gate([DEFAULT_KUEUE], kept)
            )
        except HarnessError as err:
            gaps.add(f"Kueue's configuration: {err}; left out, defaults assumed")
            return out
        out["kueueConfig"] = sections
    return out
