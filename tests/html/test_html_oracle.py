"""`python -m harness oracle FILE --format html`: one self-contained page with the map of
every flavor, as a user runs it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SUITES = Path(__file__).resolve().parents[2] / "suites"


def oracle_html(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(path), "--format", "html", *extra],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_one_map_per_flavor_with_its_nodes_and_the_largest_free_slots() -> None:
    done = oracle_html(SUITES / "v2" / "v2-admitted-workload-holds-its-host.yaml")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert re.findall(r'aria-label="flavor (\w+)"', page) == ["h100", "a100"]
    assert ">h100-1</text>" in page and ">a100-1</text>" in page
    # old-job holds 6 of h100-1's 8 GPUs; train takes 4 of a100-1's
    assert "old-job: 6 pod(s), 6 nvidia.com/gpu" in page
    assert "train: 4 pod(s), 4 nvidia.com/gpu" in page
    assert (
        "largest free slot: 2 GPUs free together on node h100-1; 1 of 1 nodes has any free" in page
    )
    assert (
        "largest free slot: 4 GPUs free together on node a100-1; 1 of 1 nodes has any free" in page
    )


def test_the_page_needs_no_network() -> None:
    page = oracle_html(SUITES / "guide" / "guide-required-host-waits-for-freed-node.yaml").stdout
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert "@import" not in page and "url(http" not in page
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}


def test_pending_workloads_and_steps_are_shown() -> None:
    page = oracle_html(SUITES / "guide" / "guide-required-host-waits-for-freed-node.yaml").stdout
    assert "<b>train</b>: pending: couldn&#x27;t assign flavors to pod set main" in page
    assert "after step 1: delete-usage node-3-busy" in page
    assert page.count('aria-label="flavor gpu"') == 2  # one map a state


def test_explain_goes_to_stderr_so_the_page_stays_clean() -> None:
    done = oracle_html(SUITES / "guide" / "guide-required-host.yaml", "--explain-domains")
    assert done.returncode == 0
    assert done.stdout.startswith("<!DOCTYPE html>")
    assert "free capacity" in done.stderr


def test_a_bad_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntopology: {name: t, levels: []}\nnodes: []\nworkloads: []\n")
    done = oracle_html(bad)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and str(bad) in done.stderr
