"""Keep the record of durations: copy the per-item durations a `make test` run stored
(run/durations-test.json for own-tests, run/durations-e2e.json for the suites on the cluster:
pytest --store-durations) into bench/durations/, rounded to 0.1 s, with the CPU seconds
recorded beside them (run/durations-e2e-cpu.json -> e2e-cpu.json). GitHub's e2e shards balance
by bench/durations/e2e.json (--shard-durations); `make e2e` sizes its worker classes from
e2e.json and e2e-cpu.json (harness/plugin/worker_classes.py).

Prints how many items each file records and their total seconds; asserts nothing.
Run with `make durations` after `make test`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORD = Path(__file__).resolve().parent / "durations"


def main(paths: list[str]) -> int:
    wanted = [Path(name) for name in paths]
    wanted += [cpu for p in wanted if (cpu := p.with_name(f"{p.stem}-cpu{p.suffix}")).is_file()]
    for path in wanted:
        if not path.is_file():
            print(f"{path}: not there (run make test first)", file=sys.stderr)
            return 2
        found = json.loads(path.read_text())
        kept = {item: round(float(seconds), 1) for item, seconds in sorted(found.items())}
        target = RECORD / (path.stem.removeprefix("durations-") + ".json")
        target.write_text(json.dumps(kept, indent=1) + "\n")
        print(f"{target}: {len(kept)} items, {sum(kept.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
