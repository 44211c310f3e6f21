"""The quota tables beside the maps: what a step changes in a cohort is read off the page."""

from __future__ import annotations

import re
from pathlib import Path

from harness.fit import fit
from harness.html import oracle_page, outcomes_page
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario

SCENARIO = """
name: borrow-after-delete
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors:
  - {name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
  - {name: n2, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
cohorts:
  - name: team
clusterQueues:
  - name: a
    cohortName: team
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
  - name: b
    cohortName: team
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
admitted:
  - name: old
    queue: b
    podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: gpu, placement: {n2: 4}}]
workloads:
  - name: wa
    queue: a
    podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 6}}]
steps:
  - delete-workload: old
"""


def tables(page: str) -> dict[str, list[str]]:
    """`kind name` -> the HTML of its tables, one per state, in page order."""
    found: dict[str, list[str]] = {}
    for kind, name, body in re.findall(
        r"<caption>(cohort|ClusterQueue) <b>([^<]+)</b>.*?</caption>(.*?)</table>", page
    ):
        found.setdefault(f"{kind} {name}", []).append(body)
    return found


def cells(body: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_a_borrowing_decision_is_read_off_the_quota_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    scenario = load_scenario(path)
    page = oracle_page(scenario, fit(scenario))
    found = tables(page)
    assert list(found) == ["cohort team", "ClusterQueue a", "ClusterQueue b"]
    assert all(len(states) == 2 for states in found.values())  # after submissions, step 1
    # b's old job holds b's 4 GPUs, so wa (6 > a's 4) cannot borrow and waits
    assert cells(found["ClusterQueue a"][0]) == [[], ["gpu", "nvidia.com/gpu", "4", "0", "0", "0"]]
    assert cells(found["ClusterQueue b"][0]) == [[], ["gpu", "nvidia.com/gpu", "4", "4", "0", "0"]]
    # deleting old frees b's quota: wa takes a's 4 and borrows 2, which b lends
    assert cells(found["ClusterQueue a"][1])[1] == [
        "gpu",
        "nvidia.com/gpu",
        "4",
        "0 → 6",
        "0 → 2",
        "0",
    ]
    assert cells(found["ClusterQueue b"][1])[1] == [
        "gpu",
        "nvidia.com/gpu",
        "4",
        "4 → 0",
        "0",
        "0 → 2",
    ]
    # the cohort: nominal 0 (so none of its own used), subtree 4 + 4; used: old's 4, then wa's 6
    assert cells(found["cohort team"][1])[1] == [
        "gpu",
        "nvidia.com/gpu",
        "0",
        "0",
        "8",
        "4 → 6",
        "0",
        "0",
    ]
    assert page.count('<td class="chg">') == 5


def test_a_hierarchical_cohort_is_shown_as_its_tree() -> None:
    suites = Path(__file__).resolve().parents[2] / "suites"
    scenario = load_scenario(suites / "cohorts" / "cohorts-borrowing-up-to-lending-limit.yaml")
    found = tables(oracle_page(scenario, fit(scenario)))
    assert list(found) == [
        "cohort root",
        "cohort child",
        "ClusterQueue cq-lender",
        "ClusterQueue cq-borrower",
    ]
    # cq-borrower held 5 cpu (wl-existing) and now 10 of its 5: it borrows 5, all of
    # cq-lender's lendable 5; the first state is compared with the admitted entries alone
    borrower = cells(found["ClusterQueue cq-borrower"][0])[1]
    assert borrower == ["on-demand", "cpu", "5", "5 → 10", "0 → 5", "0"]
    lender = cells(found["ClusterQueue cq-lender"][0])[1]
    assert lender == ["on-demand", "cpu", "10", "0", "0", "0 → 5"]


TWO_FLAVORS = """
name: two-flavors
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors:
  - {name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}
  - {name: spot, nodeLabels: {pool: spot}, topologyName: hosts}
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
  - {name: s1, labels: {pool: spot}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors:
          - {name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
          - {name: spot, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
workloads:
  - {name: w, queue: a, podSets: [{name: main, count: 3, requests: {nvidia.com/gpu: 1}}]}
"""


def test_a_workload_whose_flavor_is_unknown_is_named_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(TWO_FLAVORS)
    scenario = load_scenario(path)
    page = outcomes_page(scenario, {"w": Outcome(admitted=True)}, label="sim")
    assert "not counted (admitted on a flavor not reported): w" in page
    # both flavors' rows stay at 0 used
    rows = cells(tables(page)["ClusterQueue a"][0])
    assert rows[1:] == [
        ["gpu", "nvidia.com/gpu", "4", "0", "0", "0"],
        ["spot", "nvidia.com/gpu", "4", "0", "0", "0"],
    ]
