"""`init [FOLDER] [--from-snapshot FILE]`: a starter for checking Kueue TAS in your own
repository: an example scenario, a Python test with the fixtures and its cluster shape, the
pytest settings, and a GitHub workflow that uses this project's action. `--from-snapshot`
builds the example from your cluster (`kth snapshot`): its world, plus one example job whose
expectations the fit model writes. Existing files are never overwritten (exit 2, naming
the first)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from harness.errors import InputError

STARTER = Path(__file__).resolve().parent / "starter"
"""The starter's files, shipped as package data and copied as they are (the example scenario
comes from GUIDE_EXAMPLE, or from a snapshot). Stored names lose `.tmpl` (so this package's
own pytest and ruff leave them alone) and turn a leading `dot-` into `.` (package data skips
dot files)."""
EXAMPLE = Path("scenarios") / "example.yaml"
GUIDE_EXAMPLE = (
    Path(__file__).resolve().parents[1] / "scenario" / "examples" / "guide-required-host.yaml"
)
"""The example scenario (the guide's first cluster and job), also `up`'s default shape."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the `init` command."""
    cmd = sub.add_parser("init", help="write a starter: scenario, fixtures test, CI workflow")
    cmd.add_argument("folder", nargs="?", default=".", help="where (default: %(default)s)")
    cmd.add_argument(
        "--from-snapshot",
        metavar="SNAPSHOT.yaml",
        help="make the example scenario from your cluster's snapshot (default: a two-rack "
        "example cluster)",
    )
    cmd.set_defaults(handler=_init)


def _init(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    plan = starter_files(Path(args.from_snapshot) if args.from_snapshot else None)
    for relative in plan:
        if (folder / relative).exists():
            raise InputError(
                str(folder / relative), "", "exists already; init writes only new files"
            )
    for relative, text in plan.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"wrote {target}")
    print(f"next: cd {folder} && pytest   (the fit model; --cluster=sim or local for real Kueue)")
    return 0


def starter_files(snapshot: Path | None) -> dict[Path, str]:
    """Every file of the starter (relative path -> text)."""
    files = {
        _written_name(path.relative_to(STARTER)): path.read_text()
        for path in sorted(STARTER.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
    files[EXAMPLE] = (
        GUIDE_EXAMPLE.read_text() if snapshot is None else example_from_snapshot(snapshot)
    )
    return files


def _written_name(stored: Path) -> Path:
    parts = [("." + p.removeprefix("dot-")) if p.startswith("dot-") else p for p in stored.parts]
    return Path(*parts[:-1], parts[-1].removesuffix(".tmpl"))


def example_from_snapshot(snapshot: Path) -> str:
    """The snapshot's world, its own workloads kept, plus one example job of one GPU on the
    first ClusterQueue that offers GPUs; expectations from the fit model."""
    from harness.cli.expect_writer import fill_expect
    from harness.fit import fit
    from harness.scenario.loader import load_scenario, scenario_from_data

    load_scenario(snapshot)  # a snapshot that does not load says so in one line, as ever
    data = yaml.safe_load(snapshot.read_text())
    job = _example_job(snapshot, data)
    data["name"] = "example-from-snapshot"
    data.setdefault("workloads", []).append(job)
    text = "# Made by `kth init --from-snapshot`: your cluster plus one example job.\n"
    text += yaml.safe_dump(data, sort_keys=False)
    scenario = scenario_from_data(yaml.safe_load(text), str(EXAMPLE))
    filled, _ = fill_expect(text, scenario, fit(scenario))
    return filled


def _example_job(snapshot: Path, data: dict[str, Any]) -> dict[str, Any]:
    for cq in data.get("clusterQueues") or []:
        for group in cq.get("resourceGroups") or []:
            gpus = [r for r in group.get("coveredResources", []) if r.endswith("/gpu")]
            if gpus:
                return {
                    "name": "example-train",
                    "queue": cq["name"],
                    "podSets": [{"name": "main", "count": 1, "requests": {gpus[0]: 1}}],
                }
    raise InputError(str(snapshot), "clusterQueues", "no ClusterQueue covers a GPU resource")
