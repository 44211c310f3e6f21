"""`python -m harness leftovers`: what embedded clusters left behind on this machine.

A run must stop every process it started and remove its files; this finds what did not:
processes running a binary from the harness's cache (etcd, kube-apiserver, Kueue, ...),
etcd data dirs (kth-etcd-kth-local-*) and run dirs (kth-local-*). Exit 0 when there is none, 1 when
there is some. Clusters left on purpose (--keep-cluster, `local up --detach`) are listed
too: stop them with `python -m harness down RUN_DIR`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.toolchain import cache


@dataclass(frozen=True)
class Leftovers:
    processes: list[str]
    paths: list[str]

    def __bool__(self) -> bool:
        return bool(self.processes or self.paths)


def _processes(root: Path) -> list[str]:
    """`pid path` of every process whose executable lies under the binary cache."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = Path(os.readlink(entry / "exe"))
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if exe.is_relative_to(root):
            found.append(f"{entry.name} {exe}")
    return sorted(found, key=lambda line: int(line.split()[0]))


def _paths(run_root: Path, shm: Path) -> list[str]:
    etcd = "kth-etcd-kth-local-*"  # LocalCluster's etcd data: kth-etcd-<run dir name>
    places = [(shm, etcd), (run_root, etcd), (run_root, "kth-local-*")]
    return sorted({str(p) for base, pattern in places if base.is_dir() for p in base.glob(pattern)})


def find(run_root: Path | None = None, shm: Path = Path("/dev/shm")) -> Leftovers:
    root = run_root or Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
    return Leftovers(_processes(cache.cache_root().resolve()), _paths(root, shm))


def _command(_: argparse.Namespace) -> int:
    left = find()
    for line in left.processes:
        print(f"process {line}")
    for path in left.paths:
        print(f"path {path}")
    print(f"{len(left.processes)} process(es), {len(left.paths)} path(s) left behind")
    return 1 if left else 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("leftovers", help="list processes and files clusters left behind")
    parser.set_defaults(handler=_command)
