"""The report in a real headless browser (Debian's chromium): the maps are drawn (node names
in the rendered DOM, the workloads' colours on screen), a collapsed 1,000-node map opens a
rack on click, and one screenshot of the guide suite's report is kept beside the run's
report (run/ by default) for people to look at. Skipped, saying how to get one, where no chromium is installed."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from harness.fit import fit
from harness.html import RunInfo, report_page
from harness.html.palette import Palette
from harness.html.results import scenario_result
from harness.html.world import pod_sets
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario

ROOT = Path(__file__).resolve().parents[2]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SCREENSHOT = "report-screenshot.png"
OPEN_ALL = "<script>document.querySelectorAll('details').forEach(d => { d.open = true; });</script>"
CLICK_FIRST_TILE = (
    "<script>document.querySelector('[data-expand]')"
    ".dispatchEvent(new MouseEvent('click', {bubbles: true}));</script>"
)


@pytest.fixture(scope="module")
def chromium() -> str:
    """A headless-capable Chromium (KTH_CHROMIUM, else the first on PATH)."""
    found = os.environ.get("KTH_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if not found:
        pytest.skip(
            "no chromium on PATH to render the HTML report: apt-get install -y chromium "
            "(Debian), or point KTH_CHROMIUM at a Chromium or Chrome binary"
        )
    return found


def browse(chromium: str, page: Path, *what: str) -> subprocess.CompletedProcess[str]:
    # --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start.
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *what]
    return subprocess.run(
        [*args, page.as_uri()], capture_output=True, text=True, timeout=180, check=False
    )


def guide_report(tmp_path: Path, extra: str = "") -> tuple[Path, list[str]]:
    """The guide suite's report (fit model against expect), every scenario opened."""
    results = []
    for path in sorted((ROOT / "suites" / "guide").glob("*.yaml")):
        scenario = load_scenario(path)
        results.append(
            scenario_result(scenario, fit(scenario), status="passed", folder="suites/guide")
        )
    page = report_page(results, RunInfo("fit model only (no cluster)", "v0.19.2", 0.1, "now"))
    out = tmp_path / "guide.html"
    out.write_text(page.replace("</body>", OPEN_ALL + extra + "</body>"))
    names = sorted({n.name for r in results if r.scenario for n in r.scenario.nodes})
    return out, names


def test_the_guide_report_draws_every_node(chromium: str, tmp_path: Path) -> None:
    page, names = guide_report(tmp_path)
    done = browse(chromium, page, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    drawn = set(re.findall(r'<text class="n"[^>]*>([^<]+)</text>', done.stdout))
    assert names and set(names) <= drawn
    assert re.search(r"<details class=\"sc passed\" id=\"s0\" open=\"\">", done.stdout)


def test_the_screenshot_shows_the_maps_in_colour(
    chromium: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    page, _ = guide_report(tmp_path)
    shot = tmp_path / SCREENSHOT
    done = browse(chromium, page, f"--screenshot={shot}", "--window-size=1280,1600")
    assert shot.is_file(), done.stderr[-2000:]
    width, height, pixels = decode_png(shot.read_bytes())
    assert (width, height) == (1280, 1600)
    colours = set(pixels)
    assert len(colours) > 20, "a blank page"
    train = Palette(pod_sets(load_scenario(ROOT / "suites/guide/guide-required-host.yaml")))
    assert hex_rgb(train.colour("train")) in colours, "no cell in the workload's colour"
    report = request.config.getoption("kth_report")  # beside the run's report
    run_dir = Path(report).parent if report else request.config.invocation_params.dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, run_dir / SCREENSHOT)


def test_a_collapsed_rack_opens_on_click(chromium: str, tmp_path: Path) -> None:
    scenario = bench_scenario(1000)
    result = scenario_result(scenario, fit(scenario), status="passed", folder="bench")
    html = report_page([result], RunInfo("fit model only", "v0.19.2", 0.1, "now"))
    page = tmp_path / "big.html"
    page.write_text(html.replace("</body>", OPEN_ALL + CLICK_FIRST_TILE + "</body>"))
    done = browse(chromium, page, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    panel = re.search(r'<div class="panel" id="[^"]+">(.*?)</div></div>', done.stdout, re.S)
    assert panel is not None, "no panel opened"
    assert re.findall(r'<text class="n"[^>]*>(node-\d+)</text>', panel.group(1)) == [
        f"node-{i:05d}" for i in range(10)
    ]


def bench_scenario(nodes: int) -> Scenario:
    """bench/big.py's scenario: 4 levels, 10 nodes a rack, every other node half busy."""
    spec = importlib.util.spec_from_file_location("bench_big", ROOT / "bench" / "big.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scenario: Scenario = module.big_scenario(nodes)
    return scenario


def hex_rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what
    Chromium writes), enough to tell a drawn page from a blank one."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6), (depth, colour_type)
    step = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * step
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]
        previous = _unfilter(kind, line, previous, step)
        rows.append(previous)
    pixels = [tuple(row[i : i + 3]) for row in rows for i in range(0, stride, step)]
    return width, height, pixels  # type: ignore[return-value]


def _unfilter(kind: int, line: bytes, up: bytes, step: int) -> bytes:
    """PNG's five scanline filters undone (None, Sub, Up, Average, Paeth)."""
    if kind == 0:
        return line
    if kind == 2:
        return bytes(map(lambda a, b: (a + b) & 0xFF, line, up))
    out = bytearray(line)
    for i in range(len(out)):
        left = out[i - step] if i >= step else 0
        if kind == 1:
            out[i] = (out[i] + left) & 0xFF
        elif kind == 3:
            out[i] = (out[i] + (left + up[i]) // 2) & 0xFF
        else:
            corner = up[i - step] if i >= step else 0
            guess = left + up[i] - corner
            to_left, to_up, to_corner = abs(guess - left), abs(guess - up[i]), abs(guess - corner)
            if to_left <= to_up and to_left <= to_corner:
                near = left
            elif to_up <= to_corner:
                near = up[i]
            else:
                near = corner
            out[i] = (out[i] + near) & 0xFF
    return bytes(out)
