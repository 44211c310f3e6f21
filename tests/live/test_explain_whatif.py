"""`--explain` (harness/whatif): the verdict on a pending pod set and the options that would make
it fit. Each option the explanation reports is checked here again, independently: the test
edits the scenario's YAML the way the option says (the workload deleted, the mode changed, the
count lowered, the flavor offered) and asks the fit model.

Scenarios: tests/data/explain/ (each file's description says what should happen and why).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.fit import fit
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.whatif import Explanation, Whys, explain, workloads
from harness.whatif.workloads import RUNS_PENDING

DATA = Path(__file__).resolve().parents[1] / "data" / "explain"
SUITES = Path(__file__).resolve().parents[2] / "suites"


def data_of(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((DATA / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def outcome_of(data: dict[str, Any], name: str) -> Outcome:
    """The workload's outcome on the fit model, the scenario given as loader data."""
    return fit(scenario_from_data(data, "edited.yaml")).outcomes[name]


def explained(name: str, workload: str) -> Explanation:
    scenario = load_scenario(DATA / name)
    return explain(scenario, fit(scenario).outcomes)[workload]


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def pod_set(data: dict[str, Any], workload: str) -> dict[str, Any]:
    found = [w for w in data["workloads"] if w["name"] == workload]
    first = found[0]["podSets"][0]
    assert isinstance(first, dict)
    return first


# ---- the verdict -----------------------------------------------------------------------------


def test_the_verdict_names_the_best_rack_its_count_and_who_holds_the_missing_node() -> None:
    # r2: three free 8-GPU nodes, r2-n4 held by infer (8). r1: two free, r1-n3 by batch-a (8),
    # r1-n4 half by batch-b (4: no room for an 8-GPU pod). So r2 holds 3 of 4, r1 2.
    e = explained("rack-short.yaml", "train")
    assert e.state == "pending"
    (v,) = e.verdicts
    assert (v.mode, v.level, v.flavor, v.domain, v.fits) == (
        "required", "example.com/rack", "gpu", ("r2",), 3,
    )  # fmt: skip
    assert [(s.node, s.resource, s.free, s.capacity) for s in v.short] == [
        ("r2-n4", "nvidia.com/gpu", 0, 8)
    ]
    assert [(h.kind, h.name, amount) for h, amount in v.short[0].holders] == [
        ("workload", "infer", 8)
    ]


def test_a_rack_leaf_topology_speaks_of_racks_not_nodes() -> None:
    # Racks are the leaves (nodes summed). b1-r2: 16 GPUs, 4 + 4 held by plain pods: 8 of
    # 12 one-GPU pods, the number Kueue's message gives; freeing either entry makes 12.
    file = SUITES / "non-hostname" / "non-hostname-total-nodes-counts-racks.yaml"
    scenario = load_scenario(file)
    (e,) = explain(scenario, fit(scenario).outcomes).values()
    (v,) = e.verdicts
    assert (v.domain, v.fits) == (("b1", "b1-r2"), 8) and "only 8 out of 12" in e.message
    assert [(s.level, s.node, s.free) for s in v.short] == [("cloud.example.com/rack", "b1-r2", 8)]
    assert (
        "rack b1-r2 has 8 of 16 nvidia.com/gpu free"
        in Whys.of(scenario, fit(scenario).outcomes).text()
    )
    (freed,) = [o for o in e.options if o.kind == "free"]
    (gone,) = freed.free
    data = yaml.safe_load(file.read_text())
    data["usage"] = [u for i, u in enumerate(data["usage"]) if i != gone.index]
    assert outcome_of(data, "train").admitted


def test_a_quota_wait_says_the_nodes_have_room_and_who_holds_the_quota() -> None:
    e = explained("quota.yaml", "train")
    (v,) = e.verdicts
    assert v.fits >= v.count  # n1 has 6 GPUs free, n2 2: the nodes are not the problem
    assert [h.name for h in e.quota_held_by] == ["big", "small"]  # 6 GPUs, then 2


# ---- each option, checked again --------------------------------------------------------------


def test_freeing_the_named_workload_admits_the_job_and_nothing_less_does() -> None:
    e = explained("rack-short.yaml", "train")
    freed = [o for o in e.options if o.kind == "free"]
    assert [[(h.kind, h.name) for h in o.free] for o in freed] == [[("workload", "infer")]]
    data = data_of("rack-short.yaml")
    assert not outcome_of(data, "train").admitted
    data["admitted"] = [a for a in data["admitted"] if a["name"] != "infer"]
    after = outcome_of(data, "train")
    assert after.admitted and set(after.placement["workers"]) == {f"r2-n{i}" for i in range(1, 5)}
    assert dict(freed[0].placement) == dict(after.placement)


def test_two_owners_that_only_together_hold_a_node_are_freed_together() -> None:
    e = explained("two-owners.yaml", "train")
    (freed,) = [o for o in e.options if o.kind == "free"]
    assert [h.name for h in freed.free] == ["team-a.pod-a.n1", "team-b.pod-b.n1"]
    data = data_of("two-owners.yaml")
    usage = data["usage"]
    assert not outcome_of({**data, "usage": usage[:1]}, "train").admitted
    assert not outcome_of({**data, "usage": usage[1:]}, "train").admitted
    assert outcome_of({**data, "usage": []}, "train").admitted


def test_relaxing_to_preferred_admits_it_over_the_racks_it_names() -> None:
    e = explained("rack-short.yaml", "train")
    (relax,) = [o for o in e.options if o.kind == "relax"]
    data = data_of("rack-short.yaml")
    pod_set(data, "train")["topology"]["mode"] = "preferred"
    after = outcome_of(data, "train")
    assert after.admitted
    racks = {node.split("-")[0] for node in after.placement["workers"]}
    assert set(relax.spans) == racks and len(racks) == 2


def test_the_count_is_the_largest_the_model_admits() -> None:
    e = explained("rack-short.yaml", "train")
    (count,) = [o for o in e.options if o.kind == "count"]
    assert count.count == 3
    data = data_of("rack-short.yaml")
    pod_set(data, "train")["count"] = count.count
    assert outcome_of(data, "train").admitted
    pod_set(data, "train")["count"] = count.count + 1
    assert not outcome_of(data, "train").admitted


def test_another_flavor_is_offered_only_when_the_model_admits_it_there() -> None:
    e = explained("other-flavor.yaml", "train")
    (other,) = [o for o in e.options if o.kind == "flavor"]
    assert other.flavor == "h100"
    data = data_of("other-flavor.yaml")
    flavors = data["clusterQueues"][0]["resourceGroups"][0]["flavors"]
    flavors.append({"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]})
    after = fit(scenario_from_data(data, "edited.yaml")).outcomes["train"]
    assert after.admitted and after.flavors == {"main": "h100"}
    assert dict(after.placement) == dict(other.placement) == {"main": {"h100-1": 1}}


def test_quota_is_freed_by_the_smallest_set_that_works() -> None:
    # Freeing "big" (6 of 8 GPUs) leaves 6 free for a 4-GPU job; "small" (2) alone would
    # leave 2: not enough. So the answer is big alone, and it must be checked to work.
    e = explained("quota.yaml", "train")
    # The quota is all used: no count, mode or flavor change helps (what the ledger alone,
    # unchecked, would miss: its nodes have room for 6 pods).
    assert [o.kind for o in e.options] == ["free"]
    (freed,) = e.options
    assert [h.name for h in freed.free] == ["big"]
    data = data_of("quota.yaml")
    without_big = [a for a in data["admitted"] if a["name"] != "big"]
    without_small = [a for a in data["admitted"] if a["name"] != "small"]
    assert outcome_of({**data, "admitted": without_big}, "train").admitted
    assert not outcome_of({**data, "admitted": without_small}, "train").admitted


def test_an_admitted_preferred_pod_set_spread_over_racks_says_what_would_fit_in_one() -> None:
    # r1 has 5 GPUs free (etl holds 3 of r1-n2), r2 4 (web holds r2-n2): 6 pods spread.
    e = explained("preferred-spread.yaml", "train")
    assert e.state == "spread"
    (v,) = e.verdicts
    assert sorted(v.spans) == ["r1", "r2"] and v.domain == ("r1",) and v.fits == 5
    freed = [o for o in e.options if o.kind == "free"]
    assert [h.name for h in freed[0].free] == ["etl"]
    data = data_of("preferred-spread.yaml")
    data["usage"] = [u for u in data["usage"] if u["name"] != "etl"]
    pod_set(data, "train")["topology"]["mode"] = "required"
    after = outcome_of(data, "train")
    assert after.admitted and {n.split("-")[0] for n in after.placement["main"]} == {"r1"}


def test_a_refused_taint_is_tolerated_and_the_model_admits_it() -> None:
    # Both nodes carry nvidia.com/gpu=present:NoSchedule; "intolerant" has no toleration.
    file = SUITES / "taints" / "taints-gpu-taint-pod-toleration.yaml"
    scenario = load_scenario(file)
    e = explain(scenario, fit(scenario).outcomes)["intolerant"]
    assert "taint nvidia.com/gpu=present:NoSchedule not tolerated" in " ".join(
        s.why for s in e.verdicts[0].short
    )
    (tolerate,) = [o for o in e.options if o.kind == "tolerate"]
    assert tolerate.text.endswith("tolerated taint nvidia.com/gpu=present:NoSchedule")
    data = yaml.safe_load(file.read_text())
    pod_set(data, "intolerant")["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]
    after = outcome_of(data, "intolerant")
    assert after.admitted and dict(after.placement) == dict(tolerate.placement)


def test_a_cordoned_node_is_offered_uncordoned_only_when_that_admits_it() -> None:
    file = SUITES / "kueue-cases" / "node-unschedulable-excluded.yaml"
    scenario = load_scenario(file)
    e = explain(scenario, fit(scenario).outcomes)["wl"]
    assert [o.text for o in e.options if o.kind == "uncordon"] == ["node x3 was uncordoned"]
    data = yaml.safe_load(file.read_text())
    data["nodes"][0]["unschedulable"] = False
    assert outcome_of(data, "wl").admitted


def test_an_option_that_needs_preemption_names_the_victims() -> None:
    # A rack holds 2 nodes, the job wants 3 in one: no freeing helps. Preferred, it takes
    # r1-n2 and r2-n2 and preempts low-a (priority 1 < 100) for r1-n1; 2 pods fit in r1 only
    # by preempting low-a too.
    e = explained("preempt.yaml", "train")
    assert [(o.kind, o.preempts) for o in e.options] == [
        ("relax", ("low-a",)), ("count", ("low-a",)),
    ]  # fmt: skip
    assert e.options[1].count == 2
    data = data_of("preempt.yaml")
    pod_set(data, "train")["topology"]["mode"] = "preferred"
    after = fit(scenario_from_data(data, "edited.yaml")).outcomes
    assert after["train"].admitted and after["low-a"].preempted
    text = Whys.of(
        load_scenario(DATA / "preempt.yaml"), fit(load_scenario(DATA / "preempt.yaml")).outcomes
    ).text()
    assert '(spans racks r1, r2) (preempting "low-a")' in text


def test_nothing_is_offered_when_no_change_makes_it_fit() -> None:
    # A 16-GPU pod on 8-GPU nodes: no freeing, mode, count, toleration or flavor helps.
    scenario = load_scenario(SUITES / "required" / "required-host-pod-larger-than-node.yaml")
    (e,) = explain(scenario, fit(scenario).outcomes).values()
    assert e.state == "pending" and e.options == [] and e.verdicts[0].fits_empty == 0


def test_the_runs_stay_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = explained("rack-short.yaml", "train")
    assert 0 < whole.runs <= whole.limit == RUNS_PENDING and len(whole.options) == 3
    monkeypatch.setattr(workloads, "RUNS_PENDING", 1)
    cut = explained("rack-short.yaml", "train")
    assert (cut.runs, cut.limit) == (1, 1)
    assert [o.kind for o in cut.options] == ["free"]  # found by the one run it had


def test_kueues_own_scheduler_admits_each_option_of_the_rack_example() -> None:
    """The options are the fit model's; Kueue v0.19.2's scheduler in process (the sim) must
    admit the job in each changed scenario too, and keep it pending in the real one."""
    from harness.backends.sim import SimBackend

    e = explained("rack-short.yaml", "train")
    assert [o.kind for o in e.options] == ["free", "relax", "count"]
    base = data_of("rack-short.yaml")
    freed = {**base, "admitted": []}
    relaxed, fewer = data_of("rack-short.yaml"), data_of("rack-short.yaml")
    pod_set(relaxed, "train")["topology"]["mode"] = "preferred"
    pod_set(fewer, "train")["count"] = e.options[2].count
    backend = SimBackend()
    try:
        seen = [
            backend.run(scenario_from_data(d, "edited.yaml")).outcomes["train"]
            for d in (base, freed, relaxed, fewer)
        ]
    finally:
        backend.close()
    assert [o.admitted for o in seen] == [False, True, True, True]
    assert [dict(o.placement) for o in seen[1:]] == [dict(o.placement) for o in e.options]


# ---- the commands -----------------------------------------------------------------------------


def test_oracle_json_puts_the_explanation_under_each_pending_workload() -> None:
    done = harness("oracle", str(DATA / "rack-short.yaml"), "--explain")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert "explain" not in got["infer"]
    why = got["train"]["explain"]
    assert set(why) == {"state", "podSets", "options", "quotaHeldBy", "runs", "maxRuns", "lines"}
    (ps,) = why["podSets"]
    assert (ps["podSet"], ps["bestDomain"], ps["fits"], ps["count"]) == ("workers", "r2", 3, 4)
    assert ps["short"] == [{"node": "r2-n4", "resource": "nvidia.com/gpu", "free": "0",
                            "capacity": "8", "heldBy": [{"kind": "workload", "name": "infer",
                                                         "amount": "8"}]}]  # fmt: skip
    assert [o["kind"] for o in why["options"]] == ["free", "relax", "count"]
    assert why["options"][0]["free"] == [{"kind": "workload", "name": "infer"}]
    assert why["options"][2]["count"] == 3
    assert 0 < why["runs"] <= why["maxRuns"]


def test_oracle_text_gives_the_verdict_then_the_options() -> None:
    done = harness("oracle", str(DATA / "rack-short.yaml"), "--format", "text", "--explain")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("why (after the submissions):")
    assert lines[start + 1 : start + 3] == [
        'workload "train" pod set "workers" is pending: it needs 4 pods x 8 nvidia.com/gpu '
        "within one rack (required).",
        "  Best rack r2 fits 3 of 4 pods: node r2-n4 has 0 of 8 nvidia.com/gpu free (held by "
        'workload "infer" 8).',
    ]
    assert lines[start + 3].startswith("  Kueue says: couldn't assign flavors to pod set workers")
    assert lines[start + 4].startswith(
        '  Would fit if: (1) workload "infer" was not running; (2) topology were preferred '
        "(spans racks "
    )
    assert lines[start + 4].endswith("(3) count were 3 (not 4).")
    assert "free capacity" not in done.stdout  # the per-domain dump is --explain-domains


def test_oracle_explains_each_state_of_a_dynamic_scenario() -> None:
    file = SUITES / "guide" / "guide-required-host-waits-for-freed-node.yaml"
    done = harness("oracle", str(file), "--explain")
    got = json.loads(done.stdout)
    assert got["train"]["explain"]["state"] == "pending"
    assert "explain" not in got["_steps"][0]["train"]  # admitted on gpu-node-3 after the step


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    """rack-short.yaml as a snapshot: its job left out, infer known as ml/job-infer-abc."""
    data = data_of("rack-short.yaml")
    data["workloads"] = []
    data["x-snapshot"] = {"workloads": {"infer": "ml/job-infer-abc"}}
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_simulate_explains_a_job_with_the_clusters_names(snapshot_file: Path) -> None:
    job = str(DATA / "train-job.yaml")
    done = harness("simulate", job, "--from", str(snapshot_file), "--format", "json", "--explain")
    assert done.returncode == 0, done.stderr
    why = json.loads(done.stdout)["train-job"]["explain"]
    assert why["options"][0]["free"] == [{"kind": "workload", "name": "ml/job-infer-abc"}]
    assert why["podSets"][0]["short"][0]["heldBy"][0]["name"] == "ml/job-infer-abc"
    text = harness("simulate", job, "--from", str(snapshot_file), "--explain")
    assert 'Would fit if: (1) workload "ml/job-infer-abc" was not running' in text.stdout


def test_whys_of_a_state_with_nothing_pending_is_empty() -> None:
    scenario = load_scenario(SUITES / "guide" / "guide-required-host.yaml")
    assert Whys.of(scenario, fit(scenario).outcomes).text() == ""
