"""The pytest plugin end to end with pytester: a wrong expectation and a wrong oracle answer
both fail with a readable diff, not a traceback.

The oracle-only check needs no cluster; the real-Kueue checks are marked `cluster` and run
one embedded cluster in a pytest subprocess (enable with --cluster=local).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

# pytester points HOME at its scratch directory; the cluster's binaries and Go's module cache
# live under the real one (read here, at import, before any pytester fixture runs).
REAL_HOME = os.environ.get("HOME", str(Path.home()))
GUIDE = Path(__file__).resolve().parents[2] / "suites" / "guide"
WRONG_ORACLE_CONFTEST = '''
"""Make the fit model wrong on purpose for one scenario (the plugin must then fail it)."""
import harness.results.report as report
from harness.fit import FitResult
from harness.results.outcome import Outcome

_real = report.fit


def _wrong(scenario, trace=None):
    result = _real(scenario)
    if scenario.name != "wrong-oracle":
        return result
    bogus = {name: Outcome(admitted=False, message="the oracle is wrong on purpose")
             for name in result.outcomes}
    return FitResult(outcomes=bogus, steps=result.steps)


report.fit = _wrong
'''


def _copy(pytester: pytest.Pytester, source: str, name: str, expect: object = None) -> Path:
    """A copy of a guide scenario under suites/ (where the plugin collects), renamed."""
    data = yaml.safe_load((GUIDE / f"{source}.yaml").read_text())
    data["name"] = name
    if expect is not None:
        data["expect"] = expect
    path = pytester.path / "suites" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


WRONG_EXPECT = {"train": {"admitted": True, "placement": {"main": {"gpu-node-1": 4}}}}


def test_wrong_expectation_fails_against_the_fit_model(pytester: pytest.Pytester) -> None:
    _copy(pytester, "guide-required-host", "wrong-expect", WRONG_EXPECT)
    _copy(pytester, "guide-required-host", "right-expect")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*scenario wrong-expect: the fit model disagrees with the file's expect*",
            "*train/main: expected gpu-node-1=4, got gpu-node-3=4",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


@pytest.mark.cluster
def test_kueue_disagreeing_with_expect_or_oracle_fails_readably(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On real Kueue: a wrong expectation and a wrong oracle answer each fail with a diff,
    and an untouched copy passes."""
    _copy(pytester, "guide-required-host", "wrong-expect", WRONG_EXPECT)
    _copy(pytester, "guide-required-host", "wrong-oracle")
    _copy(pytester, "guide-required-host", "right-expect")
    pytester.makeconftest(WRONG_ORACLE_CONFTEST)
    monkeypatch.setenv("HOME", REAL_HOME)
    result = pytester.runpytest_subprocess("--cluster=local", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*scenario wrong-expect (*): Kueue, expect and the fit model disagree",
            "Kueue vs the file's expect:",
            "  train/main: expected gpu-node-1=4, got gpu-node-3=4",
            "artifacts: *",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(
        [
            "*scenario wrong-oracle (*): Kueue, expect and the fit model disagree",
            "Kueue vs the fit model:",
            "  train: predicted pending (the oracle is wrong on purpose), observed admitted "
            "(main: gpu-node-3=4)",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_cluster_runs_group_scenarios_by_feature_gates(pytester: pytest.Pytester) -> None:
    """Each change of Kueue feature gates restarts the cluster, so on --cluster=local the
    scenarios needing the same gates are collected next to each other (defaults first)."""
    gates = {"a": {"TASBalancedPlacement": True}, "b": None, "c": {"TASBalancedPlacement": True}}
    for name, wanted in gates.items():
        path = _copy(pytester, "guide-required-host", name)
        if wanted:
            data = yaml.safe_load(path.read_text())
            data["featureGates"] = wanted
            path.write_text(yaml.safe_dump(data, sort_keys=False))
    on_cluster = pytester.runpytest("--collect-only", "-q", "--cluster=local")
    ids = [line.split("::")[-1] for line in on_cluster.outlines if "::" in line]
    assert ids == ["b", "a", "c"]
    without = pytester.runpytest("--collect-only", "-q")
    assert [line.split("::")[-1] for line in without.outlines if "::" in line] == ["a", "b", "c"]
