"""`python -m harness ...`: the command line. Every user error is one line and exit code 2."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

from harness.errors import HarnessError

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for `yes | head -1`."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default (unless it says it already): "off" for a
    flag, "none" for an unset value. Descriptions keep their own line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or not action.option_strings or action.default is argparse.SUPPRESS:
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return f"{text} (default: off)"
        return f"{text} (default: {'none' if action.default is None else '%(default)s'})"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2, and --help shows
    every option's default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


COMMANDS = (
    "harness.cli.oracle",
    "harness.cli.check",
    "harness.cli.run",
    "harness.cli.compare_versions",
    "harness.cli.replay",
    "harness.live.cli",
    "harness.cli.cluster",
    "harness.cli.build",
    "harness.fuzz.cli",
    "harness.cli.leftovers",
    "harness.cli.summary",
    "harness.cli.init",
)
"""Every command's module, in --help order; each has `register(subparsers)`. A module that
fails to import is an error, never a command silently missing."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_prog(), description=__doc__)
    parser.add_argument(
        "--version", action="version", version=version_text(), help="print the versions and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module_name in COMMANDS:
        importlib.import_module(module_name).register(sub)
    return parser


def _prog() -> str:
    """`kth` when run as the console script, else `python -m harness`."""
    return "kth" if Path(sys.argv[0]).name == "kth" else "python -m harness"


def version_text() -> str:
    """The harness's version and the upstream versions it pins."""
    from harness.toolchain.pins import KUEUE_JOBSET, PINS

    return (
        f"kueue-tas-harness {package_version()}\n"
        f"Kueue {PINS.kueue} (also {', '.join(v for v in KUEUE_JOBSET if v != PINS.kueue)}), "
        f"JobSet {PINS.jobset}, Kubernetes {PINS.kubernetes}, etcd {PINS.etcd}, "
        f"KWOK {PINS.kwok}"
    )


def package_version() -> str:
    """The installed distribution's version (pyproject.toml is its one home)."""
    try:
        return metadata.version("kueue-tas-harness")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.handler(args))
        sys.stdout.flush()  # a reader that left shows here, not in Python's exit-time flush
        return code
    except BrokenPipeError:
        # `python -m harness oracle FILE | head -1`: the reader has what it wanted. Python's
        # recipe: point stdout at devnull so the exit-time flush is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except HarnessError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    """The `kth` console script and `python -m harness`: progress on stderr, then the command."""
    from harness import progress

    progress.show_on_stderr()  # builds, cluster starts and scenarios report as they go
    sys.exit(main())
