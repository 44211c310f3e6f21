"""The in-process backend: Kueue v0.19.2's real scheduler run as a library (sim/, Go).

`build_sim` compiles sim/ once per source hash into the build cache; `run_sim` streams
scenarios (contract-shaped dicts) through one kueue-sim process as JSON Lines and returns one
`{"name", "outcome", "error"}` dict per scenario. `SimBackend` is the `harness.backends`
adapter. A scenario that crashes the process is reported as an error and the process is
restarted for the rest, so one bad scenario never sinks a batch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

from harness.backends import BackendError, Observation
from harness.errors import HarnessError
from harness.outcome import Outcome
from harness.scenario import Node, PodSet, Scenario, Step, Toleration, Usage, Workload
from harness.toolchain.cache import cache_root, is_current, locked, populate
from harness.toolchain.gocmd import run_go

SIM_DIR = Path(__file__).resolve().parent.parent / "sim"
BINARY = "kueue-sim"
SOURCE_SUFFIXES = (".go", ".mod", ".sum")


def source_hash(src: Path = SIM_DIR) -> str:
    """Short sha256 over sim/'s Go sources: a changed source means a new build directory."""
    digest = hashlib.sha256()
    files = sorted(p for p in src.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)
    if not files:
        raise HarnessError(f"no Go sources in {src}: the sim backend needs the repo's sim/ folder")
    for path in files:
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def build_sim(src: Path = SIM_DIR) -> Path:
    """Path of the kueue-sim binary for the current sources, building it if needed."""
    digest = source_hash(src)
    final = cache_root() / f"sim-{digest}"
    fingerprint = {"sources": digest}
    with locked(f"sim-{digest}"):
        if is_current(final, fingerprint, [BINARY]):
            return final / BINARY
        print(f"building kueue-sim ({digest}) from {src}", file=sys.stderr, flush=True)

        def fill(tmp: Path) -> None:
            run_go(
                ["build", "-trimpath", "-o", str(tmp / BINARY), "."],
                label="building kueue-sim",
                cwd=src,
                log=tmp / "build.log",
            )

        populate(final, fingerprint, fill)
    prune_old_sims(keep=final)
    return final / BINARY


def prune_old_sims(keep: Path, newest: int = 3) -> list[Path]:
    """Remove sim builds of older sources (75 MB each), all but the `newest` by build time:
    every edit of sim/ makes a new one, and a few stay for other checkouts."""
    builds = sorted(
        (d for d in cache_root().glob("sim-*") if d.is_dir() and d != keep),
        key=lambda d: d.stat().st_mtime,
        reverse=True,
    )
    removed = builds[max(newest - 1, 0) :]
    for old in removed:
        shutil.rmtree(old, ignore_errors=True)
    return removed


class SimProcess:
    """One running kueue-sim: send a scenario, read its answer; restarts after a crash."""

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary or build_sim()
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[str]:
        # stderr goes to a file: a pipe nobody reads could fill up and stall the process.
        self._stderr = tempfile.TemporaryFile(mode="w+", prefix="kueue-sim-")  # noqa: SIM115 (closed in close())
        self._proc = subprocess.Popen(
            [str(self.binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        return self._proc

    def run_many(self, scenarios: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Answers in order, pipelined: a writer thread feeds scenarios while answers are read.

        A process that dies mid-batch fails the scenario it was on; the rest go to a new one.
        """
        answers: list[dict[str, Any]] = []
        todo = list(scenarios)
        while todo:
            proc = self._proc if self._proc and self._proc.poll() is None else self._start()
            assert proc.stdin is not None and proc.stdout is not None
            writer = threading.Thread(target=_feed, args=(proc.stdin, todo), daemon=True)
            writer.start()
            done = 0
            for _ in todo:
                line = proc.stdout.readline()
                if not line:
                    break
                answers.append(json.loads(line))
                done += 1
            if done == len(todo):
                writer.join()
                break
            crash = self._crash_report()  # closes the pipes, which ends the writer
            writer.join()
            answers.append({"name": todo[done].get("name"), "outcome": None, "error": crash})
            todo = todo[done + 1 :]
        return answers

    def run(self, scenario: Mapping[str, Any]) -> dict[str, Any]:
        """Answer for one scenario; a process that dies on it yields an error answer."""
        proc = self._proc if self._proc and self._proc.poll() is None else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        name = scenario.get("name")
        try:
            proc.stdin.write(json.dumps(scenario) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            return {"name": name, "outcome": None, "error": self._crash_report()}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _crash_report(self) -> str:
        proc, err = self._proc, self._stderr
        code = proc.wait(timeout=10) if proc else None
        tail = ""
        if err is not None:
            err.seek(0)
            tail = " | ".join(err.read().strip().splitlines()[-5:])
        self.close()
        return f"kueue-sim exited with code {code}: {tail or 'no output on stderr'}"

    def close(self) -> None:
        """Stop the process (idempotent): closing stdin ends it; kill if it lingers."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin:
                with contextlib.suppress(OSError, ValueError):  # a dead process: broken pipe
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _feed(stdin: IO[str], scenarios: Sequence[Mapping[str, Any]]) -> None:
    try:
        for scenario in scenarios:
            stdin.write(json.dumps(scenario) + "\n")
        stdin.flush()
    except (BrokenPipeError, OSError, ValueError):  # the process died; the reader reports it
        return


def run_sim(
    scenarios: Iterable[Mapping[str, Any]], binary: Path | None = None
) -> list[dict[str, Any]]:
    """Run contract-shaped scenario dicts through one kueue-sim process, in order."""
    with SimProcess(binary) as sim:
        return sim.run_many(list(scenarios))


# --- typed Scenario -> contract dict -------------------------------------------------------


def quantity(value: Fraction) -> str:
    """Exact Kubernetes quantity text for a parsed quantity (plain, m, u or n units)."""
    for scale, suffix in ((1, ""), (1000, "m"), (10**6, "u"), (10**9, "n")):
        scaled = value * scale
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    raise HarnessError(f"quantity {value} is finer than a nano unit")


def _resources(res: Mapping[str, Fraction]) -> dict[str, str]:
    return {name: quantity(q) for name, q in res.items()}


def _toleration(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": t.key,
        "operator": t.operator,
        "value": t.value,
        "effect": t.effect,
    }
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def _pod_set(ps: PodSet) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": ps.name,
        "count": ps.count,
        "requests": _resources(ps.requests),
        "nodeSelector": dict(ps.node_selector),
        "tolerations": [_toleration(t) for t in ps.tolerations],
    }
    t = ps.topology
    if t is not None:
        topo = {
            "mode": t.mode,
            "level": t.level,
            "sliceLevel": t.slice_level,
            "sliceSize": t.slice_size,
            "podSetGroupName": t.group,
        }
        out["topology"] = {k: v for k, v in topo.items() if v is not None}
    return out


def _usage(u: Usage) -> dict[str, Any]:
    out = {"node": u.node, "requests": _resources(u.requests), "count": u.count}
    if u.name:
        out["name"] = u.name
    return out


def _node(n: Node) -> dict[str, Any]:
    return {
        "name": n.name,
        "labels": dict(n.labels),
        "allocatable": _resources(n.allocatable),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints],
        "ready": n.ready,
        "unschedulable": n.unschedulable,
    }


def _workload(w: Workload) -> dict[str, Any]:
    return {"name": w.name, "podSets": [_pod_set(p) for p in w.pod_sets]}


def _step(step: Step) -> dict[str, Any]:
    target = step.target
    if isinstance(target, Node):
        return {step.action: _node(target)}
    if isinstance(target, Usage):
        return {step.action: _usage(target)}
    if isinstance(target, Workload):
        return {step.action: _workload(target)}
    return {step.action: str(target)}


def scenario_to_dict(sc: Scenario, extra_gates: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """The contract form kueue-sim reads; `extra_gates` apply under the scenario's own."""
    return {
        "name": sc.name,
        "featureGates": {**(extra_gates or {}), **sc.feature_gates},
        "topology": {"name": sc.topology.name, "levels": list(sc.topology.levels)},
        "flavor": {
            "name": sc.flavor.name,
            "nodeLabels": dict(sc.flavor.node_labels),
            "tolerations": [_toleration(t) for t in sc.flavor.tolerations],
        },
        "queue": {"nominalQuota": _resources(sc.queue.nominal_quota)},
        "nodes": [_node(n) for n in sc.nodes],
        "usage": [_usage(u) for u in sc.usage],
        "workloads": [_workload(w) for w in sc.workloads],
        "steps": [_step(st) for st in sc.steps],
    }


def parse_gates(text: str) -> dict[str, bool]:
    """`A=true,B=false` (the --feature-gates option) -> {"A": True, "B": False}."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise HarnessError(f"--feature-gates: {item!r} is not NAME=true or NAME=false")
        gates[name] = value.lower() == "true"
    return gates


def _outcomes(data: Mapping[str, Any] | None) -> dict[str, Outcome]:
    return {name: Outcome.from_json(v) for name, v in (data or {}).items()}


class SimBackend:
    """`harness.backends` adapter: one kueue-sim process for the whole session."""

    def __init__(self, name: str = "sim", feature_gates: str = "", **_ignored: Any) -> None:
        self.name = name
        self.gates = parse_gates(feature_gates or "")
        self._sim: SimProcess | None = None

    def run(self, scenario: Scenario) -> Observation:
        if self._sim is None:
            self._sim = SimProcess()
        answer = self._sim.run(scenario_to_dict(scenario, self.gates))
        if answer.get("error"):
            raise BackendError(f"{scenario.path}: kueue-sim: {answer['error']}")
        outcomes = _outcomes(answer.get("outcome"))
        steps = [_outcomes(step) for step in answer.get("steps") or []]
        details = json.dumps({"outcome": answer["outcome"], "notes": answer.get("notes", [])})
        return Observation(outcomes=outcomes, steps=steps, details=details)

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None


def _files(argv: list[str]) -> Iterator[dict[str, Any]]:
    from harness.loader import load_scenario

    for arg in argv:
        yield scenario_to_dict(load_scenario(arg))


def main(argv: list[str]) -> int:
    """`python -m harness.sim_backend FILE.yaml...`: print each scenario's answer as JSON."""
    if not argv:
        print("usage: python -m harness.sim_backend FILE.yaml...", file=sys.stderr)
        return 2
    try:
        scenarios = list(_files(argv))
        binary = build_sim()
    except HarnessError as err:
        print(err, file=sys.stderr)
        return 2
    failed = False
    for answer in run_sim(scenarios, binary):
        print(json.dumps(answer))
        failed = failed or bool(answer.get("error"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
