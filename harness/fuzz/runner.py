"""Run scenario dicts on the fit model and on a backend, and say where they disagree.

The backend call runs in a worker thread while the fit model computes in this one, so the
Go sim and the Python oracle overlap on two cores. Disagreement is `against_prediction`:
the same test the suites use.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.backends.base import Backend, create_backend
from harness.backends.sim import sim_outcomes
from harness.errors import HarnessError, Nondeterministic, UnsupportedVersionError
from harness.fit import fit
from harness.results.comparison import against_prediction
from harness.results.outcome import Outcome, outcomes_to_json
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.sim.contract import scenario_to_dict
from harness.sim.process import SimProcess

Data = dict[str, Any]
Observe = Callable[[Scenario], "Observed"]
Observed = tuple[dict[str, Outcome], list[dict[str, Outcome]]]
"""The outcomes after the submissions, and after each step."""


class ObserveError(Exception):
    """The backend failed on this scenario (a crash or stall, not a disagreement)."""


@dataclass
class Verdict:
    """One scenario's comparison: difference lines, or the error that prevented it."""

    predicted: dict[str, Outcome] = field(default_factory=dict)
    observed: dict[str, Outcome] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    error: str = ""
    skipped: str = ""
    """Why the case was not compared: the fit model does not model it, or Kueue's answer is a
    tie it breaks at random."""
    predicted_steps: list[dict[str, Outcome]] = field(default_factory=list)
    observed_steps: list[dict[str, Outcome]] = field(default_factory=list)
    """The outcomes after each step (`steps[].expect` of a suite), compared like the end."""

    @property
    def unplaceable(self) -> dict[str, Mapping[str, int]]:
        """Workloads Kueue admitted with pods that never run: a Kueue finding, not a
        disagreement (whether the fit model predicted it is `predicted_unplaceable`)."""
        return _unplaceable(self.observed)

    def stages(self) -> Iterator[tuple[str, dict[str, Outcome], dict[str, Outcome]]]:
        """(label, predicted, observed): after the submissions, then after each step."""
        yield "", self.predicted, self.observed
        for index, (want, got) in enumerate(
            zip(self.predicted_steps, self.observed_steps, strict=False)
        ):
            yield f"after steps[{index}]: ", want, got

    @property
    def predicted_unplaceable(self) -> bool:
        return all(
            name in self.predicted and dict(self.predicted[name].unschedulable) == dict(counts)
            for name, counts in self.unplaceable.items()
        )

    @property
    def disagreement_lines(self) -> list[str]:
        """The difference lines, without the unschedulable counts of unplaceable workloads."""
        found = {label: _unplaceable(got) for label, _, got in self.stages()}
        out = []
        for line in self.lines:
            label = _STEP_LABEL.match(line)
            at = label.group(0) if label else ""
            if not _about_unplaceable(line[len(at) :], found.get(at, {})):
                out.append(line)
        return out

    def step_lines(self) -> list[str]:
        """Differences after each step, each line labelled with its step."""
        lines = [
            label + line
            for label, want, got in list(self.stages())[1:]
            for line in against_prediction(want, got)
        ]
        if len(self.predicted_steps) != len(self.observed_steps):
            lines.append(
                f"predicted {len(self.predicted_steps)} step outcomes, "
                f"observed {len(self.observed_steps)}"
            )
        return lines

    @property
    def disagrees(self) -> bool:
        return bool(self.disagreement_lines) and not self.error and not self.skipped

    def kinds(self) -> list[str]:
        """Kinds of difference per workload, in submission order: what differs and Kueue's
        reason. The first one is usually the cause; later ones often follow from it."""
        kinds = ["crash" for line in self.lines if line.startswith("fit model raised")]
        for label, predicted, observed in self.stages():
            found = _unplaceable(observed)
            prefix = "step:" if label else ""
            for name in observed:
                want, got = predicted.get(name), observed[name]
                if want is None:
                    continue
                differences = against_prediction({name: want}, {name: got})
                if not [line for line in differences if not _about_unplaceable(line, found)]:
                    continue
                if want.admitted and got.admitted:
                    kinds.append(f"{prefix}placement")
                else:
                    kinds.append(f"{prefix}{_state(want)}->{_state(got)}:{_reason(got.message)}")
        return kinds

    def report(self) -> str:
        return "\n".join(
            [
                *(["error: " + self.error] if self.error else []),
                "differences (fit model vs Kueue):",
                *(f"  {line}" for line in self.lines),
                "fit model:",
                json.dumps(outcomes_to_json(self.predicted), indent=2),
                "Kueue:",
                json.dumps(outcomes_to_json(self.observed), indent=2),
                *(
                    f"{label}fit model:\n{json.dumps(outcomes_to_json(want), indent=2)}\n"
                    f"{label}Kueue:\n{json.dumps(outcomes_to_json(got), indent=2)}"
                    for label, want, got in list(self.stages())[1:]
                ),
            ]
        )


def _unplaceable(observed: Mapping[str, Outcome]) -> dict[str, Mapping[str, int]]:
    return {
        name: o.unschedulable
        for name, o in observed.items()
        if o.admitted and o.unschedulable and o.binding_observed
    }


def _about_unplaceable(line: str, unplaceable: Mapping[str, Mapping[str, int]]) -> bool:
    """A line comparing unschedulable pods of a workload the backend saw unplaceable."""
    name = line.split("/", 1)[0].split(":", 1)[0]
    return name in unplaceable and "unschedulable pod(s)" in line


def _state(outcome: Outcome) -> str:
    return "rejected" if outcome.rejected else "admitted" if outcome.admitted else "pending"


_STEP_LABEL = re.compile(r"^after steps\[\d+\]: ")
_POD_SET_PREFIX = re.compile(r"^(couldn't|failed to) assign flavors to pod set [^:]+: ")


def _reason(message: str) -> str:
    """The first few plain words of Kueue's message: names, paths and numbers left out."""
    words = _POD_SET_PREFIX.sub("", message).split()
    plain = [w for w in words if not re.search(r"[0-9./\[\]\"']", w)]
    return " ".join(plain[:4])


class SimObserver:
    """Kueue's scheduler in process: one kueue-sim for the whole run."""

    def __init__(self, binary: Path | None = None) -> None:
        self.sim = SimProcess(binary)

    def __call__(self, scenario: Scenario) -> Observed:
        answer = self.sim.run(scenario_to_dict(scenario))
        if answer.get("error"):
            raise ObserveError(f"kueue-sim: {answer['error']}")
        steps = [sim_outcomes(step) for step in answer.get("steps") or []]
        return sim_outcomes(answer.get("outcome")), steps

    def close(self) -> None:
        self.sim.close()


class BackendObserver:
    """Any `harness.backends.base` backend (`local`: a real API server with real Kueue)."""

    def __init__(self, name: str, kueue_version: str | None = None) -> None:
        self.backend: Backend = create_backend(name, kueue_version=kueue_version)

    def __call__(self, scenario: Scenario) -> Observed:
        try:
            observation = self.backend.run(scenario)
        except HarnessError as err:
            raise ObserveError(str(err).splitlines()[0]) from None
        return observation.outcomes, list(observation.steps)

    def close(self) -> None:
        self.backend.close()


def make_observer(
    against: str, sim_binary: Path | None = None, kueue_version: str | None = None
) -> SimObserver | BackendObserver:
    """The sim needs a binary built for `kueue_version` (build_sim(version=...))."""
    if against == "sim":
        return SimObserver(sim_binary)
    return BackendObserver(against, kueue_version)


class Checker:
    """Compares scenario dicts; the backend runs beside the fit model in a worker thread."""

    def __init__(self, observe: Observe, kueue_version: str | None = None) -> None:
        self.observe = observe
        self.kueue_version = kueue_version
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fuzz-backend")
        self.calls = 0

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True)

    def check(self, data: Mapping[str, Any]) -> Verdict:
        scenario = scenario_from_data(data, str(data.get("name", "<fuzz>")))
        if self.kueue_version is not None:  # the fit model predicts for it, too
            scenario = dataclasses.replace(scenario, kueue=self.kueue_version)
        self.calls += 1
        future = self.pool.submit(self.observe, scenario)
        verdict = Verdict()
        try:
            result = fit(scenario)
            verdict.predicted, verdict.predicted_steps = result.outcomes, result.steps
        except (UnsupportedVersionError, Nondeterministic) as err:
            verdict.skipped = str(err)
            future.cancel()
            return verdict
        except Exception as err:  # a crash of the model is a finding, not the end of the run
            verdict.lines.append(f"fit model raised {type(err).__name__}: {err}")
        try:
            verdict.observed, verdict.observed_steps = future.result()
        except ObserveError as err:
            verdict.error = str(err)
            return verdict
        if not verdict.lines:
            verdict.lines = against_prediction(verdict.predicted, verdict.observed)
            verdict.lines += verdict.step_lines()
        return verdict

    def checks(self, cases: Iterator[Data]) -> Iterator[tuple[Data, Verdict]]:
        for data in cases:
            yield data, self.check(data)
