"""The quota beside the maps: one small table per cohort and ClusterQueue (cohorts before
their children, indented by depth), per flavor and resource what it has, uses, borrows and
lends, with each number that changed since the state before shown as `before → after`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from html import escape

from harness.fit.cohort_tree import COHORT
from harness.k8s.quantity import format_kueue_units
from harness.results.outcome import Outcome
from harness.results.quota import QuotaRow, QuotaTable, quota_tables, usage_of
from harness.scenario.model import Scenario

QUOTA_STYLE = """
.quota{font-size:12px;margin:.4em 0;max-width:460px}.quota>div{margin:.3em 0}
table.q{border-collapse:collapse}table.q td,table.q th{border:1px solid #ccd;padding:1px 6px;
 text-align:right}table.q td:first-child,table.q td:nth-child(2){text-align:left}
table.q caption,table.q th{text-align:left;white-space:nowrap}td.chg,span.chg{background:#fe9}
"""

COLUMNS = ("nominal", "used", "borrowed", "lent")
HEADING = (
    '<p class="cap" title="before the first state: the admitted workloads the scenario '
    'starts with"><b>quota</b> in Kueue units; <span class="chg">before → after</span>: '
    "changed since the state before</p>"
)


def quota_block(
    scenario: Scenario,
    state: Mapping[str, Outcome],
    before: Mapping[str, Outcome] | None,
    deleted: Iterable[str] = (),
    deleted_before: Iterable[str] = (),
) -> str:
    """The tables for one source in one state; `before` is the same source's state before
    the step (for the first state, {}: only the scenario's `admitted:` workloads; None
    where the source said nothing then)."""
    tables = quota_tables(scenario, state, deleted)
    if not tables:
        return ""
    earlier = {}
    if before is not None:
        earlier = {(t.kind, t.name): t for t in quota_tables(scenario, before, deleted_before)}
    body = "".join(_table(t, earlier.get((t.kind, t.name))) for t in tables)
    _, unknown = usage_of(scenario, state, deleted)
    if unknown:
        names = ", ".join(unknown)
        body += (
            f'<p class="meta">not counted (admitted on a flavor not reported): {escape(names)}</p>'
        )
    return f'<div class="quota">{HEADING}{body}</div>'


def _table(table: QuotaTable, before: QuotaTable | None) -> str:
    cohort = table.kind == COHORT
    columns = ("nominal", "own used", "subtree", *COLUMNS[1:]) if cohort else COLUMNS
    earlier = {(r.flavor, r.resource): r for r in before.rows} if before else {}
    head = "".join(f"<th>{c}</th>" for c in ("flavor", "resource", *columns))
    rows = "".join(_row(r, earlier.get((r.flavor, r.resource)), columns) for r in table.rows)
    empty = "" if table.rows else f'<tr><td colspan="{len(columns) + 2}">no quota</td></tr>'
    return (
        f'<div style="margin-left:{1.2 * table.depth:.1f}em"><table class="q">'
        f"<caption>{_caption(table, before)}</caption><tr>{head}</tr>{rows}{empty}</table></div>"
    )


def _caption(table: QuotaTable, before: QuotaTable | None) -> str:
    kind = "cohort" if table.kind == COHORT else "ClusterQueue"
    text = f"{kind} <b>{escape(table.name)}</b>"
    if table.fair:
        text += f" · weight {_weight(table.weight)} · share "
        text += _changed(_share(table.share), _share(before.share) if before else None)
    return text


def _row(row: QuotaRow, before: QuotaRow | None, columns: Sequence[str]) -> str:
    cells = [f"<td>{escape(row.flavor)}</td><td>{escape(row.resource)}</td>"]
    for column in columns:
        field = column.replace(" ", "_")
        now = format_kueue_units(row.resource, getattr(row, field))
        then = format_kueue_units(row.resource, getattr(before, field)) if before else now
        if now == then:
            cells.append(f"<td>{escape(now)}</td>")
        else:
            cells.append(f'<td class="chg">{escape(then)} → {escape(now)}</td>')
    return f"<tr>{''.join(cells)}</tr>"


def _changed(now: str, then: str | None) -> str:
    if then is None or then == now:
        return escape(now)
    return f'<span class="chg">{escape(then)} → {escape(now)}</span>'


def _share(share: int | None) -> str:
    return "∞" if share is None else str(share)


def _weight(weight: Fraction | None) -> str:
    value = Fraction(1) if weight is None else weight
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"
