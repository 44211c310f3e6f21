"""Queue positions in a snapshot: read from Kueue's visibility API where it is served, and
said to be "not served" where it is not (no cluster: a stand-in answers the GETs)."""

from __future__ import annotations

from typing import Any, cast

import yaml

from harness.kube import Kube, KubeError, NotFound
from harness.live.queue_positions import VISIBILITY_API, QueuePositions, read_positions
from harness.live.snapshot import positions_line, render, snapshot
from harness.scenario.loader import scenario_from_data
from tests.live.test_live_snapshot import state


class _Answers:
    """Kube.request for GETs: path -> body, or the KubeError to raise."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def request(self, method: str, path: str, query: Any = None) -> Any:
        self.asked.append(path)
        answer = self.answers[path]
        if isinstance(answer, KubeError):
            raise answer
        return answer


def _pending(name: str, cq_pos: int, lq_pos: int) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ml"}
    return {"metadata": meta, "positionInClusterQueue": cq_pos, "positionInLocalQueue": lq_pos}


def test_positions_are_read_per_cluster_queue() -> None:
    api = _Answers(
        {
            VISIBILITY_API: {"kind": "APIResourceList"},
            f"{VISIBILITY_API}/clusterqueues/team-a/pendingworkloads": {
                "items": [_pending("job-pc-1", 0, 0), _pending("job-next-def34", 1, 1)]
            },
            f"{VISIBILITY_API}/clusterqueues/team-b/pendingworkloads": NotFound("gone", 404),
        }
    )
    found = read_positions(cast(Kube, api), ["team-b", "team-a"])
    assert not found.not_served
    assert found.by_workload["ml/job-pc-1"] == {
        "clusterQueue": "team-a",
        "positionInClusterQueue": 0,
        "positionInLocalQueue": 0,
    }
    assert len(found.by_workload) == 2


def test_an_unregistered_api_is_not_served() -> None:
    api = _Answers({VISIBILITY_API: NotFound("404 page not found", 404)})
    found = read_positions(cast(Kube, api), ["team-a"])
    assert found.not_served.startswith("not served (visibility.kueue.x-k8s.io/v1beta2")
    assert api.asked == [VISIBILITY_API]  # no per-queue GETs once discovery said no


def test_an_unavailable_apiservice_is_not_served() -> None:
    api = _Answers({VISIBILITY_API: KubeError("GET: 503 service unavailable", 503)})
    assert "503" in read_positions(cast(Kube, api), ["team-a"]).not_served


def test_snapshot_keeps_positions_by_scenario_name_in_queue_order() -> None:
    cluster = state()
    cluster.queue_positions = QueuePositions(
        {
            "ml/job-next-def34": {"clusterQueue": "team-a", "positionInClusterQueue": 1,
                                  "positionInLocalQueue": 1},
            "ml/job-pc-1": {"clusterQueue": "team-a", "positionInClusterQueue": 0,
                            "positionInLocalQueue": 0},
        }
    )  # fmt: skip
    snap = snapshot(cluster)
    positions = snap.data["x-snapshot"]["queuePositions"]
    assert list(positions) == ["urgent", "next"]
    assert positions["next"] == {"positionInClusterQueue": 1, "positionInLocalQueue": 1}
    text = render(snap)
    assert "# queue positions: 2 pending workloads, in x-snapshot.queuePositions" in text
    scenario_from_data(yaml.safe_load(text), "snap.yaml")  # the loader accepts it


def test_snapshot_says_where_positions_are_not_served() -> None:
    cluster = state()
    cluster.queue_positions = QueuePositions(not_served="not served (gate off)")
    snap = snapshot(cluster)
    assert positions_line(snap) == "queue positions: not served (gate off)"
    assert "# queue positions: not served (gate off)" in render(snap)
