"""Upstream binaries for the embedded cluster, built from the Go module proxy and cached.

`binary("kube-apiserver")` returns a path: the user's own binary when its env var is set
(KTH_KUBE_APISERVER, KTH_ETCD, ...), else a cached build, built first when missing or stale.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness import progress
from harness.toolchain import cache
from harness.toolchain.gocmd import ToolchainError, go_binary, module_dir
from harness.toolchain.pins import (
    KUEUE_JOBSET,
    KUEUE_VERSION_ENV,
    PINS,
    KueueVersionError,
    Pins,
    pins_for,
    selected_pins,
)
from harness.toolchain.recipes import (
    JOBSET_MODULE,
    KUEUE_MODULE,
    KWOK_MODULE,
    LWS_MODULE,
    Component,
    components,
)

__all__ = [
    "KUEUE_JOBSET",
    "KUEUE_VERSION_ENV",
    "PINS",
    "Component",
    "KueueVersionError",
    "Pins",
    "ToolchainError",
    "binary",
    "components",
    "ensure_all",
    "jobset_module_dir",
    "kueue_module_dir",
    "kwok_module_dir",
    "lws_module_dir",
    "pins_for",
    "selected_pins",
]
logger = progress.logger("toolchain")


def _override(comp: Component) -> Path | None:
    value = os.environ.get(comp.env_var)
    if not value:
        return None
    path = Path(value).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ToolchainError(f"{comp.env_var}={value}: not an executable file")
    return path


def binary(name: str, pins: Pins = PINS) -> Path:
    """Path to the named binary, building it into the cache if needed."""
    table = components(pins)
    if name not in table:
        raise ToolchainError(f"unknown component {name!r}; known: {', '.join(table)}")
    comp = table[name]
    own = _override(comp)
    if own is not None:
        return own
    final = cache.cache_root() / comp.dirname
    target = final / comp.name
    if cache.is_current(final, comp.fingerprint(), [comp.name]):
        return target
    go_binary(comp.name, comp.env_var)  # one clear message before anything else happens
    with cache.locked(comp.dirname):
        if cache.is_current(final, comp.fingerprint(), [comp.name]):
            return target
        log = cache.cache_root() / "logs" / f"{comp.dirname}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        logger.info(f"building {comp.name} {comp.version} (log: {log})")
        started = time.monotonic()
        cache.populate(final, comp.fingerprint(), lambda out: comp.build(comp, out, log))
        took = time.monotonic() - started
        logger.info(f"built {comp.name} {comp.version} in {took:.0f}s -> {target}")
    return target


def ensure_all(pins: Pins = PINS) -> dict[str, Path]:
    """Every component's binary path, building what is missing (CI's first step)."""
    return {name: binary(name, pins) for name in components(pins)}


def kueue_module_dir(pins: Pins = PINS) -> Path:
    """Kueue's module tree: config/components/crd/bases and webhook/manifests.yaml."""
    return module_dir(KUEUE_MODULE, pins.kueue)


def kwok_module_dir(pins: Pins = PINS) -> Path:
    """KWOK's module tree: kustomize/stage/... stage YAMLs."""
    return module_dir(KWOK_MODULE, pins.kwok)


def jobset_module_dir(pins: Pins = PINS) -> Path:
    """JobSet's module tree: config/components/crd/bases (the CRD only; no controller)."""
    return module_dir(JOBSET_MODULE, pins.jobset)


def lws_module_dir(pins: Pins = PINS) -> Path:
    """LeaderWorkerSet's module tree: config/crd/bases and config/webhook."""
    return module_dir(LWS_MODULE, pins.lws)
