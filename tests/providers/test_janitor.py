"""The janitor of an embedded cluster's files (harness/providers/local/janitor.py), with
plain directories: no cluster needed to see who removes what."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.kube import poll_until
from harness.providers.local.janitor import Janitor

ROOT = Path(__file__).resolve().parents[2]
_ARM_THEN_WAIT = """
import sys, time
from pathlib import Path
from harness.providers.local.janitor import Janitor
janitor = Janitor(Path(p) for p in sys.argv[1:])
print("armed", flush=True)
time.sleep(600)
"""


def test_paths_go_when_the_starter_is_killed(tmp_path: Path) -> None:
    paths = [tmp_path / "etcd", tmp_path / "run"]
    for path in paths:
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "data").write_text("x")
    starter = subprocess.Popen(
        [sys.executable, "-c", _ARM_THEN_WAIT, *map(str, paths)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    with starter:
        assert starter.stdout is not None and starter.stdout.readline().strip() == "armed"
        starter.kill()
    poll_until(
        lambda: (not any(p.exists() for p in paths), f"left: {[p for p in paths if p.exists()]}"),
        what="the janitor to remove the killed starter's paths",
        timeout=20,
    )


def test_released_janitor_leaves_everything(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    janitor = Janitor([kept])
    proc = janitor.proc
    assert proc is not None
    janitor.release()
    assert proc.returncode == 0 and kept.is_dir()
    janitor.release()  # twice is harmless
