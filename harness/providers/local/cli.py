"""`python -m harness.providers.local up|down`: the embedded cluster for humans."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness import progress, toolchain
from harness.kueue_gates import GateError, parse_gates
from harness.providers.base import ClusterError
from harness.providers.local import detached
from harness.providers.local.cluster import LocalCluster


def _up(cluster: LocalCluster, detach: bool) -> int:
    handle = cluster.start()
    print(f"kubeconfig: {handle.kubeconfig}", flush=True)
    for name, pid in cluster.pids().items():
        print(f"pid {name} {pid}", flush=True)
    assert cluster.ports is not None
    for name, port in cluster.ports.as_dict().items():
        print(f"port {name} {port}", flush=True)
    if detach:
        print(
            f"ready in {cluster.timings['ready']:.1f}s; left running, stop it with: "
            f"python -m harness.providers.local down {handle.run_dir}",
            flush=True,
        )
        return 0
    print(f"ready in {cluster.timings['ready']:.1f}s; Ctrl-C stops it", flush=True)
    while True:
        cluster.check()
        time.sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    """`up`: start a cluster and keep it until Ctrl-C (or `--detach`); `down RUN_DIR`."""
    parser = argparse.ArgumentParser(prog="python -m harness.providers.local")
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("run_dir", nargs="?", type=Path, help="for down: the kept run dir")
    parser.add_argument("--keep", action="store_true", help="keep the run dir after stopping")
    parser.add_argument("--detach", action="store_true", help="return once ready, leave it up")
    parser.add_argument("--feature-gates", default="", help="Kueue gates, e.g. A=true,B=false")
    args = parser.parse_args(argv)
    progress.show_on_stderr()
    if args.action == "down":
        if args.run_dir is None:
            parser.error("down needs the run dir printed by `up --detach`")
        try:
            stopped = detached.stop_detached(args.run_dir)
        except ClusterError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"stopped {', '.join(stopped) or 'nothing (already down)'}")
        return 0
    try:
        gates = parse_gates(args.feature_gates)
    except GateError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    cluster = LocalCluster(keep=args.detach, keep_run_dir=args.keep, feature_gates=gates)
    try:
        return _up(cluster, args.detach)
    except KeyboardInterrupt:
        return 0
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except toolchain.ToolchainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        if not (args.detach and cluster.handle is not None):
            cluster.stop()
            rss = cluster.peak_rss_kib()
            if rss:
                print(
                    "peak RSS MiB: " + ", ".join(f"{k}={v / 1024:.0f}" for k, v in rss.items()),
                    file=sys.stderr,
                )
