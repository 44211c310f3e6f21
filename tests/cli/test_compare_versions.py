"""`python -m harness compare-versions`: on the fit model, what changes between two Kueue
versions per scenario, the exit codes (0 nothing changed, 1 something did, 2 bad input), and
what an engine cannot answer listed apart."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli.compare_versions import changes
from harness.cli.main import main
from harness.results.outcome import Outcome

SUITES = Path(__file__).resolve().parents[2] / "suites"
FREED = SUITES / "guide" / "guide-required-host-waits-for-freed-node.yaml"
HOST = SUITES / "guide" / "guide-required-host.yaml"
# Balanced placement with tied racks: v0.18's Go map order decides (kueue#12052).
BALANCED = SUITES / "kueue-findings" / "findings-rack-leaf-selector-names-other-rack-balanced.yaml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["compare-versions", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_changed_outcome_is_printed_with_both_versions_and_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """kueue#13772: v0.18.2 leaves the job pending after its usage is deleted."""
    code, out, _ = run(capsys, "--from", "v0.18.2", "--to", "v0.19.2", str(FREED), str(HOST))
    assert code == 1
    message = (
        'couldn\'t assign flavors to pod set main: topology "guide-topology" allows to fit '
        "only 2 out of 4 pod(s)"
    )
    assert out.splitlines() == [
        "Kueue v0.18.2 -> v0.19.2 (fit):",
        f"guide-required-host-waits-for-freed-node ({FREED}):",
        "  after step 1 (delete-usage node-3-busy): train: pending -> admitted",
        f"      v0.18.2  pending: {message}",
        "      v0.19.2  admitted at main: gpu-node-3=4",
        "2 scenarios: 1 changed, 1 unchanged, 0 not compared",
    ]


def test_nothing_changed_is_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from", "v0.17.1", "--to", "v0.19.2", str(HOST))
    assert code == 0
    assert out.splitlines()[-1] == "1 scenarios: 0 changed, 1 unchanged, 0 not compared"


def test_what_the_engine_cannot_answer_is_listed_not_counted_as_a_change(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The engine's own refusal (the fit model's Nondeterministic), not the file's
    undeterminedOn: the copy drops that key so the engine has to find the tie itself."""
    document = yaml.safe_load(BALANCED.read_text())
    del document["undeterminedOn"]
    copy = tmp_path / BALANCED.name
    copy.write_text(yaml.safe_dump(document))
    code, out, _ = run(capsys, "--from", "v0.18.2", "--to", "v0.19.2", str(copy))
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "not compared:"
    assert lines[2].endswith("v0.18.2: balanced placement of pod set main depends on the Go map "
                             "order Kueue walks tied domains in before v0.19 (kueue#12052): main "
                             "on b1/r1=1, b1/r2=2 or main on b1/r1=1, b1/r3=2")  # fmt: skip
    assert lines[3] == "1 scenarios: 0 changed, 0 unchanged, 1 not compared"


def test_a_version_without_one_answer_is_not_compared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The file's undeterminedOn (kueue#14232: domains depend on Go map order before v0.19.1)
    is said as the reason, whatever an engine would answer there."""
    named = SUITES / "node-state" / "node-state-rack-named-like-node.yaml"
    code, out, _ = run(capsys, "--from", "v0.18.2", "--to", "v0.19.2", str(named))
    assert code == 0
    lines = out.splitlines()
    assert lines[1:3] == [
        "not compared:",
        "  node-state-rack-named-like-node: v0.18.2: Kueue v0.18.2 gives no single answer "
        "here: kueue#14232, fixed in v0.19.1: which topology domains exist depends on Go map "
        "order (undeterminedOn)",
    ]


def test_placements_flavors_and_messages_are_compared() -> None:
    """Both admitted (or both pending), what differs is still a change."""
    a = Outcome(admitted=True, placement={"main": {"n1": 4}}, flavors={"main": "gpu-a"})
    b = Outcome(admitted=True, placement={"main": {"n2": 4}}, flavors={"main": "gpu-b"})
    assert changes({"w": a}, {"w": b}, ("vA", "vB")) == [
        "w: placement\n  vA  main: n1=4\n  vB  main: n2=4",
        "w: flavors\n  vA  main=gpu-a\n  vB  main=gpu-b",
    ]
    pending = Outcome(admitted=False, message="x")
    assert changes({"w": pending}, {"w": Outcome(admitted=False, message="y")}, ("a", "b")) == [
        "w: message\n  a  x\n  b  y"
    ]
    rejected = Outcome(admitted=False, message="bad", rejected=True)
    assert changes({"w": pending}, {"w": rejected, "v": pending}, ("a", "b")) == [
        "w: pending -> rejected\n  a  pending: x\n  b  rejected: bad",
        "v: (not there) -> pending\n  a  (not there)\n  b  pending: x",
    ]
    assert changes({"w": a}, {"w": a}, ("a", "b")) == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--from", "v0.16.0", "--to", "v0.19.2"], "--from v0.16.0: --engine fit runs Kueue v0.17.1, v0.18.2, v0.19.2"),
        (["--from", "v0.18.2", "--to", "0.19"], "--to: '0.19' is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2"),
        (["--from", "v0.19.2", "--to", "v0.19.2"], "--from and --to are both v0.19.2: nothing to compare"),
        (["--from", "v0.18.2", "--to", "v0.19.2", "--engine", "local", "--from", "v0.14.0"], "--from v0.14.0: --engine local runs Kueue v0.17.1, v0.18.2, v0.19.2"),
    ],
)  # fmt: skip
def test_bad_versions_are_exit_2_in_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], error: str
) -> None:
    code, out, err = run(capsys, *args, str(HOST))
    assert (code, out, err) == (2, "", error + "\n")


def test_no_files_or_a_bad_file_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--from", "v0.18.2", "--to", "v0.19.2", str(tmp_path))
    assert (code, err) == (2, f"{tmp_path}: no scenario files found\n")
    bad = tmp_path / "bad.yaml"
    data = yaml.safe_load(HOST.read_text())
    data["kueue"] = "v0.19"
    bad.write_text(yaml.safe_dump(data))
    code, _, err = run(capsys, "--from", "v0.18.2", "--to", "v0.19.2", str(bad))
    assert code == 2
    assert (
        err
        == f"{bad}: kueue: 'v0.19' is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2\n"
    )


def test_a_snapshot_of_a_live_cluster_is_compared_like_a_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The upgrade check on `harness snapshot`'s file: a second pending Workload shaped like
    the first is evaluated on its own by v0.17.1 (SchedulingEquivalenceHashing off) and gets
    its message; v0.18.2 parks it with the first, unevaluated, so it has none."""
    from tests.live.test_live_snapshot import render, snapshot, state, workload

    cluster = state()
    twin = workload("job-twin-9", "next-twin", "2024-01-02T00:00:01Z", count=6, priority=1000,
                    ref={"kind": "WorkloadPriorityClass", "name": "high"})  # fmt: skip
    cluster.workloads.append(twin)
    path = tmp_path / "snapshot.yaml"
    path.write_text(render(snapshot(cluster, "prod-now")))
    code, out, _ = run(capsys, "--from", "v0.17.1", "--to", "v0.18.2", str(path))
    assert code == 1, out
    assert "  next-twin: message\n" in out
    assert (
        'v0.17.1  couldn\'t assign flavors to pod set main: topology "gpu-topology" allows' in out
    )
    assert "v0.18.2  (none)" in out
    assert "1 scenarios: 1 changed, 0 unchanged, 0 not compared" in out
    code, out, _ = run(capsys, "--from", "v0.18.2", "--to", "v0.19.2", str(path))
    assert code == 0, out
