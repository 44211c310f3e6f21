"""Go's time.ParseDuration, which metav1.Duration uses: Kueue's configuration writes its
timers that way ("5m", "1h30m", "0")."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def seconds(duration: str) -> float:
    """The seconds of a duration the loader accepted (non-negative; "0" needs no unit)."""
    if duration == "0":
        return 0.0
    return sum(float(n) * _UNITS[u] for n, u in _PART.findall(duration))
