"""kueue-tas-harness: end-to-end checks of Kueue's Topology-Aware Scheduling.

Public surface: load a scenario, predict it with the fit model, compare outcomes.
"""

from harness.errors import HarnessError, ScenarioError, UnsupportedVersionError
from harness.fit import FitResult, fit
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario

__all__ = [
    "FitResult",
    "HarnessError",
    "Outcome",
    "Scenario",
    "ScenarioError",
    "UnsupportedVersionError",
    "fit",
    "load_scenario",
]
