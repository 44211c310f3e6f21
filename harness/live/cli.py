"""`python -m harness snapshot | simulate | up | down`: ask a live cluster (docs/live-cluster.md).

snapshot and simulate only read the cluster (GETs and paged lists, no watch); simulate
predicts with the fit model or Kueue's scheduler in process, never by creating objects.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


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
    snap.add_argument("-o", "--output", help="file to write (default: standard output)")
    snap.add_argument("--name", default="snapshot", help="the scenario's name")
    snap.set_defaults(handler=_snapshot)


def _cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG; ~/.kube/config is never read unasked)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: its current-context)")


def _snapshot(args: argparse.Namespace) -> int:
    from harness.kube import Kube
    from harness.live.cluster_read import read_cluster
    from harness.live.snapshot import render, snapshot
    from harness.loader import scenario_from_data

    started = time.monotonic()
    kube = Kube(args.kubeconfig, context=args.context)
    try:
        state = read_cluster(kube)
    finally:
        kube.close()
    read_s = time.monotonic() - started
    snap = snapshot(state, args.name)
    text = render(snap)
    where = args.output or "<stdout>"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for line in snap.gaps.lines:
        print(f"snapshot: not represented: {line}", file=sys.stderr)
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
