"""One scenario in the report: per state (after the submissions, after each step) a row of
maps, one column per source (expected, real Kueue, fit model) where they disagree, a single
column where they agree; the workloads that are not admitted with Kueue's message and the
fit model's verdict; per map the largest free slot per level."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from harness.html.fragmentation import largest_free
from harness.html.palette import Palette
from harness.html.sources import Disagreement, Source, State, disagreement
from harness.html.svgmap import num, render_map
from harness.html.world import (
    MapView,
    World,
    cell_resource,
    map_views,
    occupancy,
    pod_sets,
    worlds,
)
from harness.results.comparison import message_matches
from harness.scenario.model import Node, Scenario, Step, Usage, Workload


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario as the report shows it. `scenario` is None for a file that did not load
    (`name` then is its stem); `sources` in display order; `status` is pytest's outcome (""
    outside pytest); `text` the comparison report, the loader's error or the skip reason."""

    scenario: Scenario | None
    sources: tuple[Source, ...] = ()
    name: str = ""
    status: str = ""
    text: str = ""
    duration: float = 0.0
    folder: str = ""


def scenario_section(result: ScenarioResult, key: str) -> str:
    """The scenario as a <details> element, open when it failed."""
    scenario = result.scenario
    opened = " open" if result.status in ("failed", "error", "") else ""
    head = (
        f'<summary><span class="st {result.status}">{escape(result.status or "scenario")}'
        f"</span> <b>{escape(scenario.name if scenario else result.name)}</b> "
        f'<span class="meta">{escape(result.folder)}{_seconds(result.duration)}</span></summary>'
    )
    body = []
    if scenario is not None:
        body.append(f'<p class="meta">{escape(scenario.path)}</p>')
        if scenario.description:
            body.append(f"<p>{escape(scenario.description)}</p>")
    if result.text:
        body.append(f"<pre>{escape(result.text)}</pre>")
    if scenario is not None and result.sources:
        palette = Palette(pod_sets(scenario))
        states = [
            _state(scenario, result, palette, index, world, f"{key}s{index}")
            for index, world in enumerate(worlds(scenario))
        ]
        body += [_legend(palette), *states]
    return f'<details class="sc {result.status}" id="{key}"{opened}>{head}{"".join(body)}</details>'


def _state(
    scenario: Scenario,
    result: ScenarioResult,
    palette: Palette,
    index: int,
    world: World,
    key: str,
) -> str:
    speaking = [s for s in result.sources if s.state(index) is not None]
    if not speaking:
        return ""
    differs = disagreement(speaking, index)
    failed = result.status in ("failed", "error") or differs.domains or differs.workloads
    shown = speaking if failed else speaking[-1:]
    resource = cell_resource(scenario)
    verdicts = next((s.verdicts[index] for s in speaking if index < len(s.verdicts)), {})
    columns = []
    for number, source in enumerate(shown):
        state = source.state(index)
        assert state is not None
        held = occupancy(scenario, world, state, resource)
        maps = [
            _map(view, palette, f"{key}c{number}m{m}", differs)
            for m, view in enumerate(map_views(scenario, world, held, resource))
        ]
        columns.append(
            f'<div class="col"><h4>{escape(source.label)}</h4>{"".join(maps)}'
            f"{_waiting(source, index, state, differs, verdicts)}</div>"
        )
    title = "after the submissions" if index == 0 else _step_title(index, scenario.steps[index - 1])
    return (
        f'<div class="state"><h3>{escape(title)}</h3>'
        f'<div class="cols">{"".join(columns)}</div></div>'
    )


def _map(view: MapView, palette: Palette, key: str, differs: Disagreement) -> str:
    levels = " → ".join([*view.levels, "node"])
    slots = " · ".join(
        f"{escape(s.level)} {num(s.largest)}"
        + (f" ({escape(s.domain)}; free in {s.with_free} of {s.domains})" if s.largest else "")
        for s in largest_free(view)
    )
    caption = (
        f'<p class="cap">flavor <b>{escape(view.flavor)}</b> ({escape(levels)}; one cell per '
        f"{escape(view.resource)})<br>largest free slot: {slots}</p>"
    )
    return caption + render_map(view, palette, key, differs.domains)


def _waiting(
    source: Source,
    index: int,
    state: State,
    differs: Disagreement,
    verdicts: Mapping[str, str],
) -> str:
    """Workloads not admitted (with Kueue's message and the fit model's verdict), and those
    admitted without a drawn placement."""
    items = []
    for name, outcome in state.items():
        cls = ' class="d"' if name in differs.workloads else ""
        if outcome.admitted:
            note = _admitted_note(source, index, name, outcome.placement, outcome.unschedulable)
            if note:
                items.append(f"<li{cls}><b>{escape(name)}</b>: {escape(note)}</li>")
            continue
        what = "rejected" if outcome.rejected else "pending"
        if outcome.preempted:
            what = "preempted, " + what
        text = f"<li{cls}><b>{escape(name)}</b>: {what}"
        if outcome.message:
            text += f": {escape(outcome.message)}"
        verdict = verdicts.get(name, "")
        if verdict and not message_matches(verdict.removeprefix("pending: "), outcome.message):
            text += f'<br><span class="meta">fit model: {escape(verdict)}</span>'
        items.append(text + "</li>")
    return f'<ul class="wl">{"".join(items)}</ul>' if items else ""


def _admitted_note(
    source: Source,
    index: int,
    name: str,
    placement: Mapping[str, Mapping[str, int]],
    unschedulable: Mapping[str, int],
) -> str:
    notes = []
    if name in source.open_placements(index):
        notes.append("admitted (placement not stated)")
    elif not placement:
        notes.append("admitted without a topology assignment")
    if unschedulable:
        counts = ", ".join(f"{ps}: {n}" for ps, n in unschedulable.items())
        notes.append(f"pods that never run: {counts}")
    return "; ".join(notes)


def _step_title(index: int, step: Step) -> str:
    target = step.target
    if isinstance(target, Node | Usage | Workload):
        named = target.name or (target.node if isinstance(target, Usage) else "")
    else:
        named = str(target)
    return f"after step {index}: {step.action} {named}"


def _legend(palette: Palette) -> str:
    swatches = "".join(
        f'<span class="sw" style="background:{colour}"></span>{escape(name)} '
        for name, colour in palette.items()
    )
    return (
        f'<p class="legend">{swatches}<span class="sw hatch"></span>not managed by Kueue '
        '<span class="sw dom"></span>assigned to a wider domain '
        '<span class="sw diff"></span>sources disagree</p>'
    )


def _seconds(duration: float) -> str:
    return f" · {duration:.2f} s" if duration else ""
