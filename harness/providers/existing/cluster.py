"""Provider "existing": scenarios on a cluster someone else runs, reached by kubeconfig/context.

It refuses to start, in one line, when Kueue is missing, its webhook does not answer or TAS
is off (kueuecheck.py). It creates only KWOK nodes and objects labelled with its run id, and
stop() deletes exactly those. The user's kubeconfig is read, never written: a chosen
context is pinned in a copy inside the run directory, whose relative paths (token file, exec
plugin, certificates) are made absolute against the user's kubeconfig's folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness import progress
from harness.kube import (
    RUN_LABEL,
    Kube,
    WaitTimeout,
    node_ready,
    wait_for,
)
from harness.kube.errors import KubeError
from harness.providers.base import ClusterError, ClusterHandle, ProviderBase
from harness.providers.cleanup import clear_run
from harness.providers.existing import kueuecheck
from harness.providers.kwok import fake_node
from harness.providers.kwokrun import KwokController
from harness.scenario.model import Scenario

KWOK_PROBE_WAIT_S = 8.0
SWEEP_TIMEOUT_S = 120.0


class KueueMissing(ClusterError):
    """The cluster cannot run TAS scenarios: no Kueue, no webhook, or TAS off."""


logger = progress.logger("existing")


def pinned_kubeconfig(source: Path, context: str | None, dest: Path) -> Path:
    """A copy of `source` with current-context set to `context` (the source is untouched)."""
    try:
        config = yaml.safe_load(source.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ClusterError(f"{source}: cannot read kubeconfig: {err}") from None
    if not isinstance(config, dict):
        raise ClusterError(f"{source}: not a kubeconfig")
    if context:
        names = [c.get("name") for c in config.get("contexts") or []]
        if context not in names:
            raise ClusterError(f"{source}: no context {context!r}; contexts: {', '.join(names)}")
        config["current-context"] = context
    _absolute_paths(config, source.parent.resolve())
    dest.write_text(yaml.safe_dump(config))
    dest.chmod(0o600)
    return dest


FILE_KEYS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}
"""The paths client-go resolves against the kubeconfig's own directory (clientcmd
loader.go GetClusterFileReferences, GetAuthInfoFileReferences); so does an exec plugin's
command that contains a path separator (one without is looked up on $PATH)."""


def _absolute_paths(config: dict[str, Any], base: Path) -> None:
    """Make the copy's relative paths absolute: in the run directory they would point
    elsewhere (a token file, an exec plugin, a certificate next to the user's kubeconfig)."""
    for section, keys in FILE_KEYS.items():
        for entry in config.get(section) or []:
            body = (entry.get(section[:-1]) or {}) if isinstance(entry, dict) else {}
            for key in keys:
                if isinstance(body.get(key), str) and body[key]:
                    body[key] = _resolved(base, body[key])
            plugin = body.get("exec") if section == "users" else None
            command = plugin.get("command") if isinstance(plugin, dict) else None
            if isinstance(plugin, dict) and isinstance(command, str) and os.sep in command:
                plugin["command"] = _resolved(base, command)


def _resolved(base: Path, path: str) -> str:
    return path if Path(path).is_absolute() else str(base / path)


class ExistingCluster(ProviderBase):
    """Provider "existing": see the module docstring."""

    name = "existing"
    can_set_feature_gates = False  # its Kueue runs with the gates its owner chose
    shared = True
    needs_kubeconfig = True

    def __init__(
        self,
        *,
        kubeconfig: str | Path | None = None,
        context: str | None = None,
        keep: bool = False,
        run_root: Path | None = None,
        run_id: str | None = None,
        feature_gates: str | Mapping[str, bool] | None = None,
        **_ignored: Any,
    ) -> None:
        if feature_gates:
            raise ClusterError(
                f"feature gates {feature_gates} cannot be set on an existing cluster: its Kueue "
                "runs with the gates its owner chose"
            )
        source = kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
        if not source:
            raise ClusterError(
                "--cluster=existing needs --kubeconfig FILE (or $KUBECONFIG); the harness does "
                "not fall back to ~/.kube/config so it never picks a cluster by accident"
            )
        self.source = Path(source).expanduser()
        self.context = context or os.environ.get("KTH_CONTEXT") or None
        self.keep = keep
        self.run_root = run_root
        self.run_id = run_id or uuid.uuid4().hex[:8]  # share the runner's to sweep its objects
        self.labels = {RUN_LABEL: self.run_id}
        self.run_dir: Path | None = None
        self.kwok: KwokController | None = None
        self.kube: Kube | None = None
        self.handle: ClusterHandle | None = None
        self._stopped = False

    def start(self) -> ClusterHandle:
        root = self.run_root or Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(prefix="kth-existing-", dir=root))
        try:
            kubeconfig = pinned_kubeconfig(self.source, self.context, self.run_dir / "kubeconfig")
            kube = self.kube = Kube(kubeconfig)
            try:
                kube.server_version()
            except KubeError as err:
                raise ClusterError(f"{self.source}: cluster not reachable: {err}") from None
            why = kueuecheck.refusal(kube, self.run_id)
            if why is not None:
                raise KueueMissing(why)
            self._ensure_kwok(kube, kubeconfig)
        except BaseException:
            self.stop()
            raise
        logger.info(f"using {kube.host} (run id {self.run_id}, run dir {self.run_dir})")
        self.handle = ClusterHandle("existing", kubeconfig, self.run_dir, kube.host)
        return self.handle

    def _ensure_kwok(self, kube: Kube, kubeconfig: Path) -> None:
        """Use the cluster's KWOK controller if one manages fake nodes, else run our own.

        Asked by behaviour: a labelled probe node either turns Ready on its own or not.
        """
        assert self.run_dir is not None
        probe = fake_node(
            f"kth-kwok-probe-{self.run_id}", allocatable={"cpu": "1"}, labels=self.labels
        )
        name = probe["metadata"]["name"]
        kube.create(probe)
        try:
            try:
                wait_for(
                    kube, "v1", "Node", name, node_ready, what="Ready", timeout=KWOK_PROBE_WAIT_S
                )
                logger.info("a KWOK controller already manages fake nodes on this cluster")
                return
            except WaitTimeout:
                logger.info("no KWOK controller answers; starting one")
            self.kwok = KwokController(kubeconfig, self.run_dir)
            self.kwok.start()
            wait_for(kube, "v1", "Node", name, node_ready, what="Ready (our KWOK)", timeout=60)
        finally:
            kube.delete("v1", "Node", name)

    def foreign_nodes(self, scenario: Scenario) -> list[str]:
        """Nodes not created by this run that Kueue would put into the scenario's topology:
        schedulable, Ready, carrying the flavor's nodeLabels and every level label
        (pkg/util/tas/node.go NodeMatchesFlavor). The provider may not cordon them."""
        if self.kube is None:
            raise ClusterError("existing cluster not started")
        tas = [
            (f.node_labels, t.levels)
            for f in scenario.resource_flavors
            if (t := scenario.topology_of(f)) is not None
        ]
        found = []
        for node in self.kube.list("v1", "Node"):
            labels = node["metadata"].get("labels") or {}
            if labels.get(RUN_LABEL) == self.run_id or node["spec"].get("unschedulable"):
                continue
            if node_ready(node)[0] and any(
                all(labels.get(k) == v for k, v in wanted.items())
                and all(lv in labels for lv in levels)
                for wanted, levels in tas
            ):
                found.append(node["metadata"]["name"])
        return sorted(found)

    def scenario_problem(self, scenario: Scenario) -> str | None:
        """Why the scenario's outcome on this cluster would not be its own, or None."""
        foreign = self.foreign_nodes(scenario)
        if not foreign:
            return None
        topologies = " or ".join(
            repr(t)
            for t in sorted({f.topology_name or "" for f in scenario.resource_flavors} - {""})
        )
        shown = ", ".join(foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        return (
            f"{len(foreign)} node(s) of the existing cluster would join topology "
            f"{topologies} ({shown}); give the scenario a flavor nodeLabels "
            "selector or use --cluster=local"
        )

    def logs(self) -> dict[str, Path]:
        return {"kwok": self.kwok.log} if self.kwok is not None else {}

    def check(self) -> None:
        if self.kwok is not None:
            self.kwok.check()

    def sweep(self, timeout: float = SWEEP_TIMEOUT_S) -> None:
        """Delete every object labelled with this run's id and wait until all of it is gone,
        namespaces included (the cluster outlives the run)."""
        if self.kube is not None:
            clear_run(self.kube, self.run_id, timeout, everything=True)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self.sweep()
            logger.info(f"deleted the objects of run {self.run_id}")
        except KubeError as err:
            logger.warning(f"cleanup of run {self.run_id} incomplete: {err}")
        if self.kwok is not None:
            self.kwok.stop()
        if self.kube is not None:
            self.kube.close()
        if self.run_dir is not None and not self.keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)
