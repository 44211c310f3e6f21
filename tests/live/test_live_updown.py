"""`down` without a cluster: it stops what `up` recorded and forgets each record, also one
whose cluster is gone (the cluster tests run up and down for real: test_live_cluster.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.live import updown


def test_down_forgets_what_it_cannot_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTH_RUN_ROOT", str(tmp_path))
    assert updown.down() == []
    gone = tmp_path / "kth-local-gone"
    updown.registry().mkdir()
    (updown.registry() / gone.name).write_text(f"{gone}\n")
    (line,) = updown.down()
    assert line.startswith(f"{gone}: {gone.resolve()}: not a kept local cluster")
    assert list(updown.registry().iterdir()) == []
