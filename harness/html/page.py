"""The HTML page around the maps: one self-contained file (inline style and script, no
fonts, no network), with the hatch pattern the maps refer to defined once."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from harness.html.quota_table import QUOTA_STYLE

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}
h1{font-size:20px}h3{font-size:14px;margin:.8em 0 .3em}h4{margin:.2em 0;font-size:13px}
table.sum{border-collapse:collapse}
table.sum td,table.sum th{border:1px solid #ccd;padding:2px 8px;text-align:right}
table.sum td:first-child{text-align:left}
details.sc{border:1px solid #ccd;border-radius:4px;margin:.4em 0;padding:.2em .6em}
details.sc.failed,details.sc.error{border-color:#d33}
summary{cursor:pointer}.meta{color:#667;font-size:12px}
.st{font-size:11px;padding:0 4px;border-radius:3px;background:#dde}
.st.passed{background:#cfc}.st.failed,.st.error{background:#fcc}.st.skipped{background:#eee}
pre{background:#f6f6f8;padding:.5em;overflow-x:auto;font-size:12px}
.cols{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start}
.col{min-width:180px}.cap{font-size:12px;margin:.3em 0}
ul.wl{font-size:12px;padding-left:1.2em;max-width:560px}li.d{background:#fdd}
.legend{font-size:12px}.sw{display:inline-block;width:10px;height:10px;margin:0 3px 0 8px;
 vertical-align:middle;border:1px solid #0003}
.sw.hatch{background:repeating-linear-gradient(45deg,#888 0 2px,#ddd 2px 4px)}
.sw.dom{border:1px dashed #000}.sw.diff{border:2px solid #e00}
svg.map{display:block;margin:2px 0}
svg.map text{font-family:monospace;font-size:11px;fill:#222}
svg.map .h{font-weight:bold}svg.map .s{font-size:9px}svg.map .b{fill:#b00;font-size:9px}
.blk{fill:#f3f4f6;stroke:#b8bec7}.rack{fill:#fff;stroke:#c9ced6}
.f{fill:#fff;stroke:#9aa3ad;stroke-width:.5}.gr{stroke:#9aa3ad;stroke-dashoffset:.5}
.dom{stroke:#000;stroke-dasharray:2 1}.u{fill:#8888}.off .n{fill:#999;text-decoration:line-through}
.d{fill:none;stroke:#e00;stroke-width:2}.rack.d{fill:#fff}
.hb{fill:#6b7b8c}.ax{stroke:#999}.tile{cursor:pointer}
.tile.open rect.rack{stroke:#06c;stroke-width:2}
.panel>div{margin:.3em 0}
"""

SCRIPT = """
document.addEventListener('click', function (e) {
  var tile = e.target.closest('[data-expand]');
  if (!tile) return;
  var id = tile.getAttribute('data-expand');
  var panel = document.getElementById(tile.getAttribute('data-panel'));
  var shown = panel.querySelector('[data-from="' + id + '"]');
  if (shown) { shown.remove(); tile.classList.remove('open'); return; }
  var box = document.createElement('div');
  box.setAttribute('data-from', id);
  box.appendChild(document.getElementById(id).content.cloneNode(true));
  panel.appendChild(box);
  tile.classList.add('open');
});
document.addEventListener('change', function (e) {
  if (e.target.id !== 'only-failed') return;
  document.body.classList.toggle('only-failed', e.target.checked);
});
"""
ONLY_FAILED = "body.only-failed details.sc:not(.failed):not(.error){display:none}"

DEFS = (
    '<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>'
    '<pattern id="kth-hatch" width="4" height="4" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="4" height="4" fill="#ddd"/>'
    '<line x1="0" y1="0" x2="0" y2="4" stroke="#888" stroke-width="2"/></pattern>'
    "</defs></svg>"
)
"""Defined once, outside any <details>: a pattern inside a closed one would not paint."""


def page(title: str, header: str, sections: Sequence[str]) -> str:
    """A complete HTML document: `header` (summary markup) then the scenario sections."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}{QUOTA_STYLE}{ONLY_FAILED}</style></head><body>"
        f"{DEFS}<h1>{escape(title)}</h1>{header}{''.join(sections)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
