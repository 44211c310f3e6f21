"""Top-level `cohorts:` (Kueue Cohort objects): what loads, what Kueue's Cohort webhook
refuses, and the spec the runner and the sim hand to Kueue."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.kueue.cohort_spec import cohort_spec
from harness.runner import world
from harness.runner.objects import Names
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.sim.contract import scenario_to_dict


def _quota(nominal: Any, **limits: Any) -> list[dict[str, Any]]:
    resource = {"name": "cpu", "nominalQuota": nominal, **limits}
    return [{"coveredResources": ["cpu"], "flavors": [{"name": "red", "resources": [resource]}]}]


def _scenario(cohorts: Any, **top: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "tree",
        "topologies": [{"name": "hosts", "levels": ["kubernetes.io/hostname"]}],
        "resourceFlavors": [
            {"name": "red", "nodeLabels": {"pool": "red"}, "topologyName": "hosts"}
        ],
        "cohorts": cohorts,
        "clusterQueues": [{"name": "cq", "cohortName": "team", "resourceGroups": _quota(0)}],
        "nodes": [{"name": "n1", "labels": {"pool": "red"}, "allocatable": {"cpu": 4, "pods": 10}}],
        **top,
    }
    return scenario_from_data(data, "tree.yaml")


def test_cohorts_load_with_parent_quota_and_weight() -> None:
    sc = _scenario(
        [
            {"name": "org"},
            {
                "name": "team",
                "parentName": "org",
                "resourceGroups": _quota("1500m", borrowingLimit=2, lendingLimit=1),
                "fairSharing": {"weight": "0.5"},
            },
        ]
    )
    org, team = sc.cohorts
    assert (org.name, org.parent, org.resource_groups, org.fair_weight) == ("org", None, (), None)
    assert (team.parent, team.fair_weight) == ("org", Fraction(1, 2))
    quota = team.resource_groups[0].flavors[0].resources[0]
    assert (quota.nominal, quota.borrowing_limit, quota.lending_limit) == (
        Fraction(3, 2),
        Fraction(2),
        Fraction(1),
    )


def test_a_cohort_may_lend_more_than_its_nominal_quota() -> None:
    # cohort_webhook.go validates with enforceNominalGreaterThanLending false.
    sc = _scenario(
        [{"name": "team", "parentName": "org", "resourceGroups": _quota(1, lendingLimit=5)}]
    )
    assert sc.cohorts[0].resource_groups[0].flavors[0].resources[0].lending_limit == 5


@pytest.mark.parametrize(
    ("cohorts", "error"),
    [
        (
            [{"name": "team", "resourceGroups": _quota(1, borrowingLimit=1)}],
            "cohorts[0].resourceGroups[0].flavors[0].resources[0].borrowingLimit: "
            "must be nil when parent is empty",
        ),
        (
            [{"name": "team", "parentName": "team"}],
            "cohorts[0].parentName: cohort cycle team -> team",
        ),
        (
            [
                {"name": "a", "parentName": "b"},
                {"name": "b", "parentName": "c"},
                {"name": "c", "parentName": "a"},
            ],
            "cohort cycle a -> b -> c -> a",
        ),
        (
            [{"name": "team", "fairSharing": {"weight": "1n"}}],
            "cohorts[0].fairSharing.weight: When not 0, weight must be > 10e-9",
        ),
        ([{"name": "Team"}], "cohorts[0].name"),
        ([{"name": "team", "resourceGroups": _quota(-1)}], "must not be negative"),
    ],
)
def test_what_kueue_refuses_is_one_line(cohorts: Any, error: str) -> None:
    with pytest.raises(HarnessError) as raised:
        _scenario(cohorts)
    assert error in str(raised.value) and "\n" not in str(raised.value)


def test_cohorts_need_the_version_2_lists() -> None:
    with pytest.raises(HarnessError, match="cannot be mixed"):
        scenario_from_data(
            {
                "name": "v1",
                "topology": {"levels": ["kubernetes.io/hostname"]},
                "cohorts": [{"name": "team"}],
                "nodes": [{"name": "n1", "allocatable": {"cpu": 4}}],
            },
            "v1.yaml",
        )


def test_runner_and_sim_get_the_same_cohort_spec() -> None:
    sc = _scenario(
        [
            {"name": "org", "resourceGroups": _quota(2)},
            {"name": "team", "parentName": "org", "fairSharing": {"weight": 2}},
        ]
    )
    org, team = sc.cohorts
    assert cohort_spec(team) == {"parentName": "org", "fairSharing": {"weight": "2"}}
    assert cohort_spec(org)["resourceGroups"] == [
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "red", "resources": [{"name": "cpu", "nominalQuota": "2"}]}],
        }
    ]
    objs = world.cluster_objects(sc, Names(run_id="r1", namespace="ns"))
    kinds = [o["kind"] for o in objs]
    assert kinds.index("Cohort") < kinds.index("ClusterQueue")
    assert [o["spec"] for o in objs if o["kind"] == "Cohort"] == [
        cohort_spec(org),
        cohort_spec(team),
    ]
    sent = scenario_to_dict(sc)["cohorts"]
    assert sent == [{"name": "org", **cohort_spec(org)}, {"name": "team", **cohort_spec(team)}]
