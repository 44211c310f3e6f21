"""`python -m harness.toolchain [build|paths] [COMPONENT...] [--kueue-version V]`: build or
locate binaries (Kueue and its JobSet at version V; without it, the default v0.19.2)."""

from __future__ import annotations

import argparse
import signal
import sys

from harness import progress
from harness.toolchain import KUEUE_JOBSET, ToolchainError, binary, components, pins_for
from harness.toolchain.cache import build_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.toolchain", description=__doc__)
    parser.add_argument("action", choices=["build", "paths"], nargs="?", default="build")
    parser.add_argument("names", nargs="*", help="components (default: all)")
    parser.add_argument(
        "--kueue-version",
        choices=tuple(KUEUE_JOBSET),
        default=None,
        help="build Kueue and the JobSet it expects at this version; the other components are "
        "shared by every version (default: v0.19.2, the only one `make binaries` builds)",
    )
    args = parser.parse_args(argv)
    progress.show_on_stderr()
    # SIGTERM unwinds like Ctrl-C: the running go command is killed and the half-built
    # temporary directory removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    pins = pins_for(args.kueue_version)
    table = components(pins)
    names = args.names or list(table)
    try:
        for name in names:
            path = binary(name, pins)
            took = build_seconds(path.parent) if args.action == "build" else None
            note = f"  (built in {took:.0f}s)" if took is not None else ""
            print(f"{name}\t{path}{note}")
    except ToolchainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
