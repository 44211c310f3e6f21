"""The in-process backend: Kueue's real scheduler run as a library (harness/sim/), built
against the Kueue version a scenario runs on (v0.19.2 unless --kueue-version or its kueue:
says another the sim builds for: harness/sim/build.py).

`SimBackend` is the `harness.backends.base` adapter (`python -m harness run FILE --cluster sim`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.backends.base import BackendError, Unsupported
from harness.backends.sim_session import SimStepper
from harness.errors import Nondeterministic
from harness.fit.bindable import bindable_nodes
from harness.install.gates import GateNotRegistered, check_gates, registered_gates
from harness.kueue.admission_fair_sharing import not_run as afs_not_run
from harness.kueue.gates import merged, parse_gates
from harness.kueue.pods_ready import PodsReadyConfig
from harness.results.comparison import message_matches
from harness.results.observation import Observation
from harness.results.outcome import Outcome
from harness.scenario.model import Expectation, Scenario, Workload
from harness.sim import upgrade
from harness.sim.build import build_sim, sim_versions
from harness.sim.contract import scenario_to_dict
from harness.sim.process import SimProcess
from harness.sim.session import SimSession
from harness.toolchain import kueue_module_dir, pins_for
from harness.toolchain.pins import PINS

# kueue-sim's note for a workload whose message alternates (harness/sim/go/run.go noteAlternating):
# `NAME[ (after steps[I])]: its message changes ...: "m1" | "m2"`, each message Go-quoted.
_ALTERNATING = re.compile(
    r"^(?P<name>[^ :]+)(?: \(after steps\[(?P<step>\d+)\]\))?: "
    r"its message changes from one scheduling cycle to the next: (?P<messages>.*)$"
)
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def sim_outcomes(data: Mapping[str, Any] | None) -> dict[str, Outcome]:
    """kueue-sim's answer as Outcomes. The sim runs Kueue's scheduler only: no pods exist, so
    nothing says whether kube-scheduler could bind them (the cluster and the fit model judge
    that); `unschedulable` expectations are not checked against it."""
    return {
        name: replace(Outcome.from_json(v), binding_observed=False)
        for name, v in (data or {}).items()
    }


SIM_CONFIG = ("fairSharing", "admissionFairSharing", "waitForPodsReady", "resources")
"""kueueConfig sections kueue-sim hands to Kueue's scheduler and cache (kueueconfig.go)."""


class SimBackend:
    """`harness.backends.base` adapter: one kueue-sim process, built against one Kueue version,
    for the whole session (a scenario on another version gets a new backend)."""

    kueue_versions = sim_versions()
    """The Kueue versions kueue-sim builds against (harness/sim/go/go.mod and
    versions/go.*.mod there)."""

    def __init__(
        self,
        name: str = "sim",
        feature_gates: str = "",
        kueue_version: str | None = None,
        **_ignored: Any,
    ) -> None:
        self.name = name
        self.gates = parse_gates(feature_gates)
        self.kueue_version = kueue_version or PINS.kueue
        self._sims: dict[str, SimProcess] = {}
        """One kueue-sim per Kueue version: the backend's, and an upgrade step's."""
        self._registered: dict[str, frozenset[str]] = {}

    def run(self, scenario: Scenario) -> Observation:
        index = upgrade.upgrade_index(scenario)
        if index is None:
            return self._observe(scenario, self.kueue_version)
        # One version per kueue-sim process: the old one up to the step, the new one from the
        # world it leaves (harness/sim/upgrade.py).
        first = self._observe(upgrade.before(scenario, index), self.kueue_version)
        try:
            rest = upgrade.after(
                scenario, index, first.steps[-1] if first.steps else first.outcomes
            )
        except upgrade.NotCarried as why:
            raise Unsupported(str(why)) from None
        second = self._observe(rest, str(scenario.steps[index].target))
        return Observation(
            outcomes=first.outcomes,
            steps=[*first.steps, second.outcomes, *second.steps],
            details=json.dumps({"before upgrade": json.loads(first.details),
                                "after upgrade": json.loads(second.details)}),
            kueue=self.kueue_version,
        )  # fmt: skip

    def _observe(self, scenario: Scenario, version: str) -> Observation:
        """The scenario on kueue-sim built against `version`."""
        answer = self._process(scenario, version).run(scenario_to_dict(scenario, self.gates))
        if answer.get("error"):
            raise BackendError(f"{scenario.path}: kueue-sim: {answer['error']}")
        if unstable := [n for n in answer.get("unstable") or [] if not _decidable(scenario, n)]:
            raise Nondeterministic(
                f"{scenario.path}: Kueue never settles (rules §8): {'; '.join(unstable)}"
            )
        outcomes = sim_outcomes(answer.get("outcome"))
        steps = [sim_outcomes(step) for step in answer.get("steps") or []]
        details = json.dumps({"outcome": answer["outcome"], "notes": answer.get("notes", [])})
        return Observation(outcomes=outcomes, steps=steps, details=details, kueue=version)

    def session(self, scenario: Scenario, later: Sequence[Workload] = ()) -> SimStepper:
        """The scenario's world kept running on kueue-sim, to be given steps one at a time
        (harness/sim/session.py; a stream replay, harness/replay/onsim.py). `later`: the
        workloads the steps will submit, whose kube-scheduler filter the sim is given from
        the world as it starts, as for a scenario's own (harness/fit/bindable.py), where
        waitForPodsReady.blockAdmission makes it matter."""
        process = self._process(scenario, self.kueue_version)
        data = scenario_to_dict(scenario, self.gates)
        config = PodsReadyConfig.of(scenario.kueue_config.document, scenario.feature_gates)
        if config.enabled and config.block_admission:
            data["bindableNodes"] |= {w.name: bindable_nodes(scenario, w) for w in later}
        return SimStepper(SimSession(process, data), scenario)

    def _process(self, scenario: Scenario, version: str) -> SimProcess:
        """The kueue-sim built against `version`, once the scenario passed what it cannot run."""
        self._check_gates(scenario, version)
        unmodelled = scenario.kueue_config.unmodelled(SIM_CONFIG)
        if unmodelled:
            raise Unsupported(
                f"{scenario.path}: kueueConfig.{unmodelled[0]}: not run by the sim (its "
                "controllers are emulated without it); the embedded cluster runs it: "
                "--cluster=local"
            )
        if why := afs_not_run(scenario):
            raise Unsupported(f"{scenario.path}: kueueConfig.admissionFairSharing: {why}")
        if why := _quota_check_not_run(scenario, version):
            raise Unsupported(f"{scenario.path}: kueueConfig.resources.{why}")
        why = _pods_ready_not_run(scenario)
        if why:
            raise Unsupported(f"{scenario.path}: kueueConfig.waitForPodsReady.{why}")
        if version not in self._sims:
            self._sims[version] = SimProcess(build_sim(version=version))
        return self._sims[version]

    def _check_gates(self, scenario: Scenario, version: str) -> None:
        """Refuse a feature gate this Kueue version does not have, as the embedded cluster
        does (a scenario pinned to v0.19.2 run with --kueue-version v0.18.2, say)."""
        wanted = merged(self.gates, scenario.feature_gates)
        if not wanted:
            return
        if version not in self._registered:
            self._registered[version] = registered_gates(kueue_module_dir(pins_for(version)))
        try:
            check_gates(wanted, version, self._registered[version])
        except GateNotRegistered as err:
            raise Unsupported(str(err)) from None

    def close(self) -> None:
        for sim in self._sims.values():
            sim.close()
        self._sims.clear()


def _decidable(scenario: Scenario, note: str) -> bool:
    """Whether the scenario's expectation holds whichever message Kueue ends a cycle with: the
    workload's admission does not alternate, only its message, so an expectation without a
    message, or with one every alternative contains, can still be checked (rules §8: a pod set
    group's TAS failure names either pod set)."""
    if (found := _ALTERNATING.match(note)) is None:
        return False
    step = found["step"]
    expect = scenario.expect if step is None else scenario.steps[int(step)].expect
    want: Expectation | None = (expect or {}).get(found["name"])
    if want is None or want.message is None:
        return want is not None
    messages = [json.loads(m) for m in _QUOTED.findall(found["messages"])]
    return len(messages) > 1 and all(message_matches(want.message, m) for m in messages)


def pending_throughout(note: str) -> bool:
    """Whether an alternation Kueue never settles on leaves the workload pending in every
    cycle it repeats, only its message changing: a TAS failure of a pod set group, or of pod
    sets on two flavors, names a pod set in Go map order (TASAssignmentsResult.Failure
    ranges over a map: pkg/cache/scheduler/tas_flavor_snapshot.go), and a StrictFIFO head's
    flavor scan goes on from cycle to cycle (LastTriedFlavorIdx). A stream's timeline holds
    no messages; whether where such a loop stands at the next event changes the timeline is
    what the fit model's replay checks (harness/replay/engine.py _every_loop_position)."""
    if (found := _ALTERNATING.match(note)) is None:
        return False
    messages = [json.loads(m) for m in _QUOTED.findall(found["messages"])]
    return len(messages) > 1 and all(messages)


def _pods_ready_not_run(scenario: Scenario) -> str | None:
    """The parts of waitForPodsReady the sim does not run (harness/sim/go/podsready.go), or
    None: the queue manager is built without WithPodsReadyRequeuingTimestamp."""
    section = scenario.kueue_config.document.get("waitForPodsReady") or {}
    if (section.get("requeuingStrategy") or {}).get("timestamp") == "Creation":
        return (
            "requeuingStrategy.timestamp: Creation is not run by the sim (its queue manager "
            "orders by eviction time); the embedded cluster runs it: --cluster=local"
        )
    return None


def _quota_check_not_run(scenario: Scenario, version: str) -> str | None:
    """Kueue v0.17 has no quotaCheckStrategy (config.kueue.x-k8s.io/v1beta2 Resources gained
    it in v0.18): a scenario setting it cannot run on a sim built against v0.17."""
    section = scenario.kueue_config.document.get("resources") or {}
    if "quotaCheckStrategy" in section and version.startswith("v0.17."):
        return f"quotaCheckStrategy: not a field of Kueue {version}'s Configuration"
    return None
