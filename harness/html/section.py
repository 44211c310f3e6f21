"""One scenario in the report: per state (after the submissions, after each step) a row of
maps, one column per source (expected, real Kueue, fit model) where they disagree, a single
column where they agree; the workloads that are not admitted with Kueue's message and the
fit model's verdict; per map the largest free slot per level."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape

from harness.html.fragmentation import Slot, largest_free
from harness.html.palette import Palette
from harness.html.quota_table import quota_block
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
from harness.results.quota import deleted_by
from harness.scenario.model import Node, Scenario, Step, Usage, Workload
from harness.whatif.verdict import level_word


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
    first_title: str = ""
    """The first state's title ("after the submissions" unless given: a snapshot's first
    state is the cluster before anything is submitted)."""
    notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Workload -> lines shown under it in the last state (warnings, --explain's verdict)."""
    extra: str = ""
    """Markup shown after the text: a stream scenario's timeline (harness/html/timeline.py)."""


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
        if not scenario.description.startswith(scenario.path):  # a snapshot says it once
            body.append(f'<p class="meta">{escape(scenario.path)}</p>')
        if scenario.description:
            body.append(f"<p>{escape(scenario.description)}</p>")
    if result.text:
        body.append(f"<pre>{escape(result.text)}</pre>")
    body.append(result.extra)
    if scenario is not None and result.sources:
        palette = Palette(pod_sets(scenario))
        states = [
            _state(scenario, result, palette, index, world, f"{key}s{index}")
            for index, world in enumerate(worlds(scenario))
        ]
        body += [_legend(palette, _drawn(result, len(states))), *states]
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
    notes = result.notes if index == len(scenario.steps) else {}
    columns = []
    for number, source in enumerate(shown):
        state = source.state(index)
        assert state is not None
        held = occupancy(scenario, world, state, resource)
        maps = [
            _map(view, palette, f"{key}c{number}m{m}", differs)
            for m, view in enumerate(map_views(scenario, world, held, resource))
        ]
        quota = quota_block(
            scenario,
            state,
            source.state(index - 1) if index else {},  # {}: the `admitted:` entries alone
            deleted_by(scenario, index),
            deleted_by(scenario, index - 1),
        )
        waiting = _waiting(source, index, state, differs, verdicts, notes)
        columns.append(
            f'<div class="col"><h4>{escape(source.label)}</h4><div class="cols">'
            f"<div>{''.join(maps)}{waiting}</div>{quota}</div></div>"
        )
    first = result.first_title or "after the submissions"
    title = first if index == 0 else _step_title(index, scenario.steps[index - 1])
    return (
        f'<div class="state"><h3>{escape(title)}</h3>'
        f'<div class="cols">{"".join(columns)}</div></div>'
    )


def _map(view: MapView, palette: Palette, key: str, differs: Disagreement) -> str:
    levels = " → ".join([*view.levels, "node"])
    slots = " · ".join(escape(_slot_text(s, view.resource)) for s in largest_free(view))
    caption = (
        f'<p class="cap">flavor <b>{escape(view.flavor)}</b> ({escape(levels)}; one cell per '
        f"{escape(view.resource)})<br>largest free slot: {slots}</p>"
    )
    return caption + render_map(view, palette, key, differs.domains)


def _slot_text(slot: Slot, resource: str) -> str:
    """`4 GPUs free together in rack r1; 1 of 2 racks has any free`."""
    word = level_word(slot.level)
    if not slot.largest:
        return f"no {word} has any {_unit(resource)} free"
    where = f"on node {slot.domain}" if word == "node" else f"in {word} {slot.domain}"
    verb = "has" if slot.with_free == 1 else "have"
    return (
        f"{num(slot.largest)} {_unit(resource)} free together {where}; "
        f"{slot.with_free} of {slot.domains} {word}s {verb} any free"
    )


def _unit(resource: str) -> str:
    return "GPUs" if resource.endswith("gpu") else resource


def _why(lines: tuple[str, ...]) -> str:
    """What the caller says under a workload (a warning, why it waits and what would help)."""
    return f'<pre class="why">{escape(chr(10).join(lines))}</pre>' if lines else ""


def _drawn(result: ScenarioResult, states: int) -> set[str]:
    """Workloads with cells on some map: admitted with a placement in some state."""
    return {
        name
        for source in result.sources
        for index in range(states)
        for name, outcome in (source.state(index) or {}).items()
        if outcome.admitted and outcome.placement
    }


def _waiting(
    source: Source,
    index: int,
    state: State,
    differs: Disagreement,
    verdicts: Mapping[str, str],
    notes: Mapping[str, tuple[str, ...]],
) -> str:
    """Workloads not admitted (with Kueue's message and the fit model's verdict), those
    admitted without a drawn placement, and any the caller has notes on (under each)."""
    items = []
    for name, outcome in state.items():
        cls = ' class="d"' if name in differs.workloads else ""
        why = _why(notes.get(name, ()))
        if outcome.admitted:
            note = _admitted_note(source, index, name, outcome.placement, outcome.unschedulable)
            if note or why:
                items.append(
                    f"<li{cls}><b>{escape(name)}</b>: {escape(note or 'admitted')}{why}</li>"
                )
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
        items.append(text + why + "</li>")
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


def _legend(palette: Palette, drawn: set[str]) -> str:
    swatches = "".join(
        f'<span class="sw" style="background:{colour}"></span>{escape(name)} '
        if name in drawn
        else f"{escape(name)} (pending, no cells) "
        for name, colour in palette.items()
    )
    return (
        f'<p class="legend">{swatches}<span class="sw hatch"></span>not managed by Kueue '
        '<span class="sw dom"></span>assigned to a wider domain '
        '<span class="sw diff"></span>sources disagree</p>'
    )


def _seconds(duration: float) -> str:
    return f" · {duration:.2f} s" if duration else ""
