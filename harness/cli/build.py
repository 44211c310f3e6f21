"""`build [binaries|sim|tools|NAME...] [--kueue-version V]`: build (or reuse) what the engines
need into the cache (~/.cache/kueue-tas-harness): the embedded cluster's binaries, Kueue's
scheduler in process (the sim) and the CLI tools the kind path drives (kind, helm, kubectl,
kueuectl, actionlint). Each line says where the result is and whether it was built now or cached."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
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
        help="build Kueue, its JobSet and the sim at this version (v0.17.1, v0.18.2, v0.19.2); "
        "the other components are shared by every version (default: v0.19.2)",
    )
    build.add_argument(
        "--paths", action="store_true", help="only print where each is cached, build nothing"
    )
    build.set_defaults(handler=_build)


def _build(args: argparse.Namespace) -> int:
    from harness.toolchain import components, pins_for
    from harness.toolchain.tools import TOOLS

    progress.show_on_stderr()
    # SIGTERM unwinds like Ctrl-C: the running go command is killed and the half-built
    # temporary directory removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    pins = pins_for(args.kueue_version)
    table = components(pins)
    for name in args.what or DEFAULT:
        if name == "binaries":
            for component in table:
                _one(component, _component(component, pins, args.paths))
        elif name == "sim":
            _one("sim", _sim(pins.kueue, args.paths))
        elif name == "tools":
            for tool in TOOLS:
                _one(tool, _tool(tool, args.paths))
        elif name in table:
            _one(name, _component(name, pins, args.paths))
        elif name in TOOLS:
            _one(name, _tool(name, args.paths))
        else:
            from harness.toolchain import ToolchainError

            known = [*GROUPS, *table, *TOOLS]
            raise ToolchainError(f"build: unknown {name!r}; known: {', '.join(known)}")
    return 0


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
