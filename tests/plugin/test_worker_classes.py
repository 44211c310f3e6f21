"""The e2e worker classes: sized from recorded wall and CPU seconds, not a constant."""

from __future__ import annotations

from harness.plugin.worker_classes import plan
from harness.plugin.xdist import pick_unit

BUSY = {f"suites/a/b{i}.yaml::b{i}": 2.0 for i in range(40)}
WAIT = {f"suites/faults/f{i}.yaml::f{i}": 20.0 for i in range(10)}


def _cpu(share_busy: float, share_wait: float) -> dict[str, float]:
    return {
        **{k: v * share_busy for k, v in BUSY.items()},
        **{k: v * share_wait for k, v in WAIT.items()},
    }


def test_scenarios_that_mostly_wait_get_clusters_of_their_own() -> None:
    wall = {**BUSY, **WAIT}
    found = plan(list(wall), wall, _cpu(0.7, 0.15), cores=2, memory_gib=24)
    assert found.waiting_items == frozenset(WAIT)
    assert found.busy == 2  # 1.8 cores of budget at 0.7 each
    # 0.4 cores left at 0.15 each: 2 clusters; 200 s waiting vs 80 s busy would take 5.
    assert found.waiting == 2
    assert "10 waiting" in found.why


def test_a_busier_machine_record_gives_fewer_clusters() -> None:
    wall = {**BUSY, **WAIT}
    found = plan(list(wall), wall, _cpu(1.5, 0.1), cores=2, memory_gib=24)
    assert found.busy == 1
    assert found.waiting >= 1


def test_memory_caps_the_clusters() -> None:
    wall = {**BUSY, **WAIT}
    found = plan(list(wall), wall, _cpu(0.2, 0.01), cores=8, memory_gib=4)
    assert found.workers <= 2


def test_without_a_cpu_record_every_scenario_is_busy() -> None:
    found = plan(list(BUSY), BUSY, {}, cores=2, memory_gib=24)
    assert (found.busy, found.waiting, found.waiting_items) == (2, 0, frozenset())
    assert "no CPU record" in found.why


def test_a_worker_takes_the_heaviest_unit_of_its_class_then_the_other() -> None:
    wall = {"a::a": 1.0, "b::b": 5.0, "f::f": 30.0, "g::g": 40.0}
    waiting = plan(list(wall), wall, {"a::a": 1, "b::b": 4, "f::f": 1, "g::g": 1}, cores=2)
    assert waiting.waiting_items == {"f::f", "g::g"}
    queue = {k: {k: False} for k in wall}
    assert pick_unit(queue, waiting, wall, waiting=False) == "b::b"
    assert pick_unit(queue, waiting, wall, waiting=True) == "g::g"
    only_busy = {"a::a": {"a::a": False}}
    assert pick_unit(only_busy, waiting, wall, waiting=True) == "a::a"


def test_busy_clusters_stay_within_one_per_core_and_all_within_three() -> None:
    wall = {**BUSY, **WAIT}
    found = plan(list(wall), wall, _cpu(0.4, 0.01), cores=2, memory_gib=24)
    assert found.busy == 2  # 1.6 cores at 0.4 would feed 4
    assert found.workers == 6  # 0.8 cores spare would feed 80 waiting ones
