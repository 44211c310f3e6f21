"""What one look at Kueue's log costs the runner while pods are gated: the last 500 lines
of a log the size a make e2e worker's Kueue log reaches (15 MB), read from the end
(harness/logtail.tail) against the whole file read and split.

    python bench/logtail.py [--mib 15] [--looks 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.logtail import last_lines, tail


def _log(path: Path, mib: float) -> None:
    """Zap JSON lines like Kueue's V(2) scheduling lines, to `mib` MiB."""
    line = json.dumps({
        "level": "Level(-2)", "ts": "2026-12-07T15:14:57.123456789Z", "logger": "scheduler",
        "caller": "scheduler/scheduler.go:123", "msg": "Workload evaluated for admission",
        "workload": {"name": "job-wl-36570", "namespace": "kth-41-preferred-rack-falls-back"},
        "clusterQueue": {"name": "tas-cq"}, "status": "pending", "reason": "",
    }) + "\n"  # fmt: skip
    with path.open("w") as out:
        out.write(line * int(mib * 2**20 / len(line)))


def _per_look(looks: int, read: object) -> float:
    assert callable(read)
    start = time.process_time()
    for _ in range(looks):
        read()
    return (time.process_time() - start) / looks * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=15.0)
    parser.add_argument("--looks", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kueue.log"
        _log(path, args.mib)
        whole = _per_look(max(1, args.looks // 10), lambda: last_lines(path.read_text(), 500))
        from_end = _per_look(args.looks, lambda: tail(path, 500))
    print(f"last 500 lines of a {args.mib:g} MiB log: whole file {whole:.1f} ms, "
          f"from the end {from_end:.2f} ms CPU per look")  # fmt: skip


if __name__ == "__main__":
    main()
