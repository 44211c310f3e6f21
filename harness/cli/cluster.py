"""`up` / `down`: the one way to leave a real Kueue running (the embedded cluster, no Docker).

`up [SCENARIO]` starts a cluster shaped as the scenario says, leaves it running and prints
`KUBECONFIG=<path>`; `down` stops every cluster `up` left (harness/live/updown.py).
`up --bare` is the cluster alone, as `python -m harness.providers.local up` gave it: its
kubeconfig, processes and ports, in the foreground until Ctrl-C (or `--detach`); `down RUN_DIR`
stops one such detached cluster.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from harness import progress


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the `up` and `down` commands."""
    up = sub.add_parser(
        "up",
        help="leave an embedded cluster running, shaped as a scenario says",
        description="Start the embedded cluster (real Kueue, no Docker), shape it as the "
        "scenario says (its workloads submitted and settled; a state with none is fine), add "
        "a LocalQueue in namespace default per ClusterQueue, named as it, print "
        "KUBECONFIG=<path> and leave it running until `down`. A version-1 scenario's "
        "ClusterQueue covers every resource its nodes offer. One `up` left running already: "
        "refused (exit 2, naming its KUBECONFIG) unless --another. With --bare: the cluster "
        "alone (no scenario, no queues), its kubeconfig, processes and ports printed, in the "
        "foreground until Ctrl-C unless --detach.",
    )
    up.add_argument(
        "scenario",
        nargs="?",
        help="scenario YAML file (default: the guide's example cluster "
        "without its workloads: 3 nodes of 4 GPUs in 2 racks)",
    )
    up.add_argument(
        "--another",
        action="store_true",
        help="start one even though a cluster `up` started is still running",
    )
    up.add_argument("--cluster", choices=("local",), default="local", help="where to run it")
    up.add_argument("--feature-gates", default="", help="extra Kueue gates, e.g. A=true,B=false")
    up.add_argument(
        "--bare", action="store_true", help="the cluster alone, in the foreground until Ctrl-C"
    )
    up.add_argument(
        "--detach", action="store_true", help="with --bare: return once ready, leave it up"
    )
    up.add_argument(
        "--keep-run-dir", action="store_true", help="with --bare: keep the run dir after stopping"
    )
    up.set_defaults(handler=_up)
    down = sub.add_parser(
        "down",
        help="stop every cluster `up` left running (or the one of RUN_DIR)",
    )
    down.add_argument(
        "run_dir", nargs="?", type=Path, help="the run dir `up --bare --detach` printed"
    )
    down.set_defaults(handler=_down)


def _up(args: argparse.Namespace) -> int:
    progress.show_on_stderr()
    if args.bare:
        if args.scenario is not None:
            raise _usage("up --bare starts the cluster alone: drop the scenario or --bare")
        return _up_bare(args.feature_gates, args.detach, args.keep_run_dir)
    if args.detach or args.keep_run_dir:
        raise _usage("--detach and --keep-run-dir go with --bare (`up` always detaches)")
    from harness.live.updown import up

    kubeconfig = up(args.scenario, args.feature_gates, another=args.another)
    print(f"KUBECONFIG={kubeconfig}")
    print(f"up: left running; stop it with: {_prog()} down", file=sys.stderr)
    return 0


def _down(args: argparse.Namespace) -> int:
    if args.run_dir is not None:
        from harness.providers.local import detached

        stopped = detached.stop_detached(args.run_dir)
        print(f"stopped {', '.join(stopped) or 'nothing (already down)'}")
        return 0
    from harness.live.updown import down

    lines = down()
    for line in lines:
        print(line)
    if not lines:
        print("down: no cluster started by `up` is running")
    return 0


def _up_bare(feature_gates: str, detach: bool, keep_run_dir: bool) -> int:
    """The cluster alone: kubeconfig, processes and ports; Ctrl-C (or SIGTERM) stops it."""
    from harness.kueue.gates import parse_gates
    from harness.providers.base import ClusterError
    from harness.providers.local.cluster import LocalCluster

    cluster = LocalCluster(
        keep=detach, keep_run_dir=keep_run_dir, feature_gates=parse_gates(feature_gates)
    )
    try:
        handle = cluster.start()
        print(f"kubeconfig: {handle.kubeconfig}", flush=True)
        for name, pid in cluster.pids().items():
            print(f"pid {name} {pid}", flush=True)
        assert cluster.ports is not None
        for name, port in cluster.ports.as_dict().items():
            print(f"port {name} {port}", flush=True)
        ready = cluster.timings["ready"]
        if detach:
            print(
                f"ready in {ready:.1f}s; left running, stop it with: "
                f"{_prog()} down {handle.run_dir}",
                flush=True,
            )
            return 0
        print(f"ready in {ready:.1f}s; Ctrl-C stops it", flush=True)
        while True:
            cluster.check()
            time.sleep(1.0)  # a liveness poll of our own processes, not a wait on Kubernetes
    except KeyboardInterrupt:
        return 0
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        if not (detach and cluster.handle is not None):
            cluster.stop()
            rss = cluster.peak_rss_kib()
            if rss:
                print(
                    "peak RSS MiB: " + ", ".join(f"{k}={v / 1024:.0f}" for k, v in rss.items()),
                    file=sys.stderr,
                )


def _usage(message: str) -> Exception:
    from harness.errors import HarnessError

    return HarnessError(f"up: {message}")


def _prog() -> str:
    from harness.cli.main import _prog as prog

    return prog()
