"""`python -m harness.toolchain [build|paths] [COMPONENT...]`: build or locate binaries."""

from __future__ import annotations

import argparse
import signal
import sys

from harness import progress
from harness.toolchain import PINS, ToolchainError, binary, components
from harness.toolchain.cache import build_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.toolchain", description=__doc__)
    parser.add_argument("action", choices=["build", "paths"], nargs="?", default="build")
    parser.add_argument("names", nargs="*", help="components (default: all)")
    args = parser.parse_args(argv)
    progress.show_on_stderr()
    # SIGTERM unwinds like Ctrl-C: the running go command is killed and the half-built
    # temporary directory removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    table = components(PINS)
    names = args.names or list(table)
    try:
        for name in names:
            path = binary(name)
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
