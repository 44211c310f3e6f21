"""Build kueue-sim (the Go program in sim/) once per source hash into the build cache.

`make binaries` runs `python -m harness.sim.build`; a changed source means a new build
directory, and old ones are pruned so edits of sim/ do not fill the disk.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from harness import progress
from harness.errors import HarnessError
from harness.toolchain.cache import cache_root, is_current, locked, populate
from harness.toolchain.gocmd import run_go

SIM_DIR = Path(__file__).resolve().parents[2] / "sim"
BINARY = "kueue-sim"
SOURCE_SUFFIXES = (".go", ".mod", ".sum")
logger = progress.logger("sim")


def source_hash(src: Path = SIM_DIR) -> str:
    """Short sha256 over sim/'s Go sources: a changed source means a new build directory."""
    digest = hashlib.sha256()
    files = sorted(p for p in src.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)
    if not files:
        raise HarnessError(f"no Go sources in {src}: the sim backend needs the repo's sim/ folder")
    for path in files:
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def build_sim(src: Path = SIM_DIR) -> Path:
    """Path of the kueue-sim binary for the current sources, building it if needed."""
    digest = source_hash(src)
    final = cache_root() / f"sim-{digest}"
    fingerprint = {"sources": digest}
    with locked(f"sim-{digest}"):
        if is_current(final, fingerprint, [BINARY]):
            return final / BINARY
        logger.info(f"building kueue-sim ({digest}) from {src}")

        def fill(tmp: Path) -> None:
            run_go(
                ["build", "-trimpath", "-o", str(tmp / BINARY), "."],
                label="building kueue-sim",
                cwd=src,
                log=tmp / "build.log",
            )

        populate(final, fingerprint, fill)
    prune_old_sims(keep=final)
    return final / BINARY


def prune_old_sims(keep: Path, newest: int = 3) -> list[Path]:
    """Remove sim builds of older sources (75 MB each), all but the `newest` by build time:
    every edit of sim/ makes a new one, and a few stay for other checkouts."""
    builds = sorted(
        (d for d in cache_root().glob("sim-*") if d.is_dir() and d != keep),
        key=lambda d: d.stat().st_mtime,
        reverse=True,
    )
    removed = builds[max(newest - 1, 0) :]
    for old in removed:
        shutil.rmtree(old, ignore_errors=True)
    return removed


if __name__ == "__main__":
    progress.show_on_stderr()
    print(build_sim())
