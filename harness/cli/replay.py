"""`replay FILE [--compare OTHER] [--engine E] [--format json|text|csv|html|svg]`: a stream of
workloads (`submitAt`, `runFor` on a scenario's workloads) replayed on the fit model,
kueue-sim or a real cluster (`--engine local`: the embedded one, in real time at
`--time-scale`): when each was admitted, where, when it finished or was preempted, and the
stream's figures. `--compare OTHER` replays the same stream on another world (OTHER's
topology, flavors, queues, nodes and usage; OTHER's own workloads instead when it has some,
e.g. required vs preferred) and prints both."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from harness.backends.replay import ENGINES, Replayed, checked, replay_on
from harness.errors import InputError
from harness.replay.clock import DEFAULT_SCALE, TimeScale, scale_arg
from harness.scenario import ample_quota
from harness.scenario.model import Scenario

if TYPE_CHECKING:
    from harness.replay.engine import Timeline
    from harness.replay.stream import Stream


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the `replay` command."""
    cmd = sub.add_parser(
        "replay", help="replay a stream of workloads over time: when each ran, where"
    )
    cmd.add_argument(
        "file",
        help="the stream: a scenario whose workloads carry submitAt / runFor, a .jsonl or .csv "
        "stream (with --world), or Kueue's scheduler-performance generator.yaml",
    )
    cmd.add_argument(
        "--world",
        metavar="SCENARIO.yaml",
        help="the cluster a .jsonl/.csv stream (or a scenario's workloads) runs on: its "
        "topologies, flavors, queues, nodes and usage (default: the stream file's own)",
    )
    cmd.add_argument(
        "--compare",
        metavar="OTHER.yaml",
        help="replay the same stream on this world too (its own workloads when it has some) "
        "and print both (default: one world)",
    )
    cmd.add_argument(
        "--engine",
        choices=ENGINES,
        default="fit",
        help="what decides admissions: fit (the fit model), sim (Kueue's scheduler in "
        "process), local (the embedded cluster: real Kueue, KWOK nodes), kind or existing "
        "(default: fit)",
    )
    cmd.add_argument(
        "--time-scale",
        type=scale_arg,
        default=DEFAULT_SCALE,
        metavar="S",
        help="on a cluster, S stream seconds pass in one real second (default: "
        f"{DEFAULT_SCALE:g}: Kueue's timestamps are whole seconds, docs/replay.md)",
    )
    cmd.add_argument(
        "--kubeconfig",
        default=None,
        help="the cluster's kubeconfig for --engine existing (default: none)",
    )
    cmd.add_argument(
        "--format",
        choices=("json", "text", "csv", "html", "svg"),
        default="text",
        help="output form: csv is Kueue's perf-test figures per class and ClusterQueue usage, "
        "one table; html is a page with the timeline and the rack maps at --moments; "
        "svg the timeline alone (a picture for docs)",
    )
    cmd.add_argument(
        "--moments",
        metavar="SECONDS,...",
        type=_moments,
        help="seconds at which --format html draws the rack map, e.g. 600,3600 (default: 12 "
        "evenly spaced over the stream)",
    )
    cmd.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    from harness.replay.expect import failures
    from harness.replay.stream import load_stream

    stream = load_stream(args.file, args.world)
    runs = {"base": stream}
    if args.compare:
        other = load_stream(args.compare)
        runs["other"] = other if other.scenario.workloads else _same_stream(stream, other.scenario)
    done = _run_all(runs, args)
    timelines = {name: d.timeline for name, d in done.items()}
    results = {name: d.result for name, d in done.items()}
    expected = checked(stream.expect, args.engine)
    broken = failures(expected, results["base"], str(args.file)) if expected else []
    if args.format in ("html", "svg"):
        print(_picture(args, runs, timelines), end="")
    elif args.format == "json":
        payload = results["base"] if len(results) == 1 else results
        print(json.dumps(payload, indent=2))
    elif args.format == "csv":
        from harness.replay.perf_csv import render_csv

        print(render_csv(results), end="")
    else:
        for name, result in results.items():
            if len(results) > 1:
                print(f"== {name}: {args.file if name == 'base' else args.compare}")
            print(render_text(result))
        if len(results) > 1:
            print(render_differences(results["base"], results["other"]))
    for line in broken:
        print(f"{args.file}: replay.expect.{line}", file=sys.stderr)
    return 1 if broken else 0


def run(
    scenario: Scenario, classes: dict[str, str] | None = None, engine: str = "fit"
) -> dict[str, Any]:
    """The replay's JSON form: {"jobs": {name: record}, "summary": {...}}."""
    return replay_on(scenario, classes, engine).result


def _run_all(runs: dict[str, Stream], args: argparse.Namespace) -> dict[str, Replayed]:
    """Each stream on the chosen engine; a cluster or sim is started once for all of them."""
    if args.engine == "fit":
        return {name: replay_on(s.scenario, s.classes) for name, s in runs.items()}
    from harness.backends.base import create_backend

    options = {"kubeconfig": args.kubeconfig} if args.kubeconfig else {}
    backend = create_backend(args.engine, **options)
    scale = TimeScale(args.time_scale)
    try:
        out = {}
        for name, s in runs.items():
            done = replay_on(s.scenario, s.classes, args.engine, backend=backend, scale=scale)
            if done.phases:
                spent = ", ".join(f"{k} {v:.1f} s" for k, v in done.phases.items())
                print(f"{args.engine} cluster, {s.scenario.name}: {spent}", file=sys.stderr)
            out[name] = done
        return out
    finally:
        backend.close()


def _moments(text: str) -> list[float]:
    """`--moments 600,3600`: seconds of the stream's clock."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds separated by commas") from None
    if not values or any(v < 0 or v != v or v == float("inf") for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds at or above 0, e.g. 600,3600")
    return values


def _picture(
    args: argparse.Namespace, runs: dict[str, Stream], timelines: dict[str, Timeline]
) -> str:
    """--format html (the page) or svg (the timeline alone)."""
    from harness.html.timeline import replay_page
    from harness.html.timeline_svg import Track, timeline_svg

    files = {"base": args.file, "other": args.compare}
    tracks = [
        Track(f"{name}: {files[name]}" if len(runs) > 1 else str(args.file),
              s.scenario, timelines[name], s.classes)
        for name, s in runs.items()
    ]  # fmt: skip
    if args.format == "svg":
        return timeline_svg(tracks, args.moments or ()) + "\n"
    title = f"replay of {args.file}" + (f" vs {args.compare}" if args.compare else "")
    return replay_page(tracks, args.moments, title)


def _same_stream(base: Stream, other: Scenario) -> Stream:
    """OTHER's world (it has no workloads of its own) with the base stream."""
    from harness.replay.stream import Stream

    names = {cq.name for cq in other.cluster_queues}
    for w in base.scenario.workloads:
        if w.queue not in names:
            raise InputError(
                str(other.path),
                "clusterQueues",
                f"has no ClusterQueue {w.queue!r} for workload {w.name} of {base.scenario.path}",
            )
    workloads = base.scenario.workloads
    # An ample-quota ClusterQueue also covers the stream's requests.
    asked = {r for w in workloads for ps in w.pod_sets for r in ps.requests}
    widened = ample_quota.covering(dataclasses.replace(other, workloads=workloads), asked)
    queues = widened.cluster_queues
    return Stream(
        dataclasses.replace(other, workloads=workloads, cluster_queues=queues), base.classes
    )


COMPARED = (
    ("wait p50 (s)", ("timeToAdmission", "p50")),
    ("wait p90 (s)", ("timeToAdmission", "p90")),
    ("wait max (s)", ("timeToAdmission", "max")),
    ("wait mean (s)", ("timeToAdmission", "mean")),
    ("admitted", ("timeToAdmission", "admitted")),
    ("preemptions", ("preemptions",)),
    ("GPU utilisation", ("gpuUtilisation",)),
    ("last finish (s)", ("lastFinish",)),
    ("most waiting at once", ("maxPending",)),
)


def render_differences(base: dict[str, Any], other: dict[str, Any]) -> str:
    """The two replays' figures side by side, and how many jobs started at another time."""
    lines = ["== base vs other", f"{'':22} {'base':>12} {'other':>12}"]
    for title, path in COMPARED:
        values = []
        for result in (base, other):
            value: Any = result["summary"]
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            values.append("-" if value is None else f"{value:g}")
        lines.append(f"{title:22} {values[0]:>12} {values[1]:>12}")
    lines += _per_class_differences(base["summary"]["kueuePerf"], other["summary"]["kueuePerf"])
    moved = [
        name
        for name, job in base["jobs"].items()
        if name in other["jobs"]
        and [a["at"] for a in job["admissions"]][:1]
        != [a["at"] for a in other["jobs"][name]["admissions"]][:1]
    ]
    lines.append(f"jobs admitted at another time: {len(moved)} of {len(base['jobs'])}")
    return "\n".join(lines)


def _per_class_differences(base: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """Kueue's perf-test figures per class, side by side (a class one world lacks: -)."""
    lines = []
    rows = (("clusterQueueClasses", "usage", "CQ usage % "),
            ("workloadClasses", "averageTimeToAdmissionMs", "mean wait ms "))  # fmt: skip
    for kind, figure, title in rows:
        for name in sorted({*base[kind], *other[kind]}):
            values = [perf[kind].get(name, {}).get(figure) for perf in (base, other)]
            cells = ["-" if v is None else f"{v:.10g}" for v in values]
            lines.append(f"{(title + name)[:22]:22} {cells[0]:>12} {cells[1]:>12}")
    return lines


def render_text(result: dict[str, Any]) -> str:
    """One line a workload, then the figures."""
    lines = []
    for name, job in result["jobs"].items():
        where = " / ".join(
            f"{a['at']:g}s " + ", ".join(f"{n}={c}" for ps in a["placement"].values()
                                        for n, c in ps.items())
            for a in job["admissions"]
        )  # fmt: skip
        end = f", finished {job['finishedAt']:g}s" if job["finishedAt"] is not None else ""
        pre = f", preempted at {', '.join(f'{t:g}s' for t in job['preemptedAt'])}" if job[
            "preemptedAt"] else ""  # fmt: skip
        lines.append(
            f"{name}: submitted {job['submittedAt']:g}s, "
            + (f"admitted {where}" if where else "never admitted")
            + pre
            + _node_events(job)
            + end
        )
    s = result["summary"]
    tta = s["timeToAdmission"]
    if tta.get("admitted"):
        lines.append(
            f"time to admission: p50 {tta['p50']:g}s, p90 {tta['p90']:g}s, p99 {tta['p99']:g}s, "
            f"max {tta['max']:g}s ({tta['admitted']} of {s['jobs']} admitted)"
        )
    for title, key in (("per ClusterQueue", "timeToAdmissionByClusterQueue"),
                       ("per class", "timeToAdmissionByClass")):  # fmt: skip
        if sum(1 for f in s[key].values() if f.get("admitted")) > 1:
            lines.append(f"time to admission {title}: " + "; ".join(
                f"{name} p50 {f['p50']:g}s p90 {f['p90']:g}s max {f['max']:g}s"
                for name, f in s[key].items() if f.get("admitted")))  # fmt: skip
    usage = {cq: u for cq, u in s["clusterQueueUsage"].items() if u is not None}
    if usage:
        lines.append("ClusterQueue usage (Kueue's perf test): "
                     + ", ".join(f"{cq} {u:g}%" for cq, u in usage.items()))  # fmt: skip
    lines += _kueue_perf_lines(s["kueuePerf"])
    util = s["gpuUtilisation"]
    lines.append(
        f"GPU utilisation: {'n/a' if util is None else f'{util:.1%}'}; preemptions: "
        f"{s['preemptions']}; never admitted: {', '.join(s['neverAdmitted']) or 'none'}"
    )
    return "\n".join(lines)


def _kueue_perf_lines(perf: dict[str, Any]) -> list[str]:
    """Kueue's perf-test summary per class (harness/replay/perf_summary.py)."""
    lines = []
    usage = {c: f["usage"] for c, f in perf["clusterQueueClasses"].items()
             if f["usage"] is not None}  # fmt: skip
    if usage:
        lines.append("ClusterQueue usage per class (Kueue's perf test): "
                     + ", ".join(f"{c} {u:g}%" for c, u in usage.items()))  # fmt: skip
    waits = {c: f["averageTimeToAdmissionMs"] for c, f in perf["workloadClasses"].items()}
    if waits:
        lines.append("mean time to admission per class (Kueue's perf test): "
                     + ", ".join(f"{c} {ms} ms" for c, ms in waits.items()))  # fmt: skip
    return lines


def _node_events(job: dict[str, Any]) -> str:
    """A stream's node events on the job: evicted by a node failure, repaired in place."""
    out = ""
    if job.get("evictedAt"):
        out += f", evicted (node failure) at {', '.join(f'{t:g}s' for t in job['evictedAt'])}"
    for repair in job.get("replacements", ()):
        nodes = ", ".join(f"{n}={c}" for ps in repair["placement"].values() for n, c in ps.items())
        out += f", repaired at {repair['at']:g}s onto {nodes}"
    return out
