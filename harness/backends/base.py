"""Where a scenario runs for real: the small interface every backend offers, and the lookup.

A backend takes a validated Scenario and reports what Kueue did with each workload, in the
same Outcome form the fit model predicts. `sim` runs Kueue's scheduler in process; `local`,
`kind` and `existing` run Jobs on a real API server with real Kueue.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.results.observation import Observation
from harness.scenario.model import Scenario


class BackendError(HarnessError):
    """A backend could not run a scenario (not a mismatch: an infrastructure failure)."""


class Unsupported(HarnessError):
    """The backend cannot show what this scenario asks (the reason says what and why)."""


class Backend(Protocol):
    name: str

    def run(self, scenario: Scenario) -> Observation:
        """Run the scenario; raise Unsupported for what this backend cannot show."""
        ...

    def close(self) -> None:
        """Release everything the backend started (idempotent)."""
        ...


BACKENDS: dict[str, str] = {
    "local": "harness.runner.backend:ClusterBackend",
    "kind": "harness.runner.backend:ClusterBackend",
    "existing": "harness.runner.backend:ClusterBackend",
    "sim": "harness.backends.sim:SimBackend",
}
"""Backend name -> "module:Class"; imported on first use so unused ones cost nothing."""


BACKEND_HELP = (
    "local: an embedded API server with real Kueue; kind: a kind cluster (needs Docker); "
    "existing: a cluster of yours with Kueue (needs --kubeconfig); "
    "sim: Kueue's scheduler in process"
)


def add_backend_options(
    add: Callable[..., object], *, cluster_default: str | None, cluster_help: str
) -> None:
    """Declare the options that choose and shape a backend, for argparse (`add_argument`)
    and for pytest (`addoption`) alike: `python -m harness run` and `pytest` take the same."""
    default = cluster_default or "none"
    add(
        "--cluster",
        choices=tuple(BACKENDS),
        default=cluster_default,
        help=f"{cluster_help}; {BACKEND_HELP} (default: {default})",
    )
    add(
        "--keep-cluster",
        action="store_true",
        default=False,
        help="leave the cluster running afterwards and print how to reach it "
        "(default: off, the cluster is stopped)",
    )
    add(
        "--feature-gates",
        default="",
        help="extra Kueue feature gates for the cluster, e.g. A=true,B=false "
        "(default: none, Kueue v0.19.2's defaults plus each scenario's featureGates)",
    )
    add(
        "--kueue-version",
        default=None,
        help="the Kueue version the embedded cluster (--cluster=local) or the sim runs: "
        "v0.17.1, v0.18.2 or v0.19.2 (build it first: python -m harness build binaries sim "
        "--kueue-version V); "
        "it overrides each scenario's kueue: (default: the scenario's kueue: when it names one "
        "of these, else v0.19.2)",
    )
    add(
        "--kubeconfig",
        default=None,
        help="kubeconfig of the cluster for --cluster=existing (default: none)",
    )


def backend_options(get: Callable[[str], Any]) -> dict[str, Any]:
    """create_backend's options from parsed options (`get` takes the option's dest name)."""
    return {
        "keep": get("keep_cluster"),
        "feature_gates": get("feature_gates"),
        "kubeconfig": get("kubeconfig"),
        "kueue_version": get("kueue_version"),
    }


def kueue_versions(backend: str) -> tuple[str, ...]:
    """The Kueue versions the backend runs: its provider's `kueue_versions`, or for a backend
    without a provider (the sim) the backend class's own; without either (kind, existing)
    the pinned v0.19.2."""
    from harness.providers.base import ClusterError, provider_class
    from harness.toolchain import PINS

    try:
        versions: tuple[str, ...] = getattr(provider_class(backend), "kueue_versions", ())
    except ClusterError:  # no provider behind it: the backend itself says
        versions = getattr(_backend_class(backend), "kueue_versions", ())
    return versions or (PINS.kueue,)


def kueue_version_for(backend: str, scenario_version: str | None) -> str | None:
    """The version a scenario runs on without --kueue-version: its `kueue:` when the backend
    starts that version, else None (the default)."""
    if scenario_version is not None and scenario_version in kueue_versions(backend):
        return scenario_version
    return None


def select_kueue_version(backend: str, version: str | None) -> None:
    """Check that the backend can start `version` (None: its default). Refuses, in one line,
    a version the toolchain does not pin or the backend cannot start; create_backend passes
    the version on to the backend, which hands it to its provider."""
    if version is None:
        return
    from harness.toolchain import pins_for

    pins_for(version)  # KueueVersionError names the supported versions
    versions = kueue_versions(backend)
    if version not in versions:
        raise BackendError(
            f"--kueue-version {version}: --cluster={backend} runs Kueue "
            f"{', '.join(versions)} only; the embedded cluster (--cluster=local) runs more"
        )


def _backend_class(name: str) -> Any:
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    module, _, attr = BACKENDS[name].partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise BackendError(f"backend {name!r} is not available: {err}") from None


def create_backend(name: str, **options: Any) -> Backend:
    cls = _backend_class(name)
    select_kueue_version(name, options.get("kueue_version"))
    backend: Backend = cls(name=name, **options)
    return backend
