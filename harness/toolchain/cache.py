"""Build cache layout: one directory per component and version, populated atomically.

A build goes into a temporary sibling directory that is renamed into place only when
complete, so an interrupted build never leaves a half-populated directory behind.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

STAMP = "build.json"


def cache_root() -> Path:
    """Root of built binaries: $KTH_CACHE, else ~/.cache/kueue-tas-harness."""
    override = os.environ.get("KTH_CACHE")
    root = Path(override) if override else Path.home() / ".cache" / "kueue-tas-harness"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def locked(name: str) -> Iterator[None]:
    """Exclusive lock so two test processes do not build the same thing at once."""
    path = cache_root() / f".lock-{name}"
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def is_current(final: Path, fingerprint: dict[str, str], expect: list[str]) -> bool:
    """True when `final` holds every expected file and was built from the same recipe."""
    stamp = final / STAMP
    if not stamp.is_file() or not all((final / f).is_file() for f in expect):
        return False
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return isinstance(recorded, dict) and recorded.get("fingerprint") == fingerprint


def populate(final: Path, fingerprint: dict[str, str], fill: Callable[[Path], None]) -> Path:
    """Call `fill(tmpdir)`, stamp it, and rename it to `final` (replacing a stale one)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    # Callers hold the component's lock, so any leftover is from a build that was killed.
    for stale in final.parent.glob(f".tmp-{final.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp makes it 0700; the cache may be shared
    started = time.monotonic()
    try:
        fill(tmp)
        stamp = {"fingerprint": fingerprint, "seconds": round(time.monotonic() - started, 1)}
        (tmp / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        if final.exists():
            trash = final.with_name(f".old-{final.name}-{os.getpid()}")
            final.rename(trash)
            shutil.rmtree(trash, ignore_errors=True)
        tmp.rename(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def build_seconds(final: Path) -> float | None:
    """Wall time the build of `final` took, from its stamp (None if unknown)."""
    try:
        value = json.loads((final / STAMP).read_text()).get("seconds")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None
