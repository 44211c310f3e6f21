"""One parser for Kueue feature gates, used by every backend and provider alike.

`A=yes` once meant `false` to `python -m harness.providers.local up` and unknown gate names
reached kind's Helm values and kueue-sim unchecked; each entry point must now refuse both in
one line that names the offending item.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.backends.sim import SimBackend
from harness.cli.main import main as harness_main
from harness.errors import HarnessError
from harness.kueue.gates import GateError, closest, merged, parse_gates
from harness.providers.kind.cluster import KindCluster
from harness.providers.local.cluster import LocalCluster
from harness.runner.backend import ClusterBackend

BAD = ["TASBalancedPlacement=yes", "NoSuchGate=true", "TASBalancedPlacement", "=true"]

CONSTRUCTORS: dict[str, Callable[[str], object]] = {
    "sim backend": lambda g: SimBackend(feature_gates=g),
    "cluster backend": lambda g: ClusterBackend(name="local", feature_gates=g),
    "local provider": lambda g: LocalCluster(feature_gates=g),
    "kind provider": lambda g: KindCluster(feature_gates=g),
}


def test_parses_true_and_false_in_any_case() -> None:
    text = "TASBalancedPlacement=true, TASProfileMixed=FALSE,"
    assert parse_gates(text) == {"TASBalancedPlacement": True, "TASProfileMixed": False}
    assert parse_gates("") == parse_gates(None) == {}
    assert parse_gates({"TASProfileMixed": True}) == {"TASProfileMixed": True}


@pytest.mark.parametrize("bad", BAD)
def test_bad_items_are_one_line_errors(bad: str) -> None:
    with pytest.raises(GateError) as err:
        parse_gates(bad)
    assert str(err.value).startswith("--feature-gates: ")
    assert "\n" not in str(err.value)


def test_mapping_values_must_be_booleans_and_messages_speak_yaml() -> None:
    with pytest.raises(GateError, match=r"'TASProfileMixed=yes': expected NAME=true"):
        parse_gates({"TASProfileMixed": "yes"})  # type: ignore[dict-item]
    with pytest.raises(GateError, match=r"'NoSuchGate' is not a Kueue v0\.19 feature gate$"):
        parse_gates({"NoSuchGate": True})


def test_unknown_gate_names_the_closest_ones_not_all() -> None:
    with pytest.raises(GateError) as err:
        parse_gates("TASBalancedPlacment=true")
    message = str(err.value)
    assert "closest: TASBalancedPlacement" in message
    assert len(message) < 200
    assert closest("TopologyAwareScheduling") == ["TopologyAwareScheduling"]


def test_scenario_gates_win_over_the_command_line() -> None:
    assert merged({"A": True, "B": True}, {"B": False}) == {"A": True, "B": False}


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("where", CONSTRUCTORS)
def test_every_backend_and_provider_refuses_bad_gates(where: str, bad: str) -> None:
    with pytest.raises(HarnessError) as err:
        CONSTRUCTORS[where](bad)
    assert repr(bad.split("=")[0] if "NoSuch" in bad else bad) in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("bad", BAD)
def test_local_cluster_command_refuses_bad_gates_before_starting(
    bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Were the gates accepted, the start would fail on the empty cache without Go instead.
    monkeypatch.setenv("KTH_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert harness_main(["up", "--bare", "--feature-gates", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("--feature-gates: ") and "\n" not in err


@pytest.mark.parametrize("bad", ["TASBalancedPlacement=yes", "NoSuchGate=true"])
def test_pytest_refuses_bad_gates_in_one_line_before_running(
    bad: str, pytester: pytest.Pytester
) -> None:
    """Not a setup error with a traceback on every test that reaches a cluster."""
    pytester.makepyfile(test_uses_gates="def test_gates(kueue_cluster):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--feature-gates", bad)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ERROR: --feature-gates: "), errors
    assert "Traceback" not in result.stdout.str()


def test_a_null_gate_value_reads_as_yaml() -> None:
    with pytest.raises(GateError, match=r"'TASProfileMixed=null': expected NAME=true"):
        parse_gates({"TASProfileMixed": None})  # type: ignore[dict-item]
