"""`python -m harness ...`: the command line. Every user error is one line and exit code 2."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from harness.errors import HarnessError
from harness.outcome import Outcome, outcomes_to_json, replaced_to_json

if TYPE_CHECKING:
    from harness.scenario import Scenario

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


def _oracle(args: argparse.Namespace) -> int:
    from harness.fit import fit
    from harness.fit.explain import Explainer
    from harness.loader import load_scenario
    from harness.whatif import Whys

    scenario = load_scenario(args.file)
    if args.kueue_version is not None:  # Scenario re-derives expect for it (expectByVersion)
        scenario = dataclasses.replace(scenario, kueue=args.kueue_version)
    explainer = Explainer() if args.explain_domains else None
    result = fit(scenario, trace=explainer.trace if explainer else None)
    seen = [result.outcomes, *result.steps]
    whys = Whys.per_state(scenario, seen, reports=result.faults) if args.explain else []
    if args.format == "html":
        from harness.html import oracle_page

        sys.stdout.write(oracle_page(scenario, result))
    elif args.format == "json":
        payload = outcomes_to_json(result.outcomes)
        if result.steps:
            payload["_steps"] = [outcomes_to_json(s) for s in result.steps]
        states = [payload, *payload.get("_steps", [])] if whys else []
        for state, why in zip(states, whys, strict=True):
            for name, explained in why.json().items():
                state[name]["explain"] = explained
        print(json.dumps(payload, indent=2))
    else:
        print(render_text(result.outcomes))
        for index, after in enumerate(result.steps, 1):
            print(f"after step {index} ({scenario.steps[index - 1].action}):")
            print(render_text(after))
    to = sys.stdout if args.format == "text" else sys.stderr
    if args.format != "json":
        for index, why in enumerate(whys):
            if why.text():
                print(f"why ({_state_name(scenario, index)}):\n{why.text()}", file=to)
        if whys and not any(why.text() for why in whys):
            print(f"explain: {NOTHING_TO_EXPLAIN}", file=to)
    if explainer is not None:
        print(explainer.render(), file=to)
    return 0


NOTHING_TO_EXPLAIN = (
    "nothing to explain: every workload is admitted, none spread over several domains of a "
    "preferred level"
)


def _state_name(scenario: Scenario, index: int) -> str:
    if not index:
        return "after the submissions"
    return f"after step {index} ({scenario.steps[index - 1].action})"


def render_text(outcomes: dict[str, Outcome]) -> str:
    lines = []
    for name, outcome in outcomes.items():
        if outcome.admitted:
            lines.append(f"{name}: admitted")
            for pod_set, per_domain in outcome.placement.items():
                spread = ", ".join(f"{d}={n}" for d, n in sorted(per_domain.items()))
                lines.append(f"  {pod_set}: {spread}")
            for pod_set, count in outcome.unschedulable.items():
                why = outcome.unschedulable_reasons.get(pod_set, "")
                lines.append(f"  {pod_set}: {count} pod(s) can never run: {why}")
            for pod_set, per_node in replaced_to_json(outcome.replaced).items():
                moved = ", ".join(
                    f"{old} -> {new if isinstance(new, str) else ' + '.join(new)}"
                    for old, new in per_node.items()
                )
                lines.append(f"  {pod_set}: replaced {moved}")
            for pod_set, drifted in outcome.drift.items():
                spread = ", ".join(f"{d}={n}" for d, n in sorted(drifted.items()))
                lines.append(f"  {pod_set}: drift (running outside the assignment) {spread}")
        else:
            state = "rejected" if outcome.rejected else "pending"
            lines.append(f"{name}: {state}: {outcome.message}")
        if outcome.evicted is not None:
            lines.append(f"  evicted: {outcome.evicted.reason}: {outcome.evicted.message}")
    return "\n".join(lines)


def add_explain_options(parser: argparse.ArgumentParser) -> None:
    """--explain and --explain-domains, the same for `oracle` and `simulate`."""
    parser.add_argument(
        "--explain",
        action="store_true",
        help="for each pending pod set: the level it needs, the best domain and what holds "
        "the capacity it lacks, then what would make it fit (free these pods or workloads, "
        "required->preferred, a smaller count, another flavor), each checked by running the "
        "fit model again (at most 16 runs a workload); admitted pod sets that missed a "
        "preferred domain say so; after a fault step, per workload: which node failed and why, "
        "the replacement and the domain it was confined to, or why none was found. Text: "
        "after the outcomes (stderr with html); json: under "
        '"explain" in the workload\'s entry of each state where it waits',
    )
    parser.add_argument(
        "--explain-domains",
        action="store_true",
        help="also dump the free capacity of every domain at every level when Kueue looked "
        "and why nodes were rejected: on stdout after the outcomes with --format text, on "
        "stderr otherwise",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    oracle = sub.add_parser("oracle", help="predict admission and placement without a cluster")
    oracle.add_argument("file", help="scenario YAML file")
    oracle.add_argument(
        "--format",
        choices=("json", "text", "html"),
        default="json",
        help="json: the outcomes as JSON (as `run` prints them); text: one line a workload; "
        "html: a self-contained page with the rack-and-GPU map of each flavor",
    )
    oracle.add_argument(
        "--kueue-version",
        default=None,
        help="predict for this Kueue version: v0.17.1, v0.18.2 or v0.19.2 (its gate defaults "
        "and rules, harness/fit/versions.py); it overrides the file's kueue: (default: the "
        "file's kueue:, else v0.19.2)",
    )
    add_explain_options(oracle)
    oracle.set_defaults(handler=_oracle)
    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction[_Parser]], None]]:
    """Commands from their own modules (check, run, fuzz, leftovers), added when importable."""
    registrars = []
    for module_name in (
        "harness.checkcli",
        "harness.runcli",
        "harness.compare",
        "harness.fuzz.cli",
        "harness.leftovers",
        "harness.live.cli",
    ):
        try:
            module = __import__(module_name, fromlist=["register"])
        except ImportError:
            continue
        registrars.append(module.register)
    return registrars


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
