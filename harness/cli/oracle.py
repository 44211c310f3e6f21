"""`python -m harness oracle FILE`: the fit model's prediction, without a cluster, as JSON,
text or an HTML rack map, with --explain for why a workload waits."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from harness.results.outcome import outcomes_to_json
from harness.results.text import render_text

if TYPE_CHECKING:
    from harness.scenario.model import Scenario


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the `oracle` command."""
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


def _oracle(args: argparse.Namespace) -> int:
    from harness.fit import fit
    from harness.fit.explain import Explainer
    from harness.scenario.loader import load_scenario
    from harness.scenario.notices import show_on_stderr
    from harness.whatif import Whys

    scenario = load_scenario(args.file)
    show_on_stderr(scenario.warnings)
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
