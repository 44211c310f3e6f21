"""Stopping clusters however the harness ends: normally, on Ctrl-C, on SIGTERM, at exit.

SIGTERM is turned into SystemExit(143) in the main thread, so the same unwinding that
handles Ctrl-C (KeyboardInterrupt) stops clusters in order; atexit catches the rest.
"""

from __future__ import annotations

import atexit
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

_live: dict[int, Callable[[], None]] = {}
_installed = False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _interrupt_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def sigterm_interrupts() -> None:
    """Under pytest, SIGTERM (a CI job cancelled) must end the session as Ctrl-C does: a
    SystemExit inside a test only fails that test, and the next one starts a cluster again.
    Installed from the main thread, where no one else handles SIGTERM."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _interrupt_on_sigterm)


def _stop_all() -> None:
    for stop in list(_live.values())[::-1]:
        stop()


def register(key: int, stop: Callable[[], None]) -> None:
    """Remember a started cluster's stop function until `unregister`."""
    global _installed
    _live[key] = stop
    if not _installed:
        atexit.register(_stop_all)
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
        _installed = True


def unregister(key: int) -> None:
    _live.pop(key, None)


@contextmanager
def no_interrupts() -> Iterator[None]:
    """Hold off Ctrl-C/SIGTERM while stopping, so a second Ctrl-C cannot leave orphans.
    Stopping is bounded (SIGKILL after a grace period), so this cannot hang forever."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
