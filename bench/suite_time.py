"""Where each suite folder's time on the embedded cluster goes: per folder, its scenarios, the
wall seconds, the CPU seconds the cluster and the harness spent, and the share of wall time
nothing ran (waiting on Kueue's batch periods and backoffs, the Job controller's backoff, the
settle window: the floor more clusters can overlap but no harness can shorten).

Reads the record `make durations` keeps (bench/durations/e2e.json and e2e-cpu.json), or the
files given. Prints a Markdown table; asserts nothing.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

RECORD = Path(__file__).resolve().parent / "durations"


def folder(item: str) -> str:
    parts = item.split("::", 1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def main(args: list[str]) -> int:
    wall_path = Path(args[0]) if args else RECORD / "e2e.json"
    cpu_path = Path(args[1]) if len(args) > 1 else wall_path.with_name(f"{wall_path.stem}-cpu.json")
    if not wall_path.is_file() or not cpu_path.is_file():
        print(
            f"{wall_path} or {cpu_path}: not there (make test, then make durations)",
            file=sys.stderr,
        )
        return 2
    wall: dict[str, float] = json.loads(wall_path.read_text())
    cpu: dict[str, float] = json.loads(cpu_path.read_text())
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for item, seconds in wall.items():
        if item not in cpu:
            continue
        row = rows[folder(item)]
        row[0] += 1
        row[1] += seconds
        row[2] += cpu[item]
    print("| suite | scenarios | wall s | CPU s | waiting |")
    print("|---|---:|---:|---:|---:|")
    total = [0, 0.0, 0.0]
    for name, (n, w, c) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {n:.0f} | {w:.0f} | {c:.0f} | {max(0.0, 1 - c / w):.0%} |")
        total = [total[0] + n, total[1] + w, total[2] + c]
    n, w, c = total
    if w:
        print(f"| all | {n:.0f} | {w:.0f} | {c:.0f} | {max(0.0, 1 - c / w):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
