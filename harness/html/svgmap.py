"""The rack-and-GPU map of one flavor as SVG: groups (blocks, racks) -> nodes -> one cell
per unit of the drawn resource (a GPU), coloured by workload, foreign usage hatched.

Pure: a MapView in, markup out. A map of more than COLLAPSE_AT nodes draws each rack as a
tile with a histogram of free GPUs per node; the rack's node rows wait in a <template> that
the page's script shows under the map on click (harness/html/page.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from html import escape

from harness.html.palette import Palette
from harness.html.world import MapView, NodeView, Run

COLLAPSE_AT = 100
"""Above this many nodes a map shows racks, not nodes: 1,000 node rows are unreadable."""
CHAR_W = 6.6  # width of an 11px monospace character
ROW_H = 15
BAR_H = 11
HEAD_H = 15
PAD = 4
GAP = 6
MAX_W = 1100
BAR_MAX = 160
UNIT_MAX = 12
TILE_W, TILE_H = 124, 62
HIST_BINS = 16


def num(value: Fraction | float) -> str:
    """Short decimal for SVG coordinates and labels: 8, 2.5, 0.33."""
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def natural(text: str) -> list[object]:
    """Sort key putting r2 before r10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


@dataclass
class _Box:
    width: float
    height: float
    body: str


@dataclass
class _Metrics:
    name_w: float
    unit: float
    bar_w: float

    @classmethod
    def of(cls, nodes: Sequence[NodeView]) -> _Metrics:
        longest = max((len(n.name) for n in nodes), default=4)
        most = max((max(n.capacity, n.used) for n in nodes), default=Fraction(1))
        unit = min(UNIT_MAX, BAR_MAX / float(most)) if most > 0 else UNIT_MAX
        return cls(longest * CHAR_W + 6, unit, float(most) * unit)


@dataclass
class _Renderer:
    view: MapView
    palette: Palette
    key: str
    marked: frozenset[str]
    metrics: _Metrics
    templates: list[str] = field(default_factory=list)

    def is_marked(self, node: NodeView) -> bool:
        return node.name in self.marked or any(r.domain in self.marked for r in node.runs)

    def group(self, label: str, nodes: Sequence[NodeView], depth: int, collapsed: bool) -> _Box:
        """A group at `depth` of the view's levels: a frame around its children, or (at the
        level just above the nodes) a rack of node rows, or a tile when collapsed."""
        if depth == len(self.view.levels):
            return self.tile(label, nodes) if collapsed else self.rack(label, nodes)
        children: dict[str, list[NodeView]] = {}
        for node in nodes:
            children.setdefault(node.path[depth], []).append(node)
        boxes = [
            self.group(value, children[value], depth + 1, collapsed)
            for value in sorted(children, key=natural)
        ]
        width, height, body = _flow(boxes, MAX_W - 2 * PAD * (depth + 1))
        if depth == 0:
            return _Box(width, height, body)
        return _frame(label, self.view.levels[depth - 1], width, height, body, "blk")

    def rack(self, label: str, nodes: Sequence[NodeView]) -> _Box:
        m = self.metrics
        rows = [
            self.row(node, i * ROW_H)
            for i, node in enumerate(sorted(nodes, key=lambda n: natural(n.name)))
        ]
        width = m.name_w + m.bar_w + 4 + _badge_width(nodes)
        level = self.view.levels[-1] if self.view.levels else ""
        return _frame(label, level, width, len(rows) * ROW_H, "".join(rows), "rack")

    def row(self, node: NodeView, y: int) -> str:
        m = self.metrics
        classes = "node" + (" off" if node.unready or node.cordoned else "")
        parts = [
            f'<g class="{classes}" transform="translate(0,{y})">'
            f"<title>{escape(self.describe(node))}</title>",
            f'<text class="n" x="0" y="11">{escape(node.name)}</text>',
            f'<rect class="f" x="{num(m.name_w)}" y="2" width="{num(node.capacity * m.unit)}" '
            f'height="{BAR_H}"/>',
        ]
        x = m.name_w
        for run in node.runs:
            width = float(run.amount) * m.unit
            if width > 0:
                parts.append(self.run(run, x, width))
                x += width
        parts.append(self.grid(node))
        if node.unready or node.cordoned:
            parts.append(
                f'<rect class="u" x="{num(m.name_w)}" y="2" '
                f'width="{num(node.capacity * m.unit)}" height="{BAR_H}"/>'
            )
        badges = _badges(node)
        if badges:
            parts.append(
                f'<text class="b" x="{num(m.name_w + m.bar_w + 4)}" y="11">{badges}</text>'
            )
        if self.is_marked(node):
            width = m.name_w + m.bar_w + 4
            parts.append(f'<rect class="d" x="-2" y="0" width="{num(width)}" height="{ROW_H}"/>')
        parts.append("</g>")
        return "".join(parts)

    def run(self, run: Run, x: float, width: float) -> str:
        resource = self.view.resource
        what = f"{run.owner}: {run.pods} pod(s), {num(run.amount)} {resource}"
        if run.foreign:
            what += " (not managed by Kueue)"
            fill, cls = "url(#kth-hatch)", "x"
        else:
            fill, cls = self.palette.colour(run.owner), ""
        if run.in_domain:
            what += f" (assigned to {run.domain}; kube-scheduler picks the node)"
            cls += " dom"
        cls_attr = f' class="{cls.strip()}"' if cls.strip() else ""
        return (
            f'<rect{cls_attr} x="{num(x)}" y="2" width="{num(width)}" height="{BAR_H}" '
            f'fill="{fill}"><title>{escape(what)}</title></rect>'
        )

    def grid(self, node: NodeView) -> str:
        """Cell borders as one dashed line: a 1px dash every unit."""
        unit = self.metrics.unit
        if unit < 4 or node.capacity <= 1:
            return ""
        x0 = self.metrics.name_w
        return (
            f'<line class="gr" x1="{num(x0)}" y1="7.5" x2="{num(x0 + float(node.capacity) * unit)}"'
            f' y2="7.5" stroke-width="{BAR_H}" stroke-dasharray="1 {num(unit - 1)}"/>'
        )

    def describe(self, node: NodeView) -> str:
        resource = self.view.resource
        text = f"{node.name}: {num(node.capacity)} {resource}, {num(node.free)} free"
        if node.unready:
            text += "; not ready"
        if node.cordoned:
            text += "; cordoned"
        if node.taints:
            text += "; taints: " + ", ".join(node.taints)
        return text

    def tile(self, label: str, nodes: Sequence[NodeView]) -> _Box:
        """A collapsed rack: free GPUs per node as a histogram, what holds it as a strip;
        the node rows themselves wait in a template."""
        template_id = f"{self.key}-r{len(self.templates)}"
        self.templates.append(
            f'<template id="{template_id}">{self.standalone(label, nodes)}</template>'
        )
        body = [
            f'<g class="tile" data-expand="{template_id}" data-panel="{self.key}-panel">',
            f"<title>{escape(self.histogram_text(label, nodes))} (click: show the nodes)</title>",
            f'<rect class="rack{" d" if any(map(self.is_marked, nodes)) else ""}" '
            f'width="{TILE_W}" height="{TILE_H}" rx="3"/>',
            f'<text class="h" x="{PAD}" y="11">{escape(label)}</text>',
            f'<text class="s" x="{PAD}" y="22">{len(nodes)} nodes, '
            f"{num(sum((n.free for n in nodes if n.usable), Fraction(0)))}/"
            f"{num(sum((n.capacity for n in nodes), Fraction(0)))} free</text>",
            self.histogram(nodes),
            self.strip(nodes),
            "</g>",
        ]
        return _Box(TILE_W, TILE_H, "".join(body))

    def histogram(self, nodes: Sequence[NodeView]) -> str:
        counts = _free_counts(nodes)
        top = max(counts, default=1) or 1
        bar_w = (TILE_W - 2 * PAD) / len(counts)
        bars = []
        for i, count in enumerate(counts):
            height = 18 * count / top
            bars.append(
                f'<rect class="hb" x="{num(PAD + i * bar_w)}" y="{num(48 - height)}" '
                f'width="{num(max(bar_w - 1, 1))}" height="{num(height)}"/>'
            )
        return (
            "".join(bars) + f'<line class="ax" x1="{PAD}" y1="48.5" x2="{TILE_W - PAD}" y2="48.5"/>'
        )

    def strip(self, nodes: Sequence[NodeView]) -> str:
        """Share of the rack's cells per owner (foreign usage hatched)."""
        total = float(sum((n.capacity for n in nodes), Fraction(0))) or 1.0
        held: dict[tuple[str, bool], Fraction] = {}
        for node in nodes:
            for run in node.runs:
                held[(run.owner, run.foreign)] = held.get((run.owner, run.foreign), 0) + run.amount
        parts, x, span = [], float(PAD), TILE_W - 2 * PAD
        for (owner, foreign), amount in held.items():
            width = span * float(amount) / total
            fill = "url(#kth-hatch)" if foreign else self.palette.colour(owner)
            parts.append(
                f'<rect x="{num(x)}" y="52" width="{num(width)}" height="6" fill="{fill}"/>'
            )
            x += width
        return f'<rect class="f" x="{PAD}" y="52" width="{span}" height="6"/>' + "".join(parts)

    def histogram_text(self, label: str, nodes: Sequence[NodeView]) -> str:
        counts = _free_counts(nodes)
        spread = ", ".join(f"{i} free: {c}" for i, c in enumerate(counts) if c)
        off = sum(1 for n in nodes if not n.usable)
        return f"{label}: nodes by free {self.view.resource}: {spread}" + (
            f"; {off} not usable" if off else ""
        )

    def standalone(self, label: str, nodes: Sequence[NodeView]) -> str:
        return _svg(self.rack(label, nodes), f"{self.view.flavor} {label}")


def render_map(
    view: MapView, palette: Palette, key: str, marked: frozenset[str] = frozenset()
) -> str:
    """The map as markup: one <svg>, plus the racks' templates and the panel they open in
    when the map is collapsed. `key` makes ids unique in the page; `marked` names nodes or
    placement domains to outline (where the sources disagree)."""
    if not view.nodes:
        return f'<p class="empty">no node carries flavor {escape(view.flavor)}\'s labels</p>'
    renderer = _Renderer(view, palette, key, marked, _Metrics.of(view.nodes))
    collapsed = len(view.nodes) > COLLAPSE_AT
    if view.levels:
        box = renderer.group("", view.nodes, 0, collapsed)
    else:
        box = renderer.tile(view.flavor, view.nodes) if collapsed else renderer.rack("", view.nodes)
    markup = _svg(box, f"flavor {view.flavor}")
    if renderer.templates:
        markup += "".join(renderer.templates) + f'<div class="panel" id="{key}-panel"></div>'
    return markup


def _svg(box: _Box, label: str) -> str:
    width, height = num(box.width + 2), num(box.height + 2)
    return (
        f'<svg class="map" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="-1 -1 {width} {height}" role="img" '
        f'aria-label="{escape(label)}">{box.body}</svg>'
    )


def _frame(label: str, level: str, width: float, height: float, body: str, cls: str) -> _Box:
    """A titled frame around `body` (whose size is width x height)."""
    top = HEAD_H if label else PAD
    width = max(width, len(label) * CHAR_W) + 2 * PAD
    height = top + height + PAD
    title = f"<title>{escape(level)}={escape(label)}</title>" if level else ""
    head = f'<text class="h" x="{PAD}" y="11">{title}{escape(label)}</text>' if label else ""
    return _Box(
        width,
        height,
        f'<rect class="{cls}" width="{num(width)}" height="{num(height)}" rx="3"/>{head}'
        f'<g transform="translate({PAD},{top})">{body}</g>',
    )


def _flow(boxes: Sequence[_Box], limit: float) -> tuple[float, float, str]:
    """Boxes left to right, wrapping at `limit`."""
    x = y = row_h = widest = 0.0
    parts = []
    for box in boxes:
        if x > 0 and x + box.width > limit:
            x, y, row_h = 0.0, y + row_h + GAP, 0.0
        parts.append(f'<g transform="translate({num(x)},{num(y)})">{box.body}</g>')
        x += box.width + GAP
        row_h = max(row_h, box.height)
        widest = max(widest, x - GAP)
    return widest, y + row_h, "".join(parts)


def _badges(node: NodeView) -> str:
    words = []
    if node.unready:
        words.append("not ready")
    if node.cordoned:
        words.append("cordoned")
    if node.taints:
        words.append("tainted")
    return escape(" ".join(words))


def _badge_width(nodes: Sequence[NodeView]) -> float:
    return max((len(_badges(n)) * CHAR_W * 0.85 for n in nodes), default=0.0)


def _free_counts(nodes: Sequence[NodeView]) -> list[int]:
    """Usable nodes per whole free unit (0, 1, ... the largest capacity), in at most
    HIST_BINS bins."""
    most = int(max((n.capacity for n in nodes), default=Fraction(0)))
    bins = min(most + 1, HIST_BINS) or 1
    counts = [0] * bins
    for node in nodes:
        if node.usable:
            counts[min(int(node.free) * bins // (most + 1), bins - 1)] += 1
    return counts
