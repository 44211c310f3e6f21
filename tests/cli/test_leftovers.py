"""`python -m harness leftovers` finds processes run from the binary cache and cluster dirs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli import leftovers


def test_finds_a_process_from_the_cache_and_cluster_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    (cache / "etcd-v0").mkdir(parents=True)
    sleeper = cache / "etcd-v0" / "etcd"
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, sleeper)
    monkeypatch.setenv("KTH_CACHE", str(cache))
    runs = tmp_path / "runs"
    runs.mkdir()
    assert not leftovers.find(runs, shm=runs)

    (runs / "kth-local-abc").mkdir()
    (runs / "kth-etcd-kth-local-abc").mkdir()
    (runs / "unrelated").mkdir()
    proc = subprocess.Popen([str(sleeper), "30"])
    try:
        found = leftovers.find(runs, shm=runs)
        assert found.processes == [f"{proc.pid} {sleeper.resolve()}"]
        assert found.paths == [str(runs / "kth-etcd-kth-local-abc"), str(runs / "kth-local-abc")]
    finally:
        proc.kill()
        proc.wait()
    assert leftovers.find(runs, shm=runs).processes == []
