"""pytest-xdist (`-n N`, harness/plugin/xdist.py) end to end with pytester: every worker runs
scenarios on an embedded cluster of its own, the results are those of a serial run, the
controller writes one HTML report and one junit file holding every scenario, and nothing of
any worker's cluster is left behind.

The fit-model-only check needs no cluster; the real-Kueue one is marked `cluster` (two
embedded clusters at once, then one serial: about a minute on 2 cores).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.kube.errors import WaitTimeout
from harness.kube.wait import poll_until

REAL_HOME = os.environ.get("HOME", str(Path.home()))
GUIDE = Path(__file__).resolve().parents[2] / "suites" / "guide"
WRONG_EXPECT = {"train": {"admitted": True, "placement": {"main": {"gpu-node-1": 4}}}}
SCENARIOS = {  # name -> (guide file, expect to put instead of its own)
    "right-host": ("guide-required-host", None),
    "wrong-host": ("guide-required-host", WRONG_EXPECT),
    "rack-fallback": ("guide-preferred-host-falls-back-to-rack", None),
}


def _write_suite(pytester: pytest.Pytester) -> None:
    for name, (source, expect) in SCENARIOS.items():
        data = yaml.safe_load((GUIDE / f"{source}.yaml").read_text())
        data["name"] = name
        if expect is not None:
            data["expect"] = expect
        path = pytester.path / "suites" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))


def _report_names(page: Path) -> list[str]:
    """Scenario names in the order the report's sections show them."""
    sections = re.findall(r'<details class="sc [^"]*".*?</details>', page.read_text(), re.S)
    return [re.search(r"<b>([^<]+)</b>", s).group(1) for s in sections]  # type: ignore[union-attr]


def _junit(path: Path) -> dict[str, tuple[str, str]]:
    """Test name -> (outcome, the failure's diff lines: what Kueue did, not where it ran)."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            found[case.get("name", "")] = ("passed", "")
            continue
        text = failure.get("message", "") + (failure.text or "")
        diff = [line.strip() for line in text.splitlines() if "expected" in line]
        found[case.get("name", "")] = ("failed", "\n".join(diff))
    return found


def _run(pytester: pytest.Pytester, out: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", f"--kth-report={out}/report.html",
        f"--junitxml={out}/junit.xml", *args, timeout=600,
    )  # fmt: skip


def test_workers_report_every_scenario_in_the_serial_order(pytester: pytest.Pytester) -> None:
    """Fit model only: two workers and a serial run give the same report and junit."""
    _write_suite(pytester)
    serial = _run(pytester, "serial")
    workers = _run(pytester, "xdist", "-n", "2")
    serial.assert_outcomes(passed=2, failed=1)
    workers.assert_outcomes(passed=2, failed=1)
    workers.stdout.fnmatch_lines(["*HTML report: *xdist/report.html (3 scenarios, * KiB)"])
    names = _report_names(pytester.path / "serial" / "report.html")
    assert sorted(names) == sorted(SCENARIOS)
    assert _report_names(pytester.path / "xdist" / "report.html") == names
    assert _junit(pytester.path / "xdist" / "junit.xml") == _junit(
        pytester.path / "serial" / "junit.xml"
    )


def test_kind_and_existing_refuse_workers(pytester: pytest.Pytester) -> None:
    _write_suite(pytester)
    result = pytester.runpytest_subprocess("--cluster=existing", "--kubeconfig=kc", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*-n 2 with --cluster=existing: every pytest-xdist worker*-n 0"])


STAND_IN_BACKEND = """
\"\"\"A backend that runs nothing: it says, as a skip reason, which worker it ran on and with
which gates, so the test can see how xdist distributed the items.\"\"\"
import os

import harness.plugin.hooks
from harness.backends.base import Unsupported


class WhereRan:
    name = "stand-in"

    def run(self, scenario):
        gates = ",".join(f"{k}={v}" for k, v in sorted(scenario.feature_gates.items()))
        config = ",".join(sorted(scenario.kueue_config.document))
        raise Unsupported(
            f"ran on {os.environ['PYTEST_XDIST_WORKER']} gates [{gates}] config [{config}] "
            f"version {scenario.kueue}"
        )

    def close(self):
        pass


harness.plugin.hooks.create_backend = lambda cluster, **options: WhereRan()
"""


def _scenarios(pytester: pytest.Pytester, variants: dict[str, dict[str, Any]]) -> None:
    """The guide's required-host scenario once per name, with these top-level fields."""
    for name, fields in variants.items():
        data = yaml.safe_load((GUIDE / "guide-required-host.yaml").read_text())
        data |= {"name": name, **fields}
        path = pytester.path / "suites" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))


def _on_two_workers(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeconftest(STAND_IN_BACKEND)
    return pytester.runpytest_subprocess(
        "--cluster=local", "-n", "2", "-rs", "-p", "no:cacheprovider", "--kth-report="
    )


def test_each_gate_set_runs_on_one_worker(pytester: pytest.Pytester) -> None:
    """Each gate change restarts a worker's cluster, so with -n and no --dist each gate set
    runs on one worker, while default-gate scenarios spread over both. (With --dist load the
    sets are split: this fails.)"""
    gate_sets: dict[str, dict[str, Any]] = {
        "d": {},
        "b": {"featureGates": {"TASBalancedPlacement": True}},
        "v": {"featureGates": {"VectorizedResourceRequests": False}},
    }
    _scenarios(pytester, {f"{p}{i}": fields for p, fields in gate_sets.items() for i in range(6)})
    result = _on_two_workers(pytester)
    result.assert_outcomes(skipped=18)
    workers: dict[str, set[str]] = {}
    for worker, gates in re.findall(r"ran on (gw\d) gates \[([^\]]*)\]", result.stdout.str()):
        workers.setdefault(gates, set()).add(worker)
    assert len(workers["TASBalancedPlacement=True"]) == 1, workers
    assert len(workers["VectorizedResourceRequests=False"]) == 1, workers


def test_each_kueue_config_runs_on_one_worker(pytester: pytest.Pytester) -> None:
    """A kueueConfig change restarts Kueue as a gate change does: scenarios with the same
    configuration run together, on one worker."""
    fair = {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}
    _scenarios(
        pytester,
        {f"d{i}": {} for i in range(6)} | {f"f{i}": {"kueueConfig": fair} for i in range(6)},
    )
    result = _on_two_workers(pytester)
    result.assert_outcomes(skipped=12)
    workers: dict[str, set[str]] = {}
    for worker, config in re.findall(
        r"ran on (gw\d) gates \[\] config \[([^\]]*)\]", result.stdout.str()
    ):
        workers.setdefault(config, set()).add(worker)
    assert len(workers["fairSharing"]) == 1, workers


def test_every_scenario_of_another_kueue_version_runs_on_one_worker(
    pytester: pytest.Pytester,
) -> None:
    """A version change starts a new cluster, a gate or kueueConfig change restarts Kueue
    alone: the scenarios of another version run on one worker whatever their gates and
    configurations, not each as a unit of its own (which took a cluster start each)."""
    other: dict[str, Any] = {"kueue": "v0.18.2"}
    fair = {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}
    strict = {"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}
    variants: dict[str, dict[str, Any]] = {f"d{i}": {} for i in range(6)}
    variants |= {
        "o0": other,
        "o1": other,
        "o2": {**other, "kueueConfig": fair},
        "o3": {**other, "kueueConfig": strict},
        "o4": {**other, "featureGates": {"TASBalancedPlacement": True}},
    }
    _scenarios(pytester, variants)
    result = _on_two_workers(pytester)
    result.assert_outcomes(skipped=11)
    ran = re.findall(r"SKIPPED \[(\d+)\].* ran on (gw\d) .* version (v[\d.]+)", result.stdout.str())
    on_other = {worker for _, worker, version in ran if version == "v0.18.2"}
    assert sum(int(n) for n, _, version in ran if version == "v0.18.2") == 5, ran
    assert len(on_other) == 1, ran


def _own_processes(root: Path) -> list[str]:
    """Processes whose command line names the run root (every component's does: its config
    files and data live in its cluster's run dir under it)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # not a process, or gone meanwhile
            continue
        if str(root).encode() in cmdline:
            found.append(f"{entry.name} {cmdline[:120]!r}")
    return found


@pytest.mark.cluster
def test_two_workers_each_run_a_cluster_like_a_serial_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On real Kueue: -n 2 runs on two clusters (two run ids, both workers in the log), its
    results equal the serial run's, one report and one junit hold all three scenarios, and
    no process, run dir or etcd dir of either cluster is left."""
    _write_suite(pytester)
    run_root = pytester.path / "clusters"
    monkeypatch.setenv("HOME", REAL_HOME)
    monkeypatch.setenv("KTH_RUN_ROOT", str(run_root))
    shm = Path("/dev/shm")
    etcd_before = set(shm.glob("kth-etcd-*")) if shm.is_dir() else set()

    monkeypatch.setenv("KTH_ARTIFACTS", str(pytester.path / "xdist-artifacts"))
    workers = _run(pytester, "xdist", "--cluster=local", "-n", "2")
    monkeypatch.setenv("KTH_ARTIFACTS", str(pytester.path / "serial-artifacts"))
    serial = _run(pytester, "serial", "--cluster=local")

    serial.assert_outcomes(passed=2, failed=1)
    workers.assert_outcomes(passed=2, failed=1)
    ran_on = set(re.findall(r"\[(gw\d)\] .*(?:PASSED|FAILED)", workers.stdout.str()))
    assert ran_on == {"gw0", "gw1"}
    runs = sorted((pytester.path / "xdist-artifacts").glob("run-*/timings.jsonl"))
    assert len(runs) == 2, runs  # one backend, so one run id, per worker
    assert _junit(pytester.path / "xdist" / "junit.xml") == _junit(
        pytester.path / "serial" / "junit.xml"
    )
    assert sorted(_report_names(pytester.path / "xdist" / "report.html")) == sorted(SCENARIOS)
    assert _own_processes(run_root) == []
    assert list(run_root.glob("kth-local-*")) == []
    assert _etcd_dirs_left(shm, etcd_before) == []


def _etcd_dirs_left(shm: Path, before: set[Path]) -> list[str]:
    """etcd data dirs made since `before` that no live process uses and that stay: other
    clusters on this machine (pytest -n beside this test) make and remove theirs meanwhile,
    and a dir whose cluster is being stopped goes a moment after its etcd."""
    left: list[str] = []

    def settled() -> tuple[bool, str]:
        new = set(shm.glob("kth-etcd-*")) - before if shm.is_dir() else set()
        left[:] = sorted(
            str(d) for d in new if not _own_processes(Path(d.name.removeprefix("kth-etcd-")))
        )
        return not left, f"etcd dirs no process uses: {left or 'none'}"

    with contextlib.suppress(WaitTimeout):
        poll_until(settled, what="other clusters' etcd dirs to go or be in use", timeout=30)
    return left


TIMED_STAND_IN_BACKEND = """
\"\"\"A stand-in for the cluster backend (no Docker or cluster needed to test the summary): it
answers with the fit model's outcomes and phases whose steps take `x-steps` seconds.\"\"\"
import harness.plugin.hooks
from harness.fit import fit
from harness.results.observation import Observation


class Timed:
    name = "stand-in"

    def run(self, scenario):
        predicted = fit(scenario)
        steps = float(scenario.name.removeprefix("s"))
        cpu = {"kueue": 0.25, "harness": 0.25}
        return Observation(
            predicted.outcomes, predicted.steps, phases={"shape": 0.5, "steps": steps}, cpu=cpu
        )

    def close(self):
        pass


harness.plugin.hooks.create_backend = lambda cluster, **options: Timed()
"""


def test_the_slowest_scenarios_are_listed_with_their_phases(pytester: pytest.Pytester) -> None:
    """Relayed from the xdist workers: the list has the phases of each scenario, at most 10,
    with its CPU seconds and the rest of its wall time as waiting; the durations record gets
    the CPU seconds beside the wall seconds."""
    for i in range(12):
        data = yaml.safe_load((GUIDE / "guide-required-host.yaml").read_text())
        data["name"] = f"s{i}"
        path = pytester.path / "suites" / f"s{i}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    pytester.makeconftest(TIMED_STAND_IN_BACKEND)
    result = pytester.runpytest_subprocess(
        "--cluster=local",
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
        "--kth-report=",
        "--store-durations=run/d.json",
    )
    result.assert_outcomes(passed=12)
    text = result.stdout.str()
    section = text[text.index("slowest 10 scenarios on the cluster") :]
    listed = re.findall(
        r"s(\d+)\.yaml::s\d+ \(shape 0\.50, steps (\d+)\.00; cpu 0\.50s, waiting \d+\.\d+s\)",
        section,
    )
    assert [int(a) for a, _ in listed] == list(range(11, 1, -1)), section
    assert all(a == b for a, b in listed), section
    assert "s11.yaml::s11 (shape 0.50, steps 11.00; cpu 0.50s, waiting 11.00s)" in section
    cpu = json.loads((pytester.path / "run" / "d-cpu.json").read_text())
    assert cpu == {f"suites/s{i}.yaml::s{i}": 0.5 for i in range(12)}
