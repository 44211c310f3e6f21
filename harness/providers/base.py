"""What every cluster provider offers, and the table that picks one by name.

A provider returns a working kubeconfig with Kueue installed, collects logs on request and
stops everything it started. Choosing one is a lookup in PROVIDERS, not an if-ladder.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.errors import HarnessError
from harness.logtail import tail

if TYPE_CHECKING:
    from harness.scenario.model import Scenario


class ClusterError(HarnessError):
    """A cluster could not be started or a component of it failed."""


class ComponentCrashed(ClusterError):
    """A process of the cluster exited; the message carries the tail of its log."""


@dataclass(frozen=True)
class ClusterHandle:
    """Where to reach a started cluster."""

    provider: str
    kubeconfig: Path
    run_dir: Path
    server: str


class Provider(Protocol):
    """A way to get a cluster with Kueue installed (v0.19.2 unless it says otherwise).

    What differs between providers and matters to a caller is a flag here, never a
    comparison of `name` in the caller.
    """

    name: str
    can_set_feature_gates: bool
    """Kueue's feature gates are the harness's to choose (it installs Kueue)."""
    can_set_kueue_config: bool
    """A scenario's kueueConfig can be merged into Kueue's Configuration
    (`kueue_overrides`), restarting Kueue's cluster when it changes."""
    shared: bool
    """Someone else's cluster: it outlives the run and may hold objects and nodes that are
    not the run's, so the runner clears before the first scenario and vets each one."""
    needs_kubeconfig: bool
    """The cluster is reached through a kubeconfig the user names (--kubeconfig)."""
    live_kueue_log: bool
    """logs()["kueue"] is the file Kueue writes as it runs, so the runner can wait for its
    lines (a fault step's reaction); elsewhere it is a copy fetched on request."""
    kueue_version: str | None
    """The Kueue version it runs (None: not the harness's to know, a cluster of the user's)."""
    one_per_worker: bool
    """Several can run at once on one machine, one per pytest-xdist worker (-n N)."""
    can_upgrade_kueue: bool
    """upgrade_kueue works: the harness runs Kueue's process and can replace it."""

    def start(self) -> ClusterHandle:
        """Bring the cluster up; on failure everything started is stopped again."""
        ...

    def logs(self) -> dict[str, Path]:
        """Log file per component (e.g. "kueue", "kube-apiserver")."""
        ...

    def log_tail(self, component: str, n: int = 50) -> str:
        """The last n lines of a component's log, for failure reports."""
        ...

    def check(self) -> None:
        """Raise ComponentCrashed if a component has died since start."""
        ...

    def scenario_problem(self, scenario: Scenario) -> str | None:
        """Why this cluster could not show the scenario's outcome as its own, or None."""
        ...

    def pids(self) -> dict[str, int]:
        """Component name -> process id, for the CPU each scenario costs ({}: not ours)."""
        ...

    def upgrade_kueue(self, version: str) -> None:
        """Replace the running Kueue by a newer version, keeping every object (the
        `upgrade-kueue` step); only where can_upgrade_kueue."""
        ...

    def reconfigure_kueue(
        self, feature_gates: Mapping[str, bool], kueue_overrides: Mapping[str, Any]
    ) -> bool:
        """Restart Kueue alone with these gates and Configuration overrides; False when
        this cluster cannot (the caller then restarts the whole cluster)."""
        ...

    def stop(self) -> None:
        """Stop everything (idempotent); webhooks are removed before Kueue stops."""
        ...


class ProviderBase:
    """What providers share: the flags of a cluster the harness starts itself, and log_tail
    over logs(). A provider overrides a flag only where it differs."""

    name = ""
    can_set_feature_gates = True
    can_set_kueue_config = False
    shared = False
    needs_kubeconfig = False
    live_kueue_log = False
    kueue_version: str | None = None
    one_per_worker = False
    can_upgrade_kueue = False

    def logs(self) -> dict[str, Path]:
        raise NotImplementedError

    def upgrade_kueue(self, version: str) -> None:
        raise ClusterError(f"the {self.name} cluster cannot replace its Kueue")

    def reconfigure_kueue(
        self, feature_gates: Mapping[str, bool], kueue_overrides: Mapping[str, Any]
    ) -> bool:
        return False

    def log_tail(self, component: str, n: int = 50) -> str:
        logs = self.logs()
        if component not in logs:
            raise ClusterError(f"no component {component!r}; known: {', '.join(logs) or 'none'}")
        return tail(logs[component], n)

    def scenario_problem(self, scenario: Scenario) -> str | None:
        """None: every node of a cluster the harness started is the run's or cordoned."""
        return None

    def pids(self) -> dict[str, int]:
        """Component name -> process id of the processes the harness runs for it (none:
        a cluster somewhere else)."""
        return {}


PROVIDERS: dict[str, str] = {
    "local": "harness.providers.local.cluster:LocalCluster",
    "kind": "harness.providers.kind.cluster:KindCluster",
    "existing": "harness.providers.existing.cluster:ExistingCluster",
}
"""Provider name -> "module:Class"; imported on lookup so unused providers cost nothing."""


def provider_class(name: str) -> type[Any]:
    """The provider class registered under `name`."""
    if name not in PROVIDERS:
        raise ClusterError(f"unknown provider {name!r}; known: {', '.join(sorted(PROVIDERS))}")
    module, _, attr = PROVIDERS[name].partition(":")
    cls: type[Any] = getattr(importlib.import_module(module), attr)
    return cls


def create_provider(name: str, **options: Any) -> Provider:
    """An instance of the named provider (not started yet)."""
    provider: Provider = provider_class(name)(**options)
    return provider
