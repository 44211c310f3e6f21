"""The few named errors the harness raises; callers catch these, never strings."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HarnessError(Exception):
    """Base class: anything the CLI turns into a one-line message."""


class InputError(HarnessError):
    """A user's file is malformed: one line `FILE: key.path: problem` (keypath.KeyPath.fail)."""

    def __init__(self, file: str, key: str, problem: str) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        super().__init__(f"{file}: {key}: {problem}" if key else f"{file}: {problem}")


class ScenarioError(InputError):
    """A scenario file is malformed: names the file, the key path and the problem."""


class UnsupportedVersionError(HarnessError):
    """The fit model was asked for a Kueue version it does not model."""


class Nondeterministic(HarnessError):
    """Kueue's own answer depends on a tie it breaks by UID, map order or timing (rules §8 of
    docs/dev/kueue-v0.19.2-rules-v2.md): no engine can predict it, so suites must avoid it
    and the fuzzer skips such cases."""


def closest(word: str, known: Iterable[str]) -> str:
    """The known word closest to a misspelt one (difflib's ratio of at least 0.6, its
    default), else ""."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return close[0] if close else ""


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`did you mean 'X'?` for the closest known word, else "": a message names the likely
    fix, not only the list."""
    match = closest(word, known)
    return f"did you mean {match!r}?" if match else ""
