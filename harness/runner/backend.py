"""ClusterBackend: scenarios on a real API server with real Kueue (`--cluster=local|kind|existing`).

The cluster starts lazily on the first scenario and is reused; when a scenario needs other
Kueue feature gates the cluster is restarted with them. Each scenario gets a fresh namespace,
the previous scenario's objects are deleted first (one label query: the run id), and the
evidence of every run is written to an artifacts directory. docs/scenario-extensions.md
describes the behaviour for users.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import time
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from harness import progress
from harness.backends.base import BackendError, Unsupported
from harness.errors import HarnessError
from harness.install import jobset as jobset_install
from harness.install import kueue as kueue_install
from harness.install import lws as lws_install
from harness.kube import KUEUE_API, RUN_LABEL, Kube, KubeError, WaitTimeout, watchdog
from harness.kube.informer import watching
from harness.kueue.gates import merged, parse_gates
from harness.kueue.versions import version_key
from harness.logtail import lines_about, log_lines_about
from harness.providers.base import ClusterError, Provider, create_provider, provider_class
from harness.providers.cleanup import clear_run
from harness.providers.cpu import CpuMeter
from harness.results.observation import Observation
from harness.runner import evidence, incidents, shaping
from harness.runner.incidents import Incident
from harness.runner.kueuelog import KueueLog
from harness.runner.objects import Names, namespaces_for
from harness.runner.requeue import RequeueWave, freed_recently
from harness.runner.session import ClusterSide, Session
from harness.runner.steps import tas_pod
from harness.runner.waits import Timeouts
from harness.runner.world import namespaces_problem
from harness.scenario.model import Scenario

logger = progress.logger("runner")

MAX_ATTEMPTS = 3
"""Attempts at one scenario when the infrastructure fails under it (harness.runner.incidents)."""


def namespace_for(seq: int, scenario_name: str) -> str:
    """A DNS label unique within the run: kth-<seq>-<scenario name>, cut to 63 characters."""
    clean = re.sub(r"[^a-z0-9-]+", "-", scenario_name.lower())
    return f"kth-{seq}-{clean}"[:63].rstrip("-")


WATCHED = (("v1", "Pod"), (KUEUE_API, "Workload"))
"""What a scenario's waits read from watch-fed copies (harness.kube.informer): most of what
they poll."""


class ClusterBackend:
    """See the module docstring; `name` picks the provider (local, kind, existing)."""

    def __init__(
        self,
        name: str = "local",
        keep: bool = False,
        feature_gates: str | dict[str, bool] | None = "",
        kubeconfig: str | os.PathLike[str] | None = None,
        kueue_version: str | None = None,
        **_: Any,
    ) -> None:
        self.name = name
        # Asked for (None: the provider's default); once started, the one its provider runs.
        self.kueue_version = kueue_version
        self.keep = keep
        self.cli_gates = parse_gates(feature_gates)
        self.kubeconfig = Path(kubeconfig) if kubeconfig else None
        try:
            self.provider_type: type[Provider] = provider_class(name)
        except ClusterError as err:
            raise BackendError(str(err)) from None
        if self.provider_type.needs_kubeconfig and self.kubeconfig is None:
            raise BackendError(f"--cluster={name} needs --kubeconfig PATH")
        self.run_id = uuid.uuid4().hex[:10]
        self.timeouts = Timeouts.from_env()
        self.provider: Provider | None = None
        self.running_gates: dict[str, bool] | None = None
        self.running_config: dict[str, Any] = {}
        self.wanted_config: dict[str, Any] = {}
        """The scenario's kueueConfig the next start merges into Kueue's Configuration."""
        self.kube: Kube | None = None
        self.seq = 0
        self.jobsets = False
        self.jobset_pods = False
        self.lws = False  # Kueue manages LeaderWorkerSets and their controller runs
        self.dirty = True  # until a cluster the harness started says it holds nothing
        # When each recent clear deleted non-TAS pods, and the nodes they were bound to:
        # Kueue's non-TAS usage drainer ticks every 10 s whatever happens, so a retry of
        # inadmissible workloads for a node of that name can come up to one tick later,
        # after two or three short scenarios (requeue.freed_recently).
        self.freed_usage: list[tuple[float, frozenset[str]]] = []
        root = os.environ.get("KTH_ARTIFACTS")
        self.artifacts = Path(root) if root else Path(tempfile.gettempdir()) / "kth-runs"
        self.artifacts = self.artifacts / f"run-{self.run_id}"
        self.timings: dict[str, float] = {}
        self.upgraded = False  # a step replaced the cluster's Kueue (upgrade-kueue)

    # -- cluster lifecycle ---------------------------------------------------------------

    def _ensure_cluster(self, wanted: dict[str, bool]) -> Kube:
        config = self.wanted_config
        if self.kube is not None and self.running_gates == wanted and self.running_config == config:
            return self.kube
        if config and not self.provider_type.can_set_kueue_config:
            raise Unsupported(
                f"kueueConfig ({', '.join(config)}) cannot be set on the {self.name} cluster; "
                "run it with --cluster=local"
            )
        if wanted and not self.provider_type.can_set_feature_gates:
            shown = ", ".join(f"{k}={str(v).lower()}" for k, v in wanted.items())
            raise Unsupported(
                f"feature gates {shown} cannot be set on the {self.name} cluster; run it with "
                "--cluster=local, or leave featureGates out"
            )
        started = time.monotonic()
        if self.provider is not None and self.kube is not None:
            asked = (
                f"feature gates {wanted or '(defaults)'} and kueueConfig {config or '(defaults)'}"
            )
            try:
                restarted = self.provider.reconfigure_kueue(wanted, config)
            except ClusterError as err:
                raise BackendError(f"restarting Kueue for {asked}: {err}") from None
            if restarted:
                logger.info(f"restarted Kueue alone for {asked}")
                self.running_gates, self.running_config = wanted, config
                self.timings["kueue restart"] = round(time.monotonic() - started, 1)
                return self.kube
            logger.info(f"restarting the cluster for {asked}")
            self._stop_provider()
        self.provider = provider = self._provider(wanted)
        self.kube = Kube(provider.start().kubeconfig)
        self.kueue_version = provider.kueue_version
        self.dirty = provider.shared
        self.running_gates = wanted
        self.running_config = config
        self.jobsets = kueue_install.jobset_managed(self.kube)
        probe = kueue_install.probe_jobset("default")
        self.jobset_pods = self.jobsets and jobset_install.webhook_defaults(self.kube, probe)[0]
        how = "Workloads built directly (Kueue manages no JobSets)"
        if self.jobsets:
            how = "JobSets" + ("" if self.jobset_pods else " (no JobSet controller: no pods)")
        logger.info(f"workloads with several pod sets go as {how}")
        self.lws = lws_install.webhooks_answer(self.kube)[0]
        self.timings["cluster start"] = round(time.monotonic() - started, 1)
        return self.kube

    def _provider(self, wanted: dict[str, bool]) -> Provider:
        """The provider for this backend's name; each takes the options it uses. It shares
        the run id, so what it deletes when it stops is what this run created."""
        try:
            return create_provider(
                self.name,
                keep=self.keep,
                feature_gates=wanted,
                kueue_overrides=self.wanted_config,
                kubeconfig=self.kubeconfig,
                run_id=self.run_id,
                kueue_version=self.kueue_version,
            )
        except ClusterError as err:
            raise BackendError(f"--cluster={self.name}: {err}") from None

    def _stop_provider(self) -> None:
        if self.kube is not None:
            self.kube.close()
            self.kube = None
        if self.provider is not None:
            self.provider.stop()
            self.provider = None
        self.running_gates = None
        self.running_config = {}

    def close(self) -> None:
        """Stop the cluster; a shared cluster's provider deletes what the run created."""
        if self.keep and self.provider is not None:
            handle = getattr(self.provider, "handle", None)
            logger.info(
                f"--keep-cluster: the cluster is left running; kubeconfig "
                f"{getattr(handle, 'kubeconfig', '?')}"
            )
            return
        self._stop_provider()

    # -- one scenario --------------------------------------------------------------------

    def cluster(
        self,
        scenario_gates: Mapping[str, bool] | None = None,
        kueue_config: Mapping[str, Any] | None = None,
    ) -> Kube:
        """The running cluster with the command line's feature gates plus these, and this
        kueueConfig: started on first use, restarted when either differs from the running."""
        self.wanted_config = dict(kueue_config or {})
        return self._ensure_cluster(merged(self.cli_gates, scenario_gates or {}))

    def fresh_names(self, scenario: Scenario) -> Names:
        """Names for the scenario's objects, in a namespace of its own, once the previous
        scenario's objects are cleared (identical Kueue objects stay: shaping.reusable).
        Raises Unsupported when the provider cannot run the scenario, Incident when the
        clear does not finish."""
        assert self.kube is not None and self.provider is not None
        problem = self.provider.scenario_problem(scenario)
        if problem is not None:
            raise Unsupported(problem)
        if problem := namespaces_problem(scenario):
            raise Unsupported(problem)
        self.seq += 1
        own = namespace_for(self.seq, scenario.name)
        names = Names(self.run_id, own, namespaces_for(own, [n.name for n in scenario.namespaces]))
        if self.dirty:
            reuse = shaping.reusable(scenario, names)
            keep = not self.provider.shared  # the cluster goes, and its namespaces with it
            freed = self._non_tas_nodes()
            timeout = self.timeouts.cleanup
            try:
                clear_run(self.kube, self.run_id, timeout, reuse, keep_namespaces=keep)
            except WaitTimeout as err:
                # What an earlier scenario left says nothing about this one: Kueue can keep a
                # deleted Topology's finalizer for good when its reconciles race its cache
                # (harness.providers.cleanup._nudge). A fresh cluster runs the scenario.
                raise Incident(f"clearing the previous scenario: {err}") from None
            now = time.time()
            margin = self.timeouts.requeue_margin
            self.freed_usage = freed_recently([*self.freed_usage, (now, freed)], now, margin)
        self.dirty = True
        return names

    def _non_tas_nodes(self) -> frozenset[str]:
        """The nodes the run's non-TAS pods are bound to (usage pods, workloads without a
        TAS flavor), before a clear frees them; finished ones too, freed moments ago."""
        assert self.kube is not None
        pods = self.kube.list("v1", "Pod", None, f"{RUN_LABEL}={self.run_id}")
        return frozenset(
            str(p["spec"]["nodeName"])
            for p in pods
            if (p.get("spec") or {}).get("nodeName") and not tas_pod(p)
        )

    def run(self, scenario: Scenario) -> Observation:
        """Run the scenario; an attempt under which the infrastructure failed (a component
        exited, a node went NotReady by itself) is discarded, pass or fail, and the scenario
        runs again on a fresh cluster, at most MAX_ATTEMPTS times in all. The observation
        lists the discarded attempts' incidents. A disagreement is never retried."""
        discarded: list[str] = []
        while True:
            try:
                observation = self._attempt(scenario)
            except Incident as incident:
                discarded.append(str(incident))
                self._discard_attempt(scenario, discarded)
                continue
            finally:
                self._after_upgrade()
            return dataclasses.replace(observation, incidents=tuple(discarded))

    def _check_upgrades(self, scenario: Scenario) -> None:
        """Refuse `upgrade-kueue` steps this cluster cannot carry out, before anything runs."""
        assert self.provider is not None
        running = self.provider.kueue_version
        for step in scenario.steps:
            if step.action != "upgrade-kueue":
                continue
            version = str(step.target)
            if not self.provider.can_upgrade_kueue:
                raise Unsupported(
                    f"steps: upgrade-kueue: the {self.name} cluster cannot replace its Kueue; "
                    "run upgrade scenarios with --cluster=local"
                )
            if running is None or version_key(version) <= version_key(running):
                raise Unsupported(
                    f"steps: upgrade-kueue: {version} is not newer than {running}, the Kueue "
                    "this cluster runs (--kueue-version?)"
                )
            running = version

    def _upgrade_kueue(self, version: str) -> None:
        assert self.provider is not None
        logger.info(f"replacing Kueue {self.provider.kueue_version} by {version}")
        self.upgraded = True
        try:
            self.provider.upgrade_kueue(version)
        except ClusterError as err:
            raise BackendError(f"upgrade-kueue {version}: {err}") from None

    def _after_upgrade(self) -> None:
        """A cluster whose Kueue a scenario upgraded is not the version this backend runs:
        stop it, so the next scenario starts a fresh one."""
        if self.upgraded:
            self.upgraded = False
            self._stop_provider()

    def _discard_attempt(self, scenario: Scenario, discarded: list[str]) -> None:
        """Drop the cluster the attempt ran on, so the next starts a fresh one; raise when
        there is no next (attempts used up, or a cluster the harness cannot restart)."""
        logger.warning(f"{scenario.name}: attempt discarded, the infrastructure failed: "
                       f"{discarded[-1]}")  # fmt: skip
        if self.provider_type.shared:
            raise BackendError(
                f"scenario {scenario.name}: the cluster failed under it ({discarded[-1]}); "
                "the harness does not restart a cluster it did not start: fix it and run again"
            )
        if len(discarded) >= MAX_ATTEMPTS:
            raise BackendError(
                f"scenario {scenario.name}: the infrastructure failed under each of its "
                f"{MAX_ATTEMPTS} attempts: " + "; ".join(discarded)
            )
        self._stop_provider()

    def _check_infrastructure(self, kube: Kube, scenario: Scenario) -> None:
        """Raise Incident when a component exited or a node of the run is NotReady though
        the scenario did not make it so."""
        incidents.raise_if_down(self.provider)
        try:
            nodes = kube.list("v1", "Node", None, f"{RUN_LABEL}={self.run_id}")
        except KubeError as err:
            raise Incident(f"the API server did not answer: {err}") from None
        strays = incidents.not_ready_by_themselves(nodes, scenario)
        if strays:
            raise Incident("; ".join(strays))

    def _attempt(self, scenario: Scenario) -> Observation:
        gates = merged(self.cli_gates, scenario.feature_gates)
        self.wanted_config = dict(scenario.kueue_config.document)
        kube = self._ensure_cluster(gates)
        if not self.jobsets:
            _refuse_unsupported(scenario)
        self._check_upgrades(scenario)
        phases = Phases()
        meter = CpuMeter(self.provider.pids if self.provider is not None else dict)
        meter.start()
        names = self.fresh_names(scenario)
        phases.mark("clear")
        out_dir = self.artifacts / names.namespace
        out_dir.mkdir(parents=True, exist_ok=True)
        slicer = evidence.LogSlicer(self.provider.logs() if self.provider else {})
        wave = RequeueWave(KueueLog(self._live_kueue_log()), self.timeouts.requeue_margin)
        for freed_at, freed in self.freed_usage:
            wave.after_usage_freed(freed_at, set(freed) & {n.name for n in scenario.nodes})
        session = Session(
            kube,
            scenario,
            names,
            self.timeouts,
            cluster=ClusterSide(
                jobsets=self.jobsets,
                jobset_pods=self.jobset_pods,
                lws=self.lws,
                kueue_log=self._kueue_log if self.provider is not None else None,
                kueue_log_path=self._live_kueue_log(),
                gates=gates,
                upgrade_kueue=self._upgrade_kueue,
            ),
            wave=wave,
        )
        with (
            watchdog(lambda: incidents.raise_if_down(self.provider)),
            watching(kube, WATCHED, names.all_namespaces),
        ):
            try:
                shaping.shape(kube, scenario, names, self.timeouts)
                wave.shaped()
                phases.mark("shape")
                logger.info(f"{scenario.name}: cluster shaped in namespace {names.namespace}")
                session.admit_ahead()
                phases.mark("admit")
                for workload in scenario.workloads:
                    session.submit(workload)
                phases.mark("submit")
                outcomes = session.read()
                phases.mark("read")
                steps = []
                for index, step in enumerate(scenario.steps, 1):
                    logger.info(f"{scenario.name}: step {index} ({step.action})")
                    session.apply(step)
                    steps.append(session.read())
                phases.mark("steps")
            except Unsupported:
                raise
            except Incident:
                self._write_artifacts(kube, names, slicer, out_dir)
                raise
            except HarnessError as err:
                self._write_artifacts(kube, names, slicer, out_dir)
                self._check_infrastructure(kube, scenario)
                evidence_text = self._failure_evidence(kube, names, session)
                raise BackendError(
                    f"scenario {scenario.name}: {err}{self._crash_report()}\n{evidence_text}"
                    f"artifacts: {out_dir}"
                ) from None
        self._check_infrastructure(kube, scenario)
        cpu = meter.spent()
        self.timings[scenario.name] = phases.total()
        logger.info(f"{scenario.name}: {phases}, cpu {sum(cpu.values()):.2f}s")
        with (self.artifacts / "timings.jsonl").open("a") as log:
            record = {"scenario": scenario.name, "total": phases.total(), **phases.spent}
            log.write(json.dumps({**record, "cpu": cpu}) + "\n")
        self._write_artifacts(kube, names, slicer, out_dir)
        version = self.kueue_version or ""
        return Observation(
            outcomes,
            steps,
            artifacts=out_dir,
            kueue=version,
            phases=dict(phases.spent),
            cpu=cpu,
            evidence=lambda wanted: self._evidence_of(kube, names, session, wanted),
        )

    def _live_kueue_log(self) -> Path | None:
        """Kueue's log file where it grows as Kueue runs (evidence of its reaction to a
        step); elsewhere the runner judges a step by the objects alone."""
        if self.provider is None or not self.provider.live_kueue_log:
            return None
        return self.provider.logs().get("kueue")

    def _kueue_log(self) -> str:
        """The tail of Kueue's log ("" when it cannot be read): why pods stay gated."""
        try:
            return self.provider.log_tail("kueue", 500) if self.provider is not None else ""
        except HarnessError:
            return ""

    def _failure_evidence(self, kube: Kube, names: Names, session: Session) -> str:
        """Conditions of every submitted workload and Kueue's error lines about them."""
        kueue_names = {n: e.kueue_name for n, e in session.entries.items() if e.kueue_name}
        if not kueue_names:
            return ""
        try:
            text = evidence.workload_details(kube, names, kueue_names)
        except HarnessError as err:
            text = f"(workload details unavailable: {err})"
        if self.provider is not None:
            try:
                log = self.provider.log_tail("kueue", 2000)
            except HarnessError:
                log = ""
            errors = [
                line
                for line in lines_about(log, kueue_names.values()).splitlines()
                if '"level":"error"' in line
            ]
            if errors:
                text += f"\nkueue errors about these workloads ({len(errors)} in the last "
                text += "2000 log lines; last 3):\n" + "\n".join(
                    f"  {x[:600]}" for x in errors[-3:]
                )
        return text + "\n"

    def _crash_report(self) -> str:
        """If a component died, say so and drop the cluster: the next scenario starts anew."""
        if self.provider is None:
            return ""
        try:
            self.provider.check()
        except ClusterError as crash:
            self._stop_provider()
            return f"\n{crash}\n(the cluster was stopped; the next scenario starts a new one)"
        return ""

    def _write_artifacts(
        self, kube: Kube, names: Names, slicer: evidence.LogSlicer, out_dir: Path
    ) -> None:
        try:
            evidence.write_objects(kube, names, out_dir / "objects.yaml")
        except HarnessError as err:
            (out_dir / "objects.yaml").write_text(f"# could not read objects: {err}\n")
        slicer.write(out_dir / "logs")

    def _evidence_of(
        self, kube: Kube, names: Names, session: Session, wanted: Collection[str]
    ) -> str:
        """Evidence about the wanted workloads of the last run (on request: the report asks
        for the ones that differ or wait)."""
        kueue_names = {
            n: e.kueue_name for n, e in session.entries.items() if n in wanted and e.kueue_name
        }
        if not kueue_names:
            return ""
        try:
            return self.evidence(kube, names, kueue_names)
        except HarnessError as err:
            return f"(evidence unavailable: {err})"

    def evidence(self, kube: Kube, names: Names, kueue_names: Mapping[str, str]) -> str:
        """What a mismatch prints about these Workloads (name -> Kueue's name): conditions,
        recent events in the namespace and Kueue's last log lines about them."""
        text = evidence.workload_details(kube, names, kueue_names)
        if self.provider is not None:
            try:
                log = self.provider.log_tail("kueue", 400)
            except HarnessError:
                log = ""
            wanted = log_lines_about(log, kueue_names.values(), 25)
            text += "\nkueue log (its last 400 lines about these workloads, noise left out):\n"
            text += "\n".join(f"  {line}" for line in wanted) if wanted else "  (none)"
        return text


class Phases:
    """Seconds spent in each phase of one scenario, for the progress line and benchmarks."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.spent: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        now = time.monotonic()
        self.spent[phase] = round(now - self.last, 2)
        self.last = now

    def total(self) -> float:
        return round(self.last - self.start, 2)

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in self.spent.items())
        return f"{self.total():.2f}s ({parts})"


def _refuse_unsupported(scenario: Scenario) -> None:
    """Workloads built directly skip the Job webhook's checks; one of them crashes Kueue."""
    from harness.runner.objects import all_workloads

    balanced = scenario.feature_gates.get("TASBalancedPlacement", False)
    for w in all_workloads(scenario):
        if len(w.pod_sets) < 2:
            continue
        for ps in w.pod_sets:
            tr = ps.topology
            if balanced and tr and tr.slice_size is not None and tr.slice_size > ps.count:
                raise Unsupported(
                    f"workload {w.name}: pod set {ps.name} has podset-slice-size "
                    f"{tr.slice_size} > count {ps.count}; a Workload built directly would "
                    "reach Kueue v0.19.2's scheduler, which panics on it with "
                    "TASBalancedPlacement"
                )
