"""`python -m harness leftovers` finds processes run from the binary cache and cluster dirs."""

from __future__ import annotations

import shutil
import subprocess
import sys
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
        # A child of this (Python) process: in use by it, not left behind.
        assert [c.processes for c in found.in_use] == [[f"{proc.pid} {sleeper.resolve()}"]]
        assert found.processes == []
        assert found.paths == [str(runs / "kth-etcd-kth-local-abc"), str(runs / "kth-local-abc")]
    finally:
        proc.kill()
        proc.wait()
    assert leftovers.find(runs, shm=runs).processes == []


def _cache_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    (cache / "etcd-v0").mkdir(parents=True)
    binary = cache / "etcd-v0" / "etcd"
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, binary)
    monkeypatch.setenv("KTH_CACHE", str(cache))
    return binary


def test_a_cluster_whose_owner_runs_is_in_use_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32 item 7: another run's cluster (its owner, a Python process, is alive) is in
    use, by pid; an orphaned component and a run dir whose owner is gone are left behind."""
    import os

    from harness.providers.local.owner import write_owner

    binary = _cache_binary(tmp_path, monkeypatch)
    runs = tmp_path / "runs"
    (runs / "kth-local-live").mkdir(parents=True)
    (runs / "kth-etcd-kth-local-live").mkdir()
    write_owner(runs / "kth-local-live")  # this test's process: alive, Python
    # A child of this process, naming its run dir as every component does (here in argv[0]).
    mine = subprocess.Popen(["etcd-of-kth-local-live", "30"], executable=binary)
    try:
        found = leftovers.find(runs, shm=runs)
        assert not found
        (cluster,) = found.in_use
        assert cluster.owner == os.getpid()
        assert cluster.processes == [f"{mine.pid} {binary.resolve()}"]
        assert cluster.paths == [
            str(runs / "kth-etcd-kth-local-live"),
            str(runs / "kth-local-live"),
        ]
        monkeypatch.setenv("KTH_RUN_ROOT", str(runs))
        monkeypatch.setattr(leftovers, "SHM", runs)
        assert leftovers._command(None) == 0  # type: ignore[arg-type]
        out = capsys.readouterr().out
        assert f"in use by pid {os.getpid()}" in out
        assert "0 process(es), 0 path(s) left behind" in out
        # The owner of kth-local-gone has exited: its dir is a real leftover.
        (runs / "kth-local-gone").mkdir()
        (runs / "kth-local-gone" / "owner").write_text("999999999 0\n")
        assert leftovers.find(runs, shm=runs).paths == [str(runs / "kth-local-gone")]
        assert leftovers._command(None) == 1  # type: ignore[arg-type]
    finally:
        mine.kill()
        mine.wait()


def test_an_orphaned_component_is_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = _cache_binary(tmp_path, monkeypatch)
    runs = tmp_path / "runs"
    runs.mkdir()
    # Started by a process that exits at once: its parent is no longer a harness process.
    spawn = f"import subprocess; subprocess.Popen(['etcd-of-kth-local-orphan', '30'], executable={str(binary)!r})"
    subprocess.run([sys.executable, "-c", spawn], check=True)
    found = leftovers.find(runs, shm=runs)
    try:
        assert len(found.processes) == 1 and found.in_use == []
    finally:
        for line in found.processes:
            os_pid = int(line.split()[0])
            subprocess.run(["kill", str(os_pid)], check=False)


def test_a_run_dir_without_an_owner_file_is_in_use_by_its_components_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster started by a harness that does not record owners yet: its components'
    running Python parent owns it, and with them its run dir and etcd dir."""
    import os

    binary = _cache_binary(tmp_path, monkeypatch)
    runs = tmp_path / "runs"
    (runs / "kth-local-old").mkdir(parents=True)
    (runs / "kth-etcd-kth-local-old").mkdir()
    mine = subprocess.Popen(["etcd-of-kth-local-old", "30"], executable=binary)
    try:
        found = leftovers.find(runs, shm=runs)
        assert not found
        (cluster,) = found.in_use
        assert cluster.owner == os.getpid()
        assert cluster.paths == [str(runs / "kth-etcd-kth-local-old"), str(runs / "kth-local-old")]
    finally:
        mine.kill()
        mine.wait()
