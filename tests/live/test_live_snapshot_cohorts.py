"""`snapshot` writes a cluster's Cohort objects as `cohorts:` entries (hierarchical cohorts),
and leaves out what cannot load: cohorts whose parents reach a cycle, quota of a missing
ResourceFlavor."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import yaml

from harness.live.snapshot import render, snapshot
from harness.scenario.loader import scenario_from_data
from tests.live.test_live_snapshot import meta, state


def cohort(name: str, **spec: object) -> dict[str, object]:
    return {"metadata": meta(name), "spec": spec}


def _quota(flavor: str, nominal: str, **limits: str) -> list[dict[str, object]]:
    resource = {"name": "nvidia.com/gpu", "nominalQuota": nominal, **limits}
    return [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": flavor, "resources": [resource]}],
        }
    ]


def test_cohorts_are_written_and_load() -> None:
    cohorts = [
        cohort("org", resourceGroups=_quota("h100", "4")),
        cohort("research", parentName="org", resourceGroups=_quota("h100", "2", lendingLimit="1"),
               fairSharing={"weight": "2"}),
        cohort("loop-a", parentName="loop-b"),
        cohort("loop-b", parentName="loop-a"),
        cohort("below-loop", parentName="loop-a"),
        cohort("old", resourceGroups=_quota("a100", "8")),
    ]  # fmt: skip
    snap = snapshot(dataclasses.replace(state(), cohorts=cohorts, missing=[]))
    scenario = scenario_from_data(yaml.safe_load(render(snap)), "snap.yaml")
    by_name = {c.name: c for c in scenario.cohorts}
    assert sorted(by_name) == ["old", "org", "research"]
    research = by_name["research"]
    assert (research.parent, research.fair_weight) == ("org", Fraction(2))
    assert research.resource_groups[0].flavors[0].resources[0].lending_limit == 1
    assert by_name["old"].resource_groups == ()
    lines = snap.gaps.lines
    for name in ("loop-a", "loop-b", "below-loop"):
        assert f"Cohort {name}: left out, its parents reach a cycle (Kueue deactivates it)" in lines
    assert "Cohort old: quota of missing ResourceFlavor a100" in lines
