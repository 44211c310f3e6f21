"""`python -m harness leftovers`: what embedded clusters left behind on this machine.

A run must stop every process it started and remove its files; this finds what did not:
processes running a binary from the harness's cache (etcd, kube-apiserver, Kueue, ...),
etcd data dirs (kth-etcd-kth-local-*) and run dirs (kth-local-*). A cluster whose owner (the
process that started it, recorded in its run dir) still runs is in use by another run on
this machine: listed apart, by pid, and not counted. Exit 0 when nothing is left behind, 1
when something is. Clusters left on purpose (--keep-cluster, `up`, `up --bare --detach`)
are left behind by design: stop them with `python -m harness down [RUN_DIR]`.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.providers.local import owner
from harness.toolchain import cache

SHM = Path("/dev/shm")
_RUN_DIR = re.compile(r"kth-local-[A-Za-z0-9_]+")


@dataclass
class InUse:
    """One cluster another process still runs: its owner's pid and command, its parts."""

    owner: int
    command: str
    processes: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Leftovers:
    processes: list[str]
    paths: list[str]
    in_use: list[InUse] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.processes or self.paths)


def _processes(root: Path) -> list[tuple[int, str]]:
    """(pid, `pid path`) of every process whose executable lies under the binary cache."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = Path(os.readlink(entry / "exe"))
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if exe.is_relative_to(root):
            found.append((int(entry.name), f"{entry.name} {exe}"))
    return sorted(found)


def _paths(run_root: Path, shm: Path) -> list[str]:
    etcd = "kth-etcd-kth-local-*"  # LocalCluster's etcd data: kth-etcd-<run dir name>
    places = [(shm, etcd), (run_root, etcd), (run_root, "kth-local-*")]
    return sorted({str(p) for base, pattern in places if base.is_dir() for p in base.glob(pattern)})


def _run_dir_owners(run_root: Path) -> dict[str, int]:
    """Run dir name -> its owner's pid, for the run dirs whose owner still runs."""
    out = {}
    for run_dir in run_root.glob("kth-local-*") if run_root.is_dir() else []:
        pid = owner.live_owner(run_dir)
        if pid is not None:
            out[run_dir.name] = pid
    return out


def find(run_root: Path | None = None, shm: Path | None = None) -> Leftovers:
    root = run_root or Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
    shm = shm or SHM
    owners = _run_dir_owners(root)
    in_use: dict[int, InUse] = {}
    left = Leftovers([], [])

    def user(pid: int | None) -> InUse | None:
        if pid is None:
            return None
        return in_use.setdefault(pid, InUse(pid, owner.command(pid)))

    for pid, line in _processes(cache.cache_root().resolve()):
        named = _RUN_DIR.search(owner.command(pid))
        # The run dir's recorded owner; else its parent, if a harness (Python) process: a
        # component dies with its owner, so a live parent is the owner (a run dir written
        # before owners were recorded has none).
        by = user((owners.get(named.group(0)) if named else None) or owner.parent(pid))
        (by.processes if by else left.processes).append(line)
        if by and named:
            owners.setdefault(named.group(0), by.owner)
    for path in _paths(root, shm):
        named = _RUN_DIR.search(Path(path).name)
        by = user(owners.get(named.group(0)) if named else None)
        (by.paths if by else left.paths).append(path)
    left.in_use.extend(in_use.values())
    return left


def _command(_: argparse.Namespace) -> int:
    found = find()
    for cluster in found.in_use:
        print(
            f"in use by pid {cluster.owner} ({cluster.command[:80] or '?'}): "
            f"{len(cluster.processes)} process(es), {len(cluster.paths)} path(s) "
            f"{', '.join(p for p in cluster.paths if '/kth-local-' in p)}".rstrip()
        )
    for line in found.processes:
        print(f"process {line}")
    for path in found.paths:
        print(f"path {path}")
    summary = f"{len(found.processes)} process(es), {len(found.paths)} path(s) left behind"
    if found.in_use:
        summary += f"; {len(found.in_use)} cluster(s) in use by running processes, not counted"
    print(summary)
    return 1 if found else 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "leftovers",
        help="list processes and files clusters left behind (exit 1 if any); clusters "
        "another run still uses are listed apart and not counted",
    )
    parser.set_defaults(handler=_command)
