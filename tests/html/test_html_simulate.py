"""`simulate --format html` as a platform engineer reads it (issue 32 item 5): each state
titled for what it is, the explanation under the pending job, a legend without cell-less
swatches, free slots in words, the snapshot's source said once."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml

from harness.cli.main import main
from harness.html import outcomes_page
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data

DATA = Path(__file__).resolve().parents[1] / "data" / "explain"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    """rack-short.yaml without its queued workload, and train-job.yaml submitted: pending."""
    snap = yaml.safe_load((DATA / "rack-short.yaml").read_text())
    snap["workloads"] = []
    snap.pop("expect", None)
    path = tmp_path_factory.mktemp("sim") / "now.yaml"
    path.write_text(yaml.safe_dump(snap))
    capture = pytest.MonkeyPatch()
    import io
    import sys

    out, err = io.StringIO(), io.StringIO()
    capture.setattr(sys, "stdout", out)
    capture.setattr(sys, "stderr", err)
    try:
        code = main(["simulate", str(DATA / "train-job.yaml"), "--from", str(path),
                     "--format", "html", "--explain"])  # fmt: skip
    finally:
        capture.undo()
    assert code == 0, err.getvalue()
    return out.getvalue()


def text_of(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_each_state_is_titled_for_what_it_shows(page: str) -> None:
    titles = re.findall(r"<h3>([^<]*)</h3>", page)
    assert titles == ["the cluster now (the snapshot, before the manifests)",
                      "after step 1: submit train-job"]  # fmt: skip


def test_the_explanation_is_under_the_pending_job(page: str) -> None:
    text = text_of(page)
    pending = "train-job : pending: couldn't assign flavors to pod set main"
    verdict = 'workload "train-job" pod set "main" is pending: it needs 4 pods'
    assert pending in text and verdict in text and text.index(pending) < text.index(verdict)
    assert 'Would fit if: (1) workload "infer" was not running' in text
    assert "(each option checked:" in text


def test_a_job_without_cells_is_not_a_swatch(page: str) -> None:
    legend = re.search(r'<p class="legend">(.*?)</p>', page)
    assert legend is not None
    assert re.findall(r'class="sw" style="[^"]*"></span>(\w+)', legend.group(1)) == ["infer"]
    assert "train-job (pending, no cells)" in text_of(legend.group(1))


def test_free_slots_are_said_in_words(page: str) -> None:
    assert (
        "largest free slot: 24 GPUs free together in rack r2; 2 of 2 racks have any free · "
        "8 GPUs free together on node r1-n1; 6 of 8 nodes have any free"
    ) in text_of(page)
    assert "free in 1 of" not in page and "; free in" not in page


def test_the_snapshot_source_is_said_once() -> None:
    data = yaml.safe_load((DATA / "rack-short.yaml").read_text())
    data["workloads"] = []
    data.pop("expect", None)
    data["description"] = "snapshot of https://10.0.0.1:6443 (context prod)"
    world = scenario_from_data(data, "snapshot of https://10.0.0.1:6443")
    html = outcomes_page(world, {"infer": Outcome(admitted=True, placement={"main": {"r2-n4": 1}})})
    assert html.count("https://10.0.0.1:6443") == 1
