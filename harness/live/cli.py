"""`python -m harness snapshot | simulate`: ask a live cluster (docs/live-cluster.md).

snapshot and simulate only read the cluster (GETs and paged lists, no watch); simulate
predicts with the fit model or Kueue's scheduler in process, never by creating objects.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.oracle import NOTHING_TO_EXPLAIN, add_explain_options
from harness.errors import HarnessError
from harness.live import fail_on
from harness.live.simulate import ENGINES, Prediction

if TYPE_CHECKING:
    from harness.scenario.model import Scenario


SNAPSHOT_STATE = "the cluster now (the snapshot, before the manifests)"


class SnapshotDoesNotLoad(HarnessError):
    """A snapshot was written but does not load as a scenario (a gap not yet caught)."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    snap = sub.add_parser(
        "snapshot",
        help="write a live cluster's Kueue state as a version-2 scenario",
        description="Read a live cluster (only reads: paged lists, no watch) and write its "
        "Topologies, ResourceFlavors, ClusterQueues, WorkloadPriorityClasses, nodes, "
        "non-Kueue pods (usage), admitted and pending Workloads as a version-2 scenario. "
        "What it cannot represent is said on stderr and in the file.",
    )
    _cluster_options(snap)
    snap.add_argument(
        "-o",
        "--output",
        help="file to write, YAML, or JSON when it ends in .json (read back much faster by "
        "simulate --from) (default: standard output, YAML)",
    )
    snap.add_argument("--name", default="snapshot", help="the scenario's name")
    snap.set_defaults(handler=_snapshot)
    sim = sub.add_parser(
        "simulate",
        help="predict what Kueue does with manifests on a live cluster or a snapshot",
        description="Predict, for each manifest (batch/v1 Job, JobSet, LeaderWorkerSet or "
        "Workload), whether Kueue admits it now and where, or why it waits, and which "
        "admitted workloads it preempts. Nothing is created on the cluster.",
        epilog="exit codes: 0 predicted (whatever the prediction, unless --fail-on says "
        "otherwise); 1 when a --fail-on condition holds for a submitted job; 2 bad input "
        "(a manifest, snapshot or option: one line naming the file, the key and the problem). "
        "Warnings (stderr) never change it.",
    )
    sim.add_argument("manifests", nargs="+", metavar="MANIFEST.yaml", help="what you would apply")
    source = sim.add_mutually_exclusive_group()
    source.add_argument(
        "--kubeconfig",
        help="snapshot this cluster first (default: $KUBECONFIG unless --from is given)",
    )
    source.add_argument(
        "--from",
        dest="snapshot",
        metavar="SNAPSHOT.yaml",
        help="a file written by `snapshot` (or any version-2 scenario) (default: read the "
        "cluster of --kubeconfig)",
    )
    sim.add_argument("--context", help="kubeconfig context (default: its current-context)")
    sim.add_argument(
        "-n",
        "--namespace",
        help="namespace of manifests that name none (default: the context's, else default)",
    )
    sim.add_argument(
        "--engine",
        choices=ENGINES,
        default="fit",
        help="fit: the fit model; sim: Kueue's own scheduler in process",
    )
    sim.add_argument(
        "--format",
        choices=("text", "json", "html"),
        default="text",
        help="output form (html: one self-contained page with the rack-and-GPU map of every "
        "flavor as the snapshot has it, then after each submission; warnings and, with "
        "--explain, why a job waits under it)",
    )
    sim.add_argument(
        "--fail-on",
        type=fail_on.parse,
        default=(),
        metavar="CONDITIONS",
        help="exit 1 when any of these holds for any submitted job (comma list): pending (not "
        "admitted), preempts (admitted by preempting others), unschedulable (admitted, but "
        "some pods would never run) (default: none, exit 0 whatever the prediction)",
    )
    add_explain_options(sim)
    sim.set_defaults(handler=_simulate)


def _cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG; ~/.kube/config is never read unasked)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: its current-context)")


def _snapshot(args: argparse.Namespace) -> int:
    from harness.kube import Kube
    from harness.live.cluster_read import read_cluster
    from harness.live.snapshot import positions_line, render, render_json, snapshot
    from harness.scenario.loader import scenario_from_data

    started = time.monotonic()
    kube = Kube(args.kubeconfig, context=args.context)
    try:
        state = read_cluster(kube)
    finally:
        kube.close()
    read_s = time.monotonic() - started
    snap = snapshot(state, args.name)
    text = render_json(snap) if (args.output or "").endswith(".json") else render(snap)
    where = args.output or "<stdout>"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for line in snap.gaps.lines:
        print(f"snapshot: not represented: {line}", file=sys.stderr)
    print(f"snapshot: {positions_line(snap)}", file=sys.stderr)
    data = snap.data
    print(
        f"snapshot: wrote {where}: {len(data['nodes'])} nodes, {len(data['usage'])} usage "
        f"entries ({len(state.pods)} pods read), {len(data['admitted'])} admitted and "
        f"{len(data['workloads'])} pending workloads; read in {read_s:.1f}s, "
        f"{time.monotonic() - started:.1f}s in all",
        file=sys.stderr,
    )
    try:
        scenario_from_data(data, where)
    except HarnessError as err:
        raise SnapshotDoesNotLoad(
            f"the snapshot does not load as a scenario ({err}); please report it"
        ) from None
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from harness.live import manifests, simulate
    from harness.live.submissions import Cluster, submissions

    data, file, namespace = _snapshot_data(args)
    read = [m for path in args.manifests for m in manifests.read(Path(path))]
    subs = submissions(read, Cluster.of(data), args.namespace or namespace)
    _warn(dict.fromkeys(w for s in subs for w in s.warnings))
    started = time.monotonic()
    world = simulate.scenario(data, subs, file)
    states = simulate.run_engine(world, args.engine)
    predictions = simulate.predictions_of(states, data, subs)
    whys = simulate.explain(world, states, data, subs, args.engine) if args.explain else None
    if args.format == "html":
        from harness.html import outcomes_page

        page = outcomes_page(
            world, states[0], states[1:], label=args.engine, first_title=SNAPSHOT_STATE,
            notes=simulate.notes_by_workload(subs, whys),
        )  # fmt: skip
        print(page)
    elif args.format == "json":
        print(json.dumps(simulate.to_json(predictions, whys), indent=2))
    else:
        print(simulate.render_text(predictions))
    if whys is not None and args.format == "text":
        print(whys.text() or f"explain: {NOTHING_TO_EXPLAIN}")
    print(
        f"simulate: {len(subs)} workload(s) predicted by the {args.engine} engine"
        + (" and explained by the fit model" if whys is not None else "")
        + f" in {time.monotonic() - started:.2f}s",
        file=sys.stderr,
    )
    if args.explain_domains:
        _dump_domains(world)
    return _exit_code(predictions, args.fail_on)


def _exit_code(predictions: Mapping[str, Prediction], conditions: tuple[str, ...]) -> int:
    """1 when a --fail-on condition holds (each named on stderr), else 0."""
    failing = fail_on.failing(predictions, conditions)
    if failing:
        print(f"simulate: failing (--fail-on {','.join(conditions)}): {'; '.join(failing)}",
              file=sys.stderr)  # fmt: skip
        return fail_on.EXIT_FAILING
    return 0


def _warn(warnings: Iterable[str]) -> None:
    """Each warning once, on stderr: it never changes the exit code by itself."""
    for line in warnings:
        print(f"simulate: warning: {line}", file=sys.stderr)


def _dump_domains(world: Scenario) -> None:
    """--explain-domains: the fit model's per-domain trace of the whole simulation."""
    from harness.fit import fit
    from harness.fit.explain import Explainer

    explainer = Explainer()
    fit(world, trace=explainer.trace)
    print(explainer.render(), file=sys.stderr)


def _snapshot_data(args: argparse.Namespace) -> tuple[dict[str, Any], str, str]:
    """Scenario data to simulate on, its name for messages, and the default namespace."""
    from harness.kube import Kube
    from harness.live.cluster_read import read_cluster
    from harness.live.snapshot import read_file, snapshot

    if args.snapshot:
        return read_file(args.snapshot), args.snapshot, "default"
    kube = Kube(args.kubeconfig, context=args.context)
    try:
        state = read_cluster(kube)
    finally:
        kube.close()
    snap = snapshot(state)
    for line in snap.gaps.lines:
        print(f"simulate: not represented: {line}", file=sys.stderr)
    return snap.data, f"snapshot of {kube.host}", kube.access.namespace
