"""`python -m harness check FILE...`: does each scenario's `expect` match the fit model?

No cluster, no pytest: each file is loaded, predicted and compared with its `expect` and its
steps' `expect`, printing the report pytest prints. Exit 0 when every file agrees, 1 when one
disagrees or has nothing to check, 2 when one is bad input. `--write-expect` first fills in
the expectations a file leaves out, from the fit model, and never changes one it has
(harness/cli/expect_writer.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli.expect_writer import fill_expect
from harness.errors import HarnessError
from harness.results.report import has_expectations, model_against_expect, predict
from harness.scenario.discover import scenario_paths
from harness.scenario.loader import load_scenario
from harness.scenario.notices import show_on_stderr

EXIT_AGREE, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add the `check` command (harness/cli/main.py calls this)."""
    check = subparsers.add_parser(
        "check",
        help="check scenario files' expect against the fit model (no cluster)",
        description=__doc__,
    )
    check.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="scenario YAML files, or folders to search for them",
    )
    check.add_argument(
        "--write-expect",
        action="store_true",
        default=False,
        help="first fill in what the expectations leave out from the fit model: a missing or "
        "empty expect (top level or a step's) and the workloads an expect does not mention; "
        "what is written stays (default: off, files are only read)",
    )
    check.set_defaults(handler=check_command)


def check_command(args: argparse.Namespace) -> int:
    paths = list(scenario_paths(args.files))
    if not paths:
        raise HarnessError(f"{' '.join(map(str, args.files))}: no scenario files found")
    return max(check_file(path, write_expect=args.write_expect) for path in paths)


def check_file(path: Path, write_expect: bool = False) -> int:
    """Check one file, print its report; the exit code it deserves."""
    try:
        scenario = load_scenario(path)
        show_on_stderr(scenario.warnings)
        predicted, no_model = predict(scenario)
        if predicted is None:
            raise HarnessError(no_model)
        if write_expect:
            text, filled = fill_expect(path.read_text(encoding="utf-8"), scenario, predicted)
            if filled:
                path.write_text(text, encoding="utf-8")
                print(f"{path}: wrote {', '.join(filled)} from the fit model")
                scenario = load_scenario(path)
    except HarnessError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        print(f"{path}: cannot write: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not has_expectations(scenario):
        print(
            f"{path}: no expect to check: `python -m harness check --write-expect {path}` "
            "fills it in from the fit model"
        )
        return EXIT_MISMATCH
    comparison = model_against_expect(scenario, predicted)
    print(comparison.render() if not comparison.agrees else comparison.summary())
    return EXIT_AGREE if comparison.agrees else EXIT_MISMATCH
