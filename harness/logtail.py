"""Log tails for failure reports, in one place: the last lines of a log, and the lines of a
log that mention given names. Every crash, failed build and failed wait quotes its log
through here, so they all read alike."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

TAIL_LINES = 30
"""Enough for a Go panic's first frames or a bad flag's usage message, short enough to read."""


def last_lines(text: str, n: int = TAIL_LINES) -> str:
    """The last n lines of a text."""
    return "\n".join(text.splitlines()[-n:]) if n > 0 else ""


def tail(path: Path, n: int = TAIL_LINES) -> str:
    """The last n lines of a text file ("" when it cannot be read, e.g. not written yet)."""
    try:
        return last_lines(path.read_text(errors="replace"), n)
    except OSError:
        return ""


def quoted_tail(path: Path, n: int = TAIL_LINES) -> str:
    """`last lines of PATH:` and the tail, for the end of an error message."""
    return f"last lines of {path}:\n{tail(path, n)}"


def lines_about(text: str, names: Iterable[str]) -> str:
    """The lines mentioning one of the names (e.g. a scenario's Workloads), else all of it."""
    wanted = [n for n in names if n]
    hits = [line for line in text.splitlines() if any(n in line for n in wanted)]
    return "\n".join(hits) if hits else text
