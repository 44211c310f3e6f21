"""A replayed stream's timeline as one SVG: per track (a world, or the two of `--compare`)
the GPUs in use and the jobs waiting over time, then one bar per job (submitted -> admitted
-> finished, preemptions, node-failure evictions and repairs marked), all on one time axis.

Pure: tracks in, markup out; well-formed XML with its own <style>, so the same text is
inlined in the HTML report and saved as a standalone .svg (docs/img/). No script: a job's
details are its <title> (the browser's tooltip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from html import escape

from harness.html.palette import Palette
from harness.html.svgmap import num
from harness.replay.engine import JobRecord, Timeline
from harness.replay.figures import allocatable_gpus, gpu_series
from harness.scenario.model import Scenario

WIDTH = 960
LEFT, RIGHT = 150, 46  # job names on the left, the queue axis on the right
CHART_H = 96
ROW_H, BAR_H = 12, 8
TITLE_H, GAP, AXIS_H, LEGEND_H = 18, 14, 26, 20
MAX_BARS = 300
"""Jobs drawn per track: 15,000 rows help nobody; the first ones by submission are shown."""
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400, 172800, 604800)  # fmt: skip
"""Tick spacings in seconds a reader counts in (s, min, h, days)."""
TARGET_TICKS = 8

STYLE = (
    "<style>"
    ".tl text{font:11px system-ui,sans-serif;fill:#222}.tl .ttl{font-weight:bold;font-size:12px}"
    ".tl .ax{stroke:#999;stroke-width:1}.tl .grid{stroke:#e4e6ea;stroke-width:1}"
    ".tl .util{fill:#4c8bd6;fill-opacity:.35;stroke:#2f6db5;stroke-width:1}"
    ".tl .queue{fill:none;stroke:#e07b00;stroke-width:1.5}"
    ".tl .wait{stroke:#b5bac2;stroke-width:1.5}.tl .pre{stroke:#d0021b;stroke-width:2}"
    ".tl .evi{stroke:#7a0010;stroke-width:2}.tl .rep{fill:#111}"
    ".tl .mom{stroke:#555;stroke-width:1;stroke-dasharray:3 3}.tl .s{font-size:9px;fill:#667}"
    "</style>"
)


@dataclass(frozen=True)
class Track:
    """One replay to draw: its title, world, timeline and the jobs' classes."""

    label: str
    scenario: Scenario
    timeline: Timeline
    classes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Axis:
    """The shared time axis: seconds `start`..`end` onto x `LEFT`..`WIDTH - RIGHT`."""

    start: float
    end: float

    def x(self, at: float) -> float:
        span = self.end - self.start
        return LEFT + (at - self.start) / span * (WIDTH - LEFT - RIGHT) if span else LEFT

    @property
    def step(self) -> int:
        """The tick spacing: the first of TIME_STEPS giving at most TARGET_TICKS intervals."""
        span = self.end - self.start
        return next((s for s in TIME_STEPS if span / s <= TARGET_TICKS), TIME_STEPS[-1])

    def ticks(self) -> list[float]:
        step = self.step
        first = -(-self.start // step) * step
        count = int((self.end - first) // step) + 1
        return [first + i * step for i in range(max(count, 0))]

    def label(self, at: float) -> str:
        """Seconds in the unit the tick spacing is counted in: 90s, 15m, 2h, 1.5d."""
        for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
            if self.step >= size:
                return f"{at / size:g}{unit}"
        return f"{at:g}s"


def axis_of(tracks: Sequence[Track]) -> Axis:
    """From the stream's 0 (or an earlier event) to the last event of any track."""
    moments = [m.at for t in tracks for m in t.timeline.moments]
    start = min([0.0, *moments])
    end = max([*moments, start + 1])
    return Axis(start, end)


def group_of(tracks: Sequence[Track]) -> tuple[str, dict[str, str]]:
    """What a bar's colour says, and per job its value: the ClusterQueue when the streams use
    several, else the class when there are several, else the job itself (coloured as in the
    rack maps, which colour by workload)."""
    queue: dict[str, str] = {}
    klass: dict[str, str] = {}
    for track in tracks:
        for name, job in track.timeline.jobs.items():
            queue.setdefault(name, job.workload.queue)
            klass.setdefault(
                name, track.classes.get(name) or job.workload.priority_class or "default"
            )
    if len(set(queue.values())) > 1:
        return "ClusterQueue", queue
    if len(set(klass.values())) > 1:
        return "class", klass
    return "job", {name: name for name in queue}


def timeline_svg(tracks: Sequence[Track], moments: Sequence[float] = ()) -> str:
    """The tracks stacked on one time axis, `moments` marked on every track."""
    axis = axis_of(tracks)
    kind, groups = group_of(tracks)
    values = list(groups.values()) if kind == "job" else sorted(set(groups.values()))
    palette = Palette(values)
    y = top = float(LEGEND_H)
    bodies = []
    for track in tracks:
        body, height = _track(track, axis, groups, palette, y)
        bodies.append(body)
        y += height + GAP
    bottom = y - GAP
    parts = [
        _legend(palette if kind != "job" else Palette(), kind, 0.0),
        _axis(axis, top, bottom),  # grid first: the bars are drawn over it
        *bodies,
        _moments(axis, moments, top, bottom),
    ]
    height = bottom + AXIS_H
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tl" width="{WIDTH}" '
        f'height="{num(height)}" viewBox="0 0 {WIDTH} {num(height)}" role="img" '
        f'aria-label="replay timeline">{STYLE}{"".join(parts)}</svg>'
    )


def _track(
    track: Track, axis: Axis, groups: Mapping[str, str], palette: Palette, y: float
) -> tuple[str, float]:
    jobs = sorted(track.timeline.jobs.values(), key=lambda j: j.submitted_at)
    shown = jobs[:MAX_BARS]
    title = escape(track.label)
    if len(jobs) > len(shown):
        title += f" (first {len(shown)} of {len(jobs)} jobs by submission)"
    out = [f'<text class="ttl" x="4" y="{num(y + 13)}">{title}</text>']
    chart = _chart(track, axis, y + TITLE_H)
    out.append(chart)
    rows_y = y + TITLE_H + CHART_H + 6
    out.append(f'<g class="bars" data-jobs="{len(shown)}">')
    for index, job in enumerate(shown):
        colour = palette.colour(groups[job.workload.name])
        out.append(_bar(job, axis, rows_y + index * ROW_H, colour, track.timeline))
    out.append("</g>")
    return "".join(out), TITLE_H + CHART_H + 6 + len(shown) * ROW_H


def _chart(track: Track, axis: Axis, y: float) -> str:
    """GPU utilisation (area, left scale 0-100 %) and queue length (line, right scale)."""
    points = gpu_series(track.scenario, track.timeline)
    total = allocatable_gpus(track.scenario)
    most = max((p.pending for p in points), default=0)
    top, bottom = y + 4, y + CHART_H - 4
    x0, x1 = axis.x(axis.start), axis.x(axis.end)

    def at_share(share: Fraction | float) -> float:
        return bottom - float(share) * (bottom - top)

    area = [f"M{num(x0)} {num(bottom)}"]
    queue: list[str] = []
    for index, point in enumerate(points):
        x = axis.x(point.at)
        nxt = axis.x(points[index + 1].at) if index + 1 < len(points) else x1
        used = point.gpus / point.allocatable if point.allocatable else Fraction(0)
        area.append(f"L{num(x)} {num(at_share(used))}L{num(nxt)} {num(at_share(used))}")
        level = at_share(point.pending / most) if most else bottom
        queue.append(f"{'M' if not queue else 'L'}{num(x)} {num(level)}L{num(nxt)} {num(level)}")
    area.append(f"L{num(x1)} {num(bottom)}Z")
    labels = (
        f'<text class="s" x="{LEFT - 4}" y="{num(top + 8)}" text-anchor="end">100% GPUs</text>'
        f'<text class="s" x="{LEFT - 4}" y="{num(bottom)}" text-anchor="end">0</text>'
        f'<text class="s" x="{num(x1 + 4)}" y="{num(top + 8)}">{most} wait</text>'
        f'<text class="s" x="{num(x1 + 4)}" y="{num(bottom)}">0</text>'
    )
    return (
        f'<g class="chart" data-gpus="{num(total)}" data-max-pending="{most}">'
        f'<rect x="{num(x0)}" y="{num(top)}" width="{num(x1 - x0)}" '
        f'height="{num(bottom - top)}" fill="#fafbfc" stroke="#d6d9de"/>'
        f'<path class="util" d="{"".join(area)}">'
        f"<title>GPUs in use (of {num(total)})</title></path>"
        f'<path class="queue" d="{"".join(queue)}"><title>jobs waiting</title></path>'
        f"{labels}</g>"
    )


def _bar(job: JobRecord, axis: Axis, y: float, colour: str, timeline: Timeline) -> str:
    """Waiting as a grey line, each run as a coloured bar, ends of runs marked."""
    name = job.workload.name
    end = timeline.moments[-1].at if timeline.moments else job.submitted_at
    mid = y + ROW_H / 2
    out = [
        f'<g class="job" data-job="{escape(name)}"><title>{escape(_tooltip(job))}</title>'
        f'<text x="{LEFT - 4}" y="{num(mid + 4)}" text-anchor="end">{escape(_short(name))}</text>'
    ]
    stops = sorted([*job.preempted_at, *job.evicted_at])
    waiting_from: float | None = job.submitted_at
    for admission in job.admissions:
        if waiting_from is not None:
            out.append(_line("wait", axis.x(waiting_from), axis.x(admission.at), mid))
        stop = next((t for t in stops if t >= admission.at), None)
        until = stop if stop is not None else end if job.finished_at is None else job.finished_at
        x = axis.x(admission.at)
        out.append(
            f'<rect class="run" x="{num(x)}" y="{num(mid - BAR_H / 2)}" '
            f'width="{num(max(axis.x(until) - x, 1.0))}" height="{BAR_H}" fill="{colour}"/>'
        )
        waiting_from = stop
        if stop is not None:
            stops.remove(stop)
            kind = "evi" if stop in job.evicted_at else "pre"
            xs = axis.x(stop)
            out.append(f'<line class="{kind}" x1="{num(xs)}" y1="{num(mid - 6)}" '
                       f'x2="{num(xs)}" y2="{num(mid + 6)}"/>')  # fmt: skip
    if waiting_from is not None:  # never admitted, or waiting again at the end
        out.append(_line("wait", axis.x(waiting_from), axis.x(end), mid))
    for repair in job.replacements:
        xr = axis.x(repair.at)
        out.append(f'<path class="rep" d="M{num(xr)} {num(mid - 4)}l3 4l-3 4l-3 -4Z"/>')
    out.append("</g>")
    return "".join(out)


def _line(cls: str, x0: float, x1: float, y: float) -> str:
    if x1 <= x0:
        return ""
    return f'<line class="{cls}" x1="{num(x0)}" y1="{num(y)}" x2="{num(x1)}" y2="{num(y)}"/>'


def _short(name: str, limit: int = 22) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _tooltip(job: JobRecord) -> str:
    parts = [f"{job.workload.name} ({job.workload.queue}): submitted {job.submitted_at:g}s"]
    for a in job.admissions:
        nodes = ", ".join(f"{n}={c}" for ps in a.placement.values() for n, c in ps.items())
        parts.append(f"admitted {a.at:g}s {nodes}".rstrip())
    parts += [f"preempted {t:g}s" for t in job.preempted_at]
    parts += [f"evicted (node failure) {t:g}s" for t in job.evicted_at]
    parts += [f"repaired {r.at:g}s" for r in job.replacements]
    parts.append(f"finished {job.finished_at:g}s" if job.finished_at is not None else "running")
    return "; ".join(parts)


def _legend(palette: Palette, kind: str, y: float) -> str:
    """The colours (when they stand for ClusterQueues or classes) and the marks."""
    x, out = 4.0, []
    mid = y + 9

    def label(text: str) -> None:
        nonlocal x
        out.append(f'<text x="{num(x)}" y="{num(y + 13)}">{escape(text)}</text>')
        x += 6.2 * len(text) + 14

    if palette.items():
        label(f"{kind}:")
    for name, colour in palette.items():
        out.append(f'<rect x="{num(x)}" y="{num(y + 4)}" width="10" height="10" fill="{colour}"/>')
        x += 14
        label(name)
    across = f'x1="{{x}}" y1="{num(mid)}" x2="{{x2}}" y2="{num(mid)}"'
    upright = f'x1="{{xm}}" y1="{num(y + 3)}" x2="{{xm}}" y2="{num(y + 15)}"'
    marks = (
        ("GPUs in use", f'<rect class="util" x="{{x}}" y="{num(y + 4)}" width="14" height="10"/>'),
        ("jobs waiting", f'<line class="queue" {across}/>'),
        ("waiting", f'<line class="wait" {across}/>'),
        ("preempted", f'<line class="pre" {upright}/>'),
        ("evicted (node failure)", f'<line class="evi" {upright}/>'),
        (
            "repaired (node replaced)",
            f'<path class="rep" d="M{{xm}} {num(y + 5)}l3 4l-3 4l-3 -4Z"/>',
        ),
    )
    for text, mark in marks:
        out.append(mark.format(x=num(x), x2=num(x + 14), xm=num(x + 7)))
        x += 18
        label(text)
    return f'<g class="legend">{"".join(out)}</g>'


def _moments(axis: Axis, moments: Sequence[float], top: float, bottom: float) -> str:
    out = []
    for at in (m for m in moments if axis.start <= m <= axis.end):
        x = axis.x(at)
        out.append(f'<line class="mom" x1="{num(x)}" y1="{num(top)}" x2="{num(x)}" '
                   f'y2="{num(bottom)}"><title>rack map at {at:g}s</title></line>')  # fmt: skip
    return f'<g class="moments" data-count="{len(moments)}">{"".join(out)}</g>'


def _axis(axis: Axis, top: float, bottom: float) -> str:
    ticks = axis.ticks()
    out = [f'<line class="ax" x1="{LEFT}" y1="{num(bottom)}" x2="{num(axis.x(axis.end))}" '
           f'y2="{num(bottom)}"/>']  # fmt: skip
    for at in ticks:
        x = axis.x(at)
        out.append(
            f'<line class="grid" x1="{num(x)}" y1="{num(top)}" x2="{num(x)}" y2="{num(bottom)}"/>'
            f'<text x="{num(x)}" y="{num(bottom + 14)}" text-anchor="middle">'
            f"{escape(axis.label(at))}</text>"
        )
    return (
        f'<g class="axis" data-from="{axis.start:g}" data-to="{axis.end:g}" '
        f'data-ticks="{len(ticks)}">{"".join(out)}</g>'
    )
