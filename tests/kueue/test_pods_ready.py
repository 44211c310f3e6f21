"""waitForPodsReady's configuration after Kueue v0.19.2's defaulting (apis/config/v1beta2/
defaults.go) and its backoff (pkg/workload/workload.go UpdateRequeueState)."""

from __future__ import annotations

import pytest

from harness.k8s.duration import seconds
from harness.kueue.pods_ready import PodsReadyConfig, within_step


def test_defaults_are_on_with_thirty_minutes() -> None:
    c = PodsReadyConfig.of({}, {})
    assert c.enabled and c.timeout == c.recovery_timeout == 1800.0
    assert not c.block_admission and c.backoff_limit is None
    assert (c.backoff_base, c.backoff_max, c.timestamp) == (60, 3600, "Eviction")


def test_gate_turns_it_off() -> None:
    assert not PodsReadyConfig.of({}, {"DisableWaitForPodsReady": True}).enabled


def test_recovery_timeout_defaults_to_the_timeout_and_zero_to_thirty_minutes() -> None:
    assert PodsReadyConfig.of({"waitForPodsReady": {"timeout": "5s"}}, {}).recovery_timeout == 5
    assert PodsReadyConfig.of({"waitForPodsReady": {"timeout": "0s"}}, {}).timeout == 1800
    cfg = PodsReadyConfig.of({"waitForPodsReady": {"timeout": "5s", "recoveryTimeout": "1m"}}, {})
    assert (cfg.timeout, cfg.recovery_timeout) == (5, 60)


@pytest.mark.parametrize(
    ("text", "want"), [("5s", 5.0), ("1m30s", 90.0), ("1h", 3600.0), ("250ms", 0.25), ("0", 0.0)]
)
def test_go_durations(text: str, want: float) -> None:
    assert seconds(text) == want


def test_backoff_doubles_and_caps() -> None:
    section = {"requeuingStrategy": {"backoffBaseSeconds": 3, "backoffMaxSeconds": 10}}
    c = PodsReadyConfig.of({"waitForPodsReady": section}, {})
    assert [c.backoff(n) for n in (1, 2, 3)] == [3, 6, 10]


def test_the_first_backoff_is_the_base_even_above_the_max() -> None:
    section = {"requeuingStrategy": {"backoffBaseSeconds": 20, "backoffMaxSeconds": 5}}
    c = PodsReadyConfig.of({"waitForPodsReady": section}, {})
    assert [c.backoff(n) for n in (1, 2, 3)] == [20, 5, 5]


def test_deactivation_after_the_limit() -> None:
    c = PodsReadyConfig.of(
        {"waitForPodsReady": {"requeuingStrategy": {"backoffLimitCount": 1}}}, {}
    )
    assert not c.deactivates(0) and c.deactivates(1)
    assert not PodsReadyConfig.of({}, {}).deactivates(100)


def test_horizon() -> None:
    assert within_step(5) and within_step(30) and not within_step(1800)
