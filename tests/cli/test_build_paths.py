"""`python -m harness build --kueue-version all` covers every Kueue version the suites run,
each version's Kueue before its sim, and lists a shared component once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.toolchain import KUEUE_JOBSET, PINS


def test_all_versions_list_each_kueue_jobset_and_sim_once(tmp_path: Path) -> None:
    env = {"KTH_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"}
    command = ["build", "binaries", "sim", "--kueue-version", "all", "--paths"]
    out = subprocess.run(
        [sys.executable, "-m", "harness", *command],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.splitlines()
    rows = [line.split("\t") for line in out]
    names = [name for name, _ in rows]
    paths = [Path(path).parent.name for _, path in rows]
    assert names.count("kube-apiserver") == 1
    assert names.count("kueue") == names.count("sim") == len(KUEUE_JOBSET)
    kueues = [p for p in paths if p.startswith("kueue-v")]
    assert kueues[0] == f"kueue-{PINS.kueue}"
    assert sorted(kueues) == sorted(f"kueue-{v}" for v in KUEUE_JOBSET)
    assert sorted(p for p in paths if p.startswith("jobset-")) == sorted(
        {f"jobset-{j}" for j in KUEUE_JOBSET.values()}
    )
    for version in KUEUE_JOBSET:
        kueue = paths.index(f"kueue-{version}")
        sim = next(i for i, p in enumerate(paths) if p.startswith(f"sim-{version}-"))
        assert kueue < sim, f"{version}: its sim is listed before its Kueue: {paths}"
