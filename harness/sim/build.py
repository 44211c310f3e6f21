"""Build kueue-sim (the Go program in harness/sim/go/) once per Kueue version and source hash
into the build cache.

The sim builds against each Kueue version the harness runs. The pinned one uses go/go.mod;
another uses go/versions/go.<version>.mod (+ .sum) through `go build -modfile`, with the
build tag `kueue_v0_<minor>` that picks that version's glue file (go/kueue_v0_<minor>.go:
the few calls whose package or signature differs). `make binaries` runs
`python -m harness build binaries sim`; a changed source means a new build directory, and
old ones are pruned so edits of harness/sim/go/ do not fill the disk.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path

from harness import progress
from harness.errors import HarnessError
from harness.toolchain.cache import cache_root, is_current, locked, populate
from harness.toolchain.gocmd import run_go
from harness.toolchain.pins import PINS

SIM_DIR = Path(__file__).resolve().parent / "go"
"""kueue-sim's Go module, shipped in the package (wheel and sdist): an installed harness
builds it as a work tree does."""
VERSIONS_DIR = "versions"
BINARY = "kueue-sim"
_VERSION = re.compile(r"^v0\.(?P<minor>\d+)\.\d+$")
_LEGACY = re.compile(r"^sim-[0-9a-f]{12}$")  # builds from before the version was in the name
logger = progress.logger("sim")


class SimVersionError(HarnessError):
    """The sim cannot be built against this Kueue version (no go.mod for it in harness/sim/go/)."""


def sim_versions(src: Path = SIM_DIR) -> tuple[str, ...]:
    """The Kueue versions the sim builds against: the pinned one, then those with a go.mod
    in harness/sim/go/versions/, newest first."""
    others = {p.name[len("go.") : -len(".mod")] for p in (src / VERSIONS_DIR).glob("go.v*.mod")}
    others.discard(PINS.kueue)
    return (PINS.kueue, *sorted(others, key=_minor_patch, reverse=True))


def _minor_patch(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.lstrip("v").split("."))


def _modfile(version: str, src: Path) -> Path:
    """The go.mod a version builds with (its go.sum sits next to it, as -modfile expects)."""
    if version == PINS.kueue:
        return src / "go.mod"
    if version not in sim_versions(src) or _VERSION.match(version) is None:
        raise SimVersionError(
            f"--kueue-version {version}: the sim builds against Kueue "
            f"{', '.join(sim_versions(src))} only "
            f"(no harness/sim/go/{VERSIONS_DIR}/go.{version}.mod)"
        )
    return src / VERSIONS_DIR / f"go.{version}.mod"


def go_build_args(version: str, out: Path, src: Path = SIM_DIR) -> list[str]:
    """`go build` arguments for the sim against `version`: its go.mod and its glue's tag."""
    args = ["build", "-trimpath", "-o", str(out)]
    if version != PINS.kueue:
        found = _VERSION.match(version)
        assert found is not None  # _modfile checked it
        args += [f"-modfile={_modfile(version, src)}", f"-tags=kueue_v0_{found['minor']}"]
    return [*args, "."]


def source_hash(src: Path = SIM_DIR, version: str = PINS.kueue) -> str:
    """Short sha256 over sim/'s Go files and the version's go.mod/go.sum: a changed source
    means a new build directory."""
    modfile = _modfile(version, src)
    files = sorted(p for p in src.glob("*.go") if p.is_file())
    if not files:
        raise HarnessError(
            f"no Go sources in {src}: the package's sim sources are missing "
            "(reinstall kueue-tas-harness; a wheel carries them as package data)"
        )
    digest = hashlib.sha256(version.encode() + b"\0")
    for path in [*files, modfile, modfile.with_suffix(".sum")]:
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def build_dir(version: str = PINS.kueue, src: Path = SIM_DIR) -> Path:
    """Where the binary for `version` and the current sources is (or will be) cached."""
    return cache_root() / f"sim-{version}-{source_hash(src, version)}"


def build_sim(src: Path = SIM_DIR, version: str | None = None) -> Path:
    """Path of the kueue-sim binary for `version` (default: the pinned Kueue) and the current
    sources, building it if needed."""
    version = version or PINS.kueue
    final = build_dir(version, src)
    fingerprint = {"sources": final.name.rsplit("-", 1)[1], "kueue": version}
    with locked(final.name):
        if is_current(final, fingerprint, [BINARY]):
            return final / BINARY
        logger.info(f"building kueue-sim for Kueue {version} ({final.name}) from {src}")

        def fill(tmp: Path) -> None:
            run_go(
                go_build_args(version, tmp / BINARY, src),
                label=f"building kueue-sim (Kueue {version})",
                cwd=src,
                log=tmp / "build.log",
            )

        populate(final, fingerprint, fill)
    prune_old_sims(keep=final)
    return final / BINARY


def prune_old_sims(keep: Path, newest: int = 3) -> list[Path]:
    """Remove sim builds of older sources of the same Kueue version (75 MB each), all but the
    `newest` by build time: every edit of harness/sim/go/ makes a new one, and a few stay for other
    checkouts. Builds for other versions are kept."""
    prefix = keep.name.rsplit("-", 1)[0] + "-"
    builds = sorted(
        (
            d
            for d in cache_root().glob("sim-*")
            if d.is_dir() and d != keep and (d.name.startswith(prefix) or _LEGACY.match(d.name))
        ),
        key=lambda d: d.stat().st_mtime,
        reverse=True,
    )
    removed = builds[max(newest - 1, 0) :]
    for old in removed:
        shutil.rmtree(old, ignore_errors=True)
    return removed


if __name__ == "__main__":  # the old name of `python -m harness build sim`
    from harness.cli.main import main

    versions = sys.argv[1:] or [PINS.kueue]
    sys.exit(max(main(["build", "sim", "--kueue-version", v]) for v in versions))
