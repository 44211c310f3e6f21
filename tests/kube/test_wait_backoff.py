"""A long wait polls less often: past LONG_WAIT_S it waits on one of Kueue's or Kubernetes'
timers, and each poll costs the API server CPU the other clusters need."""

from __future__ import annotations

import pytest

from harness.kube import wait
from harness.kube.errors import WaitTimeout


class FakeClock:
    """time.monotonic and time.sleep of harness.kube.wait, without waiting."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(wait.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(wait.time, "sleep", fake.sleep)
    return fake


def test_polls_at_its_interval_then_slower_past_the_long_wait_mark(clock: FakeClock) -> None:
    started = clock.now
    done_at = started + 6.0

    def probe() -> str | None:
        return "done" if clock.now >= done_at else None

    assert wait.poll_for(probe, timeout=60, interval=0.1, gave_up=str) == "done"
    early = [s for s in clock.sleeps if s == 0.1]
    late = [s for s in clock.sleeps if s == wait.LONG_WAIT_INTERVAL_S]
    assert len(early) == pytest.approx(wait.LONG_WAIT_S / 0.1, abs=1)
    assert len(late) == pytest.approx((6.0 - wait.LONG_WAIT_S) / wait.LONG_WAIT_INTERVAL_S, abs=1)
    assert clock.now - done_at < wait.LONG_WAIT_INTERVAL_S + 1e-9


def test_the_last_pause_ends_at_the_deadline(clock: FakeClock) -> None:
    started = clock.now
    with pytest.raises(WaitTimeout, match=r"gave up after 3\.0"):
        wait.poll_for(
            lambda: None, timeout=3.0, interval=0.1, gave_up=lambda s: f"gave up after {s:.1f}"
        )
    assert clock.now - started == pytest.approx(3.0, abs=0.02)


def test_a_slower_interval_is_kept() -> None:
    assert wait.interval_after(1.0, 10.0) == 1.0
    assert wait.interval_after(0.1, 0.5) == 0.1
    assert wait.interval_after(0.1, 10.0) == wait.LONG_WAIT_INTERVAL_S
