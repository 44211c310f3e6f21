"""A replayed stream in HTML: the timeline (harness/html/timeline_svg.py) and, under it, the
rack-and-GPU map (harness/html/svgmap.py) of each track at chosen moments: the jobs running
then, on the nodes as the stream's node events had left them.

`replay_page` is `python -m harness replay FILE --format html`; `timeline_block` is what the
pytest report shows under a stream scenario.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from html import escape

from harness.html.page import page
from harness.html.palette import Palette
from harness.html.svgmap import render_map
from harness.html.timeline_svg import Track, axis_of, timeline_svg
from harness.html.world import cell_resource, map_views, occupancy, pod_sets, worlds
from harness.replay.figures import placement_at, spaced
from harness.results.outcome import Outcome


def default_moments(tracks: Sequence[Track]) -> list[float]:
    """Twelve evenly spaced moments over the shared time axis (the fragmentation figures'
    count, harness/replay/figures.py)."""
    axis = axis_of(tracks)
    return [round(at, 3) for at in spaced(axis.start, axis.end)]


def running_at(track: Track, at: float) -> dict[str, Outcome]:
    """The jobs running at `at` as admitted outcomes, with where they ran then."""
    moments = track.timeline.moments
    index = bisect.bisect_right([m.at for m in moments], at) - 1
    if index < 0:
        return {}
    out = {}
    for name in moments[index].running:
        admission = placement_at(track.timeline.jobs[name], at)
        if admission is not None:
            out[name] = Outcome(True, admission.placement, flavors=admission.flavors)
    return out


def maps_at(track: Track, moments: Sequence[float], key: str) -> str:
    """One column per moment: the track's maps of every flavor then."""
    scenario = track.scenario
    palette = Palette(pod_sets(scenario))
    resource = cell_resource(scenario)
    states = worlds(scenario)
    times = [s.at if s.at is not None else 0.0 for s in scenario.steps]
    columns = []
    for number, at in enumerate(moments):
        world = states[bisect.bisect_right(times, at)]  # node events up to `at`
        running = running_at(track, at)
        held = occupancy(scenario, world, running, resource)
        maps = "".join(
            render_map(view, palette, f"{key}t{number}m{m}", frozenset())
            for m, view in enumerate(map_views(scenario, world, held, resource))
        )
        columns.append(
            f'<div class="col"><p class="cap"><b>{_seconds(at)}</b>: {len(running)} running</p>'
            f"{maps}</div>"
        )
    return f'<div class="cols">{"".join(columns)}</div>'


def _seconds(at: float) -> str:
    """A moment as a reader counts it: 2618 s, 0.5 s."""
    return f"{at:.0f} s" if at >= 100 else f"{at:.3g} s"


def timeline_block(tracks: Sequence[Track], moments: Sequence[float] | None, key: str) -> str:
    """The timeline, then each track's rack maps at `moments` (default: default_moments)."""
    chosen = list(moments) if moments is not None else default_moments(tracks)
    parts = [f"<div>{timeline_svg(tracks, chosen)}</div>"]
    for index, track in enumerate(tracks):
        if chosen:
            parts.append(
                f"<details{' open' if index == 0 else ''}><summary>{escape(track.label)}: "
                f"the racks at {len(chosen)} "
                f"moments</summary>{maps_at(track, chosen, f'{key}k{index}')}</details>"
            )
    return "".join(parts)


def replay_page(tracks: Sequence[Track], moments: Sequence[float] | None, title: str) -> str:
    """`replay --format html`: one self-contained page."""
    block = timeline_block(tracks, moments, "r")
    return page(title, "", [block])
