"""The quota a report page shows (harness/results/quota.py): usage from the outcomes on the
page, borrowed and lent by Kueue's cohort arithmetic, the fair-sharing share. Every number
below is worked out by hand in the comments, not copied from a run."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from harness.fit import fit
from harness.fit.cohort import QuotaBook
from harness.fit.cohort_tree import CQ
from harness.results.outcome import Outcome
from harness.results.quota import (
    QuotaTable,
    deleted_by,
    dominant_share,
    quota_tables,
    split,
    usage_of,
)
from harness.scenario.loader import load_scenario
from harness.scenario.model import (
    ClusterQueue,
    FlavorQuotas,
    ResourceGroup,
    ResourceQuota,
    Scenario,
)

GPU = "nvidia.com/gpu"
HEAD = """
name: quota
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors:
  - {name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, cpu: 32, pods: 110}}
  - {name: n2, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, cpu: 32, pods: 110}}
"""


def queue(name: str, nominal: int, cohort: str = "team", lending: int | None = None) -> str:
    limit = "" if lending is None else f", lendingLimit: {lending}"
    return (
        f"  - name: {name}\n    cohortName: {cohort}\n    resourceGroups:\n"
        f"      - coveredResources: [nvidia.com/gpu, cpu]\n        flavors:\n"
        f"          - name: gpu\n            resources:\n"
        f"              - {{name: nvidia.com/gpu, nominalQuota: {nominal}{limit}}}\n"
        f"              - {{name: cpu, nominalQuota: 16}}\n"
    )


def workload(name: str, cq: str, count: int, gpus: int, cpu: str = "500m") -> str:
    return (
        f"  - name: {name}\n    queue: {cq}\n    podSets: [{{name: main, count: {count}, "
        f'requests: {{nvidia.com/gpu: {gpus}, cpu: "{cpu}"}}}}]\n'
    )


def scenario(tmp_path: Path, queues: str, workloads: str, extra: str = "") -> Scenario:
    path = tmp_path / "quota.yaml"
    path.write_text(f"{HEAD}{extra}clusterQueues:\n{queues}workloads:\n{workloads}")
    return load_scenario(path)


def admitted(node: str = "n1", pods: int = 1) -> Outcome:
    return Outcome(admitted=True, placement={"main": {node: pods}}, flavors={"main": "gpu"})


def table(tables: list[QuotaTable], name: str) -> dict[str, dict[str, int]]:
    """Resource -> column -> amount, for the table of `name`."""
    (found,) = [t for t in tables if t.name == name]
    return {
        r.resource: {
            "nominal": r.nominal,
            "subtree": r.subtree,
            "used": r.used,
            "borrowed": r.borrowed,
            "lent": r.lent,
        }
        for r in found.rows
    }


def test_usage_is_requests_times_count_in_kueue_units(tmp_path: Path) -> None:
    world = scenario(
        tmp_path,
        queue("a", 4) + queue("b", 4),
        workload("wa", "a", 2, 3) + workload("wb", "b", 1, 1, "1") + workload("wc", "b", 1, 8),
    )
    state = {"wa": admitted(pods=2), "wb": admitted(), "wc": Outcome(admitted=False)}
    usage, unknown = usage_of(world, state)
    # wa: 2 pods x 3 GPUs, 2 x 500m cpu; wb: 1 GPU, 1 cpu = 1000 millicores; wc waits
    assert usage == {
        "a": {("gpu", GPU): 6, ("gpu", "cpu"): 1000},
        "b": {("gpu", GPU): 1, ("gpu", "cpu"): 1000},
    }
    assert unknown == []


def test_a_flat_cohort_borrower_and_its_lender(tmp_path: Path) -> None:
    world = scenario(
        tmp_path,
        queue("a", 4) + queue("b", 4),
        workload("wa", "a", 2, 3) + workload("wb", "b", 1, 1),
    )
    tables = quota_tables(world, {"wa": admitted(pods=2), "wb": admitted()})
    assert [(t.kind, t.name, t.depth) for t in tables] == [
        ("cohort", "team", 0),
        ("cq", "a", 1),
        ("cq", "b", 1),
    ]
    # a holds 6 of its 4: borrows 2, which only b can lend (3 of its 4 are unused)
    assert table(tables, "a")[GPU] == dict(nominal=4, subtree=4, used=6, borrowed=2, lent=0)
    assert table(tables, "b")[GPU] == dict(nominal=4, subtree=4, used=1, borrowed=0, lent=2)
    assert table(tables, "team")[GPU] == dict(nominal=0, subtree=8, used=7, borrowed=0, lent=0)


def test_what_is_borrowed_is_split_over_the_lenders_in_proportion(tmp_path: Path) -> None:
    queues = queue("a", 4) + queue("b", 4) + queue("c", 2)
    world = scenario(tmp_path, queues, workload("wa", "a", 7, 1))
    tables = quota_tables(world, {"wa": admitted(pods=7)})
    # a borrows 3; b has 4 spare, c 2: 3 x 4/6 = 2 from b, 3 x 2/6 = 1 from c
    assert [table(tables, q)[GPU]["lent"] for q in "abc"] == [0, 2, 1]


def test_a_lending_limit_caps_what_is_lent(tmp_path: Path) -> None:
    queues = queue("a", 4) + queue("b", 4, lending=1) + queue("c", 2)
    world = scenario(tmp_path, queues, workload("wa", "a", 7, 1))
    tables = quota_tables(world, {"wa": admitted(pods=7)})
    # b may lend 1 only, c 2: a's 3 borrowed GPUs are b's 1 and c's 2
    assert [table(tables, q)[GPU]["lent"] for q in "abc"] == [0, 1, 2]
    # the cohort's subtree quota holds what its members lend: 4 + 1 + 2
    assert table(tables, "team")[GPU]["subtree"] == 7


def test_lending_through_a_cohort_with_quota_of_its_own(tmp_path: Path) -> None:
    cohorts = (
        "cohorts:\n  - name: root\n  - name: left\n    parentName: root\n    resourceGroups:\n"
        "      - coveredResources: [nvidia.com/gpu, cpu]\n        flavors:\n"
        "          - {name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 2}, "
        "{name: cpu, nominalQuota: 0}]}\n"
    )
    world = scenario(
        tmp_path,
        queue("cq1", 4, "left") + queue("cq2", 2, "root"),
        workload("w2", "cq2", 5, 1),
        cohorts,
    )
    tables = quota_tables(world, {"w2": admitted(pods=5)})
    assert [(t.name, t.depth) for t in tables] == [("root", 0), ("left", 1), ("cq1", 2), ("cq2", 1)]
    # cq2 holds 5 of its 2: borrows 3 from root, all of it from left (6 spare: 2 own + 4 of cq1)
    assert table(tables, "cq2")[GPU] == dict(nominal=2, subtree=2, used=5, borrowed=3, lent=0)
    assert table(tables, "left")[GPU] == dict(nominal=2, subtree=6, used=0, borrowed=0, lent=3)
    # inside left, 3 x 2/6 = 1 comes from left's own quota and 3 x 4/6 = 2 from cq1's
    assert table(tables, "cq1")[GPU]["lent"] == 2
    (left,) = [r for t in tables if t.name == "left" for r in t.rows if r.resource == GPU]
    assert left.own_used == 1
    assert table(tables, "root")[GPU] == dict(nominal=0, subtree=8, used=5, borrowed=0, lent=0)


def test_admitted_entries_hold_quota_until_preempted_or_deleted(tmp_path: Path) -> None:
    extra = (
        "admitted:\n  - name: old\n    queue: a\n    podSets: [{name: main, count: 2, "
        "requests: {nvidia.com/gpu: 2}, flavor: gpu, placement: {n2: 2}}]\n"
    )
    world = scenario(tmp_path, queue("a", 4) + queue("b", 4), workload("wa", "a", 1, 1), extra)
    # a state that does not name `old` (a step's expect, say) still has it running: 4 + 1
    assert usage_of(world, {"wa": admitted()})[0]["a"][("gpu", GPU)] == 5
    preempted = {"wa": admitted(), "old": Outcome(admitted=False, preempted=True)}
    assert usage_of(world, preempted)[0]["a"][("gpu", GPU)] == 1
    assert usage_of(world, {"wa": admitted()}, deleted=["old"])[0]["a"][("gpu", GPU)] == 1


def test_the_flavor_comes_from_the_placed_nodes_when_the_outcome_does_not_say(
    tmp_path: Path,
) -> None:
    extra = (
        "resourceFlavors:\n  - {name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}\n"
        "  - {name: spot, nodeLabels: {pool: spot}, topologyName: hosts}\n"
        "nodes:\n  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 9}}\n"
        "  - {name: s1, labels: {pool: spot}, allocatable: {nvidia.com/gpu: 8, pods: 9}}\n"
    )
    two = (
        "  - name: a\n    resourceGroups:\n      - coveredResources: [nvidia.com/gpu]\n"
        "        flavors:\n          - {name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}\n"
        "          - {name: spot, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}\n"
    )
    path = tmp_path / "two.yaml"
    head = HEAD.split("resourceFlavors:")[0]
    path.write_text(
        f"{head}{extra}clusterQueues:\n{two}workloads:\n"
        "  - {name: w, queue: a, podSets: [{name: main, count: 3, requests: {nvidia.com/gpu: 1}}]}\n"
    )
    world = load_scenario(path)
    on_spot = Outcome(admitted=True, placement={"main": {"s1": 3}})
    assert usage_of(world, {"w": on_spot}) == ({"a": {("spot", GPU): 3}}, [])
    nowhere = Outcome(admitted=True)  # admitted without a placement or a flavor
    assert usage_of(world, {"w": nowhere}) == ({}, ["w"])


def test_split_keeps_whole_units_and_the_total() -> None:
    assert split(5, [2, 2, 2]) == [2, 2, 1]  # 5/3 each: the remainders go to the first
    assert split(3, [0, 4, 2]) == [0, 2, 1]
    assert split(10, [1, 1]) == [1, 1]  # no more than there is to lend
    assert split(3, [0, 0]) == [0, 0]


def gpu_queue(name: str, nominal: int, weight: Fraction | None = None) -> ClusterQueue:
    quota = ResourceQuota(GPU, Fraction(nominal))
    cq = ClusterQueue(name, (ResourceGroup((GPU,), (FlavorQuotas("gpu", (quota,)),)),), "team")
    return replace(cq, fair_weight=weight) if weight is not None else cq  # type: ignore[call-arg]


@pytest.mark.parametrize(("weight", "share"), [(1, 250), (2, 125), (3, 84), (0, None)])
def test_dominant_share_is_borrowed_over_lendable_per_mille_over_weight(
    weight: int, share: int | None
) -> None:
    book = QuotaBook.of([gpu_queue("a", 4), gpu_queue("b", 4)])
    book.add("a", {("gpu", GPU): 6})
    # a borrows 2 of the 8 the cohort can lend: 250 per mille, divided by the weight and
    # rounded up (250/3 = 83.3 -> 84); a weight of 0 that borrows is Kueue's MaxInt64
    assert dominant_share(book, (CQ, "a"), Fraction(weight)) == share
    assert dominant_share(book, (CQ, "b"), Fraction(1)) == 0  # b borrows nothing


def test_weight_and_share_are_shown_only_under_fair_sharing(tmp_path: Path) -> None:
    world = scenario(tmp_path, queue("a", 4) + queue("b", 4), workload("wa", "a", 2, 3))
    state = {"wa": admitted(pods=2)}
    assert not any(t.fair for t in quota_tables(world, state))
    config = pytest.importorskip(
        "harness.scenario.kueue_config", reason="kueueConfig arrives with the fair-sharing branch"
    )
    fair = replace(world, kueue_config=config.KueueConfig(fair_sharing=()))  # type: ignore[call-arg]
    tables = quota_tables(fair, state)
    (a,) = [t for t in tables if t.name == "a"]
    assert (a.fair, a.weight, a.share) == (True, Fraction(1), 250)
    # a weight of 0 that borrows ranks above everything (Kueue's MaxInt64, shown as ∞)
    queues = tuple(
        replace(q, fair_weight=Fraction(0)) if q.name == "a" else q  # type: ignore[call-arg]
        for q in fair.cluster_queues
    )
    (zero,) = [
        t for t in quota_tables(replace(fair, cluster_queues=queues), state) if t.name == "a"
    ]
    assert (zero.weight, zero.share) == (Fraction(0), None)


SUITES = Path(__file__).resolve().parents[2] / "suites"
COHORT_FILES = sorted((SUITES / "cohorts").glob("*.yaml")) + sorted(
    (SUITES / "v2" / "preemption-reclaim").glob("*.yaml")
)


def children(tables: list[QuotaTable]) -> dict[str, list[QuotaTable]]:
    """Cohort name -> the tables right below it (the list is a pre-order walk by depth)."""
    found: dict[str, list[QuotaTable]] = {}
    path: list[QuotaTable] = []
    for t in tables:
        del path[t.depth :]
        if path and path[-1].kind == "cohort":
            found.setdefault(path[-1].name, []).append(t)
        path.append(t)
    return found


@pytest.mark.parametrize("path", COHORT_FILES, ids=lambda p: p.stem)
def test_what_members_lend_is_what_they_borrow(path: Path) -> None:
    """What a cohort's members borrow, plus what it lends up, less what it borrows, is met
    exactly by its members' lending and its own quota (nothing is lent twice or lost)."""
    scenario = load_scenario(path)
    result = fit(scenario)
    for index, state in enumerate([result.outcomes, *result.steps]):
        tables = quota_tables(scenario, state, deleted_by(scenario, index))
        by_name = {t.name: t for t in tables if t.kind == "cohort"}
        for cohort, below in children(tables).items():
            for row in by_name[cohort].rows:
                key = (row.flavor, row.resource)
                rows = [r for t in below for r in t.rows if (r.flavor, r.resource) == key]
                lent, borrowed = sum(r.lent for r in rows), sum(r.borrowed for r in rows)
                assert lent + row.own_used == borrowed + row.lent - row.borrowed, (cohort, key)
