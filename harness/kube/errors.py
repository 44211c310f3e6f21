"""Named API errors: callers catch NotFound or Conflict, never match message strings."""

from __future__ import annotations

from harness.errors import HarnessError


class KubeError(HarnessError):
    """The API server refused a request or could not be reached."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class NotFound(KubeError):
    """The object (or its kind) does not exist."""


class Conflict(KubeError):
    """AlreadyExists, or a write based on a stale resourceVersion."""


class WaitTimeout(KubeError):
    """A wait ran out of time; the message names the object, the condition and what was seen."""
