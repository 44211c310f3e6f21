"""`python -m harness run FILE.yaml [--cluster local|kind|existing|sim]`: one scenario for real.

Prints what Kueue did in the oracle's JSON form, then the report pytest prints (Kueue against
the file's `expect` and against the fit model). Exit 0 when all three agree, 1 when they do
not (or the cluster failed), 2 on bad input. The cluster it starts is always stopped, also
on Ctrl-C.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from harness.backends.base import (
    BackendError,
    Unsupported,
    add_backend_options,
    backend_options,
    create_backend,
    kueue_version_for,
)
from harness.results.outcome import outcomes_to_json
from harness.results.report import observed_against_both, predict


def register(subparsers: Any) -> None:
    """Add the `run` command (harness/cli/main.py calls this when the module imports)."""
    run = subparsers.add_parser("run", help="run one scenario on a real cluster with Kueue")
    run.add_argument("file", help="scenario YAML file")
    add_backend_options(run.add_argument, cluster_default="local", cluster_help="where to run it")
    run.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from harness.scenario.loader import load_scenario
    from harness.scenario.notices import show_on_stderr

    scenario = load_scenario(args.file)  # bad input: HarnessError -> one line, exit 2
    show_on_stderr(scenario.warnings)
    if args.kueue_version is not None:  # checked as that version's (the fit model refuses it)
        scenario = dataclasses.replace(scenario, kueue=args.kueue_version)
    else:
        args.kueue_version = kueue_version_for(args.cluster, scenario.kueue)
    predicted, no_model = predict(scenario)
    backend = create_backend(args.cluster, **backend_options(lambda name: getattr(args, name)))
    try:
        observed = backend.run(scenario)
        # Compared while the cluster still holds the workloads: evidence is read on request.
        comparison = observed_against_both(scenario, predicted, observed, no_model)
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
    print(f"ran on Kueue {observed.kueue or '(version not known)'} (--cluster={args.cluster})")
    print(comparison.render() if not comparison.agrees else comparison.summary())
    if comparison.agrees and observed.artifacts is not None:
        print(f"artifacts: {observed.artifacts}")
    return 0 if comparison.agrees else 1
