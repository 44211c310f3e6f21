"""`build [binaries|sim|tools|NAME...] [--kueue-version V]`: build (or reuse) what the engines
need into the cache (~/.cache/kueue-tas-harness): the embedded cluster's binaries, Kueue's
scheduler in process (the sim) and the CLI tools the kind path drives (kind, helm, kubectl,
kueuectl, actionlint). Each line says where the result is and whether it was built now or cached."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import progress

GROUPS = ("binaries", "sim", "tools")
DEFAULT = ("binaries", "sim")
"""What `build` alone makes: everything the fit model, the sim and the embedded cluster use."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the `build` command."""
    build = sub.add_parser(
        "build",
        help="build (or reuse) the upstream binaries, the sim and the CLI tools, with progress",
        description=__doc__,
    )
    build.add_argument(
        "what",
        nargs="*",
        help="binaries (the embedded cluster's components), sim, tools, or one component or "
        "tool by name (etcd, kube-apiserver, kueue, kind, helm, ...) (default: binaries sim)",
    )
    build.add_argument(
        "--kueue-version",
        default=None,
        help="build Kueue, its JobSet and the sim at this version (v0.17.1, v0.18.2, v0.19.2), "
        "or `all`: each of them, the default first (what the suites run; `make binaries`); "
        "the other components are shared by every version (default: v0.19.2)",
    )
    build.add_argument(
        "--paths", action="store_true", help="only print where each is cached, build nothing"
    )
    build.set_defaults(handler=_build)


def _build(args: argparse.Namespace) -> int:
    from harness.toolchain import pins_for

    progress.show_on_stderr()
    # SIGTERM unwinds like Ctrl-C: the running go command is killed and the half-built
    # temporary directory removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    done: set[str] = set()
    for version in _versions(args.kueue_version):
        _build_version(args.what or DEFAULT, pins_for(version), args.paths, done)
    return 0


def _versions(asked: str | None) -> list[str | None]:
    """`all`: every Kueue version the embedded cluster runs, the default first. Each version's
    Kueue binary is built before its sim, which then reuses most of its compiled packages
    (same module versions): built here, ahead of the tests, no test worker waits minutes
    for a build while the others queue behind it."""
    from harness.toolchain import KUEUE_JOBSET, PINS

    if asked != "all":
        return [asked]
    return [PINS.kueue, *(v for v in KUEUE_JOBSET if v != PINS.kueue)]


def _build_version(what: Sequence[str], pins: Any, paths: bool, done: set[str]) -> None:
    """Build `what` at `pins`; `done` holds the builds already listed (a component or tool
    every Kueue version shares is listed once)."""
    from harness.toolchain import components
    from harness.toolchain.tools import TOOLS

    table = components(pins)

    def once(key: str, name: str, make: tuple[Callable[[], Path], bool]) -> None:
        if key not in done:
            done.add(key)
            _one(name, make)

    for name in what:
        if name == "binaries":
            for c in table:
                once(table[c].dirname, c, _component(c, pins, paths))
        elif name == "sim":
            once(f"sim-{pins.kueue}", "sim", _sim(pins.kueue, paths))
        elif name == "tools":
            for tool in TOOLS:
                once(tool, tool, _tool(tool, paths))
        elif name in table:
            once(table[name].dirname, name, _component(name, pins, paths))
        elif name in TOOLS:
            once(name, name, _tool(name, paths))
        else:
            from harness.toolchain import ToolchainError

            known = [*GROUPS, *table, *TOOLS]
            raise ToolchainError(f"build: unknown {name!r}; known: {', '.join(known)}")


def _one(name: str, make: tuple[Callable[[], Path], bool]) -> None:
    """Run one build and print `NAME<TAB>PATH  (built in Ns | cached)`."""
    run, only_path = make
    started = time.time()
    path = run()
    if only_path:
        print(f"{name}\t{path}")
        return
    print(f"{name}\t{path}  ({_how(path, started)})", flush=True)


def _how(path: Path, started: float) -> str:
    """ "built in Ns" when the cache stamp is from this run, "cached" when it was there."""
    from harness.toolchain.cache import STAMP, build_seconds

    stamp = path.parent / STAMP
    if not stamp.exists():
        return "yours (set by its KTH_* variable)"
    if stamp.stat().st_mtime < started:
        return "cached"
    took = build_seconds(path.parent)
    return f"built in {took:.0f}s" if took is not None else "built"


def _component(name: str, pins: Any, only_path: bool) -> tuple[Callable[[], Path], bool]:
    from harness import toolchain
    from harness.toolchain import cache

    if only_path:
        comp = toolchain.components(pins)[name]
        return (lambda: cache.cache_root() / comp.dirname / comp.name), True
    return (lambda: toolchain.binary(name, pins)), False


def _sim(version: str, only_path: bool) -> tuple[Callable[[], Path], bool]:
    from harness.sim import build

    if only_path:
        return (lambda: build.build_dir(version) / build.BINARY), True
    return (lambda: build.build_sim(version=version)), False


def _tool(name: str, only_path: bool) -> tuple[Callable[[], Path], bool]:
    from harness.toolchain import tools

    if only_path:
        return (lambda: tools.cached_path(name)), True
    return (lambda: tools.ensure_built(name)), False
