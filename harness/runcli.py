"""`python -m harness run FILE.yaml [--cluster local|kind|existing|sim]`: one scenario for real.

Prints what Kueue did in the oracle's JSON form, then the differences from the file's
`expect` and from the fit model. Exit 0 when all three agree, 1 when they do not (or the
cluster failed), 2 on bad input. The cluster it starts is always stopped, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from harness.backends import BackendError, Observation, Unsupported, create_backend
from harness.errors import HarnessError
from harness.outcome import Outcome, outcomes_to_json
from harness.scenario import Scenario
from harness.verdict import against_expectations, against_prediction

CLUSTERS = ("local", "kind", "existing", "sim")


def register(subparsers: Any) -> None:
    """Add the `run` command (harness/cli.py calls this when the module imports)."""
    run = subparsers.add_parser("run", help="run one scenario on a real cluster with Kueue")
    run.add_argument("file", help="scenario YAML file")
    run.add_argument(
        "--cluster",
        choices=CLUSTERS,
        default="local",
        help="where to run it (default: the embedded local cluster)",
    )
    run.add_argument(
        "--keep-cluster",
        action="store_true",
        help="leave the cluster running afterwards and print its kubeconfig",
    )
    run.add_argument(
        "--feature-gates", default="", help="extra Kueue feature gates, e.g. A=true,B=false"
    )
    run.add_argument("--kubeconfig", default=None, help="kubeconfig for --cluster=existing")
    run.set_defaults(handler=run_command)


def _predict(scenario: Scenario) -> tuple[dict[str, Outcome], list[dict[str, Outcome]]] | str:
    from harness.fit import fit

    try:
        result = fit(scenario)
    except HarnessError as err:
        return str(err)
    return result.outcomes, result.steps


def diff_lines(scenario: Scenario, observed: Observation) -> tuple[list[str], list[str]]:
    """(differences from expect, differences from the fit model), one line each."""
    vs_expect = against_expectations(scenario.expect or {}, observed.outcomes)
    for index, step in enumerate(scenario.steps):
        if step.expect and index < len(observed.steps):
            vs_expect += [
                f"after step {index + 1} ({step.action}): {line}"
                for line in against_expectations(step.expect, observed.steps[index])
            ]
    predicted = _predict(scenario)
    if isinstance(predicted, str):
        return vs_expect, [f"(no fit model prediction: {predicted})"]
    outcomes, steps = predicted
    vs_model = against_prediction(outcomes, observed.outcomes)
    for index, (want, got) in enumerate(zip(steps, observed.steps, strict=False)):
        vs_model += [f"after step {index + 1}: {line}" for line in against_prediction(want, got)]
    return vs_expect, vs_model


def run_command(args: argparse.Namespace) -> int:
    from harness.loader import load_scenario

    scenario = load_scenario(args.file)  # bad input: HarnessError -> one line, exit 2
    backend = create_backend(
        args.cluster,
        keep=args.keep_cluster,
        feature_gates=args.feature_gates,
        kubeconfig=args.kubeconfig,
    )
    try:
        observed = backend.run(scenario)
    except Unsupported as why:
        print(
            f"{args.file}: the {args.cluster} backend cannot run this scenario: {why}",
            file=sys.stderr,
        )
        return 2
    except BackendError as err:
        print(f"{args.file}: {err}", file=sys.stderr)
        return 1
    finally:
        backend.close()
    payload: dict[str, Any] = outcomes_to_json(observed.outcomes)
    if observed.steps:
        payload["_steps"] = [outcomes_to_json(s) for s in observed.steps]
    print(json.dumps(payload, indent=2))
    vs_expect, vs_model = diff_lines(scenario, observed)
    real_model_diffs = [x for x in vs_model if not x.startswith("(no fit model")]
    for title, lines in (("vs the file's expect", vs_expect), ("vs the fit model", vs_model)):
        print(f"{title}: " + ("agree" if not lines else ""))
        for line in lines:
            print(f"  {line}")
    if (vs_expect or real_model_diffs) and observed.details:
        print(observed.details)
    if observed.artifacts is not None:
        print(f"artifacts: {observed.artifacts}")
    return 1 if vs_expect or real_model_diffs else 0
