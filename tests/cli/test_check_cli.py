"""`python -m harness check` and `--write-expect`, run as a user runs them (a subprocess).

The diff must be the one pytest prints; written expectations must reload and pass; the rest
of a file (comments, anchors, flow style, key order) must survive the write.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli.expect_writer import expectation_data
from harness.fit import fit
from harness.scenario.discover import why_not_a_scenario
from harness.scenario.loader import load_scenario

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "suites" / "guide"
SUITE_FILES = [
    p for p in sorted((REPO / "suites").rglob("*.yaml")) if why_not_a_scenario(p) is None
]  # stream scenarios (suites/streams) are replayed, not checked


def check(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "check", *map(str, args)],
        capture_output=True, text=True, timeout=600, check=False,  # a hang guard only
    )  # fmt: skip


def _copy(tmp_path: Path, source: str, **changes: object) -> Path:
    data = yaml.safe_load((GUIDE / f"{source}.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / f"{source}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


WRONG = {"train": {"admitted": True, "placement": {"main": {"gpu-node-1": 4}}}}


def test_agreeing_files_exit_0(tmp_path: Path) -> None:
    done = check(GUIDE / "guide-required-host.yaml", GUIDE / "guide-preferred-host.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("the fit model agrees with the file's expect") == 2


def test_a_wrong_expect_exits_1_with_the_diff_pytest_prints(
    tmp_path: Path, pytester: pytest.Pytester
) -> None:
    path = _copy(tmp_path, "guide-required-host", expect=WRONG)
    done = check(path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"scenario guide-required-host: the fit model disagrees with the file's expect ({path})",
        "  train/main: expected gpu-node-1=4, got gpu-node-3=4",
    ]
    in_pytest = pytester.runpytest("-p", "no:cacheprovider", str(path))
    for line in done.stdout.splitlines():
        in_pytest.stdout.fnmatch_lines([line])


def test_bad_input_exits_2_in_one_line_and_the_other_files_are_still_checked(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: b\ntopology: {name: t, levels: []}\nnodes: []\nworkloads: []\n")
    wrong = _copy(tmp_path, "guide-required-host", expect=WRONG)
    done = check(broken, wrong, tmp_path / "missing.yaml")
    assert done.returncode == 2
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"{broken}: topology.levels: ")
    assert errors[1].startswith(f"{tmp_path / 'missing.yaml'}: ")
    assert "train/main: expected gpu-node-1=4" in done.stdout


def test_a_file_without_expect_is_not_a_pass(tmp_path: Path) -> None:
    path = _copy(tmp_path, "guide-required-host", expect=None)
    done = check(path)
    assert done.returncode == 1
    assert f"{path}: no expect to check: " in done.stdout


def test_write_expect_fills_top_level_and_steps_and_keeps_the_rest(tmp_path: Path) -> None:
    source = (GUIDE / "guide-required-host-waits-for-freed-node.yaml").read_text()
    head = source[: source.index("expect:")]
    original = (
        "# my notes stay\n"
        + head
        + "# comment between workloads and steps\n"
        + "steps:\n"
        + "  - delete-usage: node-3-busy   # frees gpu-node-3\n"
        + "  - {cordon: gpu-node-1}\n"
    )
    path = tmp_path / "waits.yaml"
    path.write_text(original)
    done = check("--write-expect", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{path}: wrote expect, steps[0].expect, steps[1].expect from the fit model" in (
        done.stdout
    )
    written = path.read_text()
    assert written.startswith("# my notes stay\n" + head + "expect:\n  train:\n")
    assert "allocatable: &gpu-host {nvidia.com/gpu: 4" in written
    assert "  - delete-usage: node-3-busy   # frees gpu-node-3\n    expect:\n      train:\n" in (
        written
    )
    assert (
        "  - {cordon: gpu-node-1, expect: {train: {admitted: true, "
        "placement: {main: {gpu-node-3: 4}}}}}\n" in written
    )
    scenario = load_scenario(path)
    assert scenario.expect is not None and scenario.expect["train"].admitted is False
    assert check(path).returncode == 0
    again = check("--write-expect", path)
    assert again.returncode == 0 and "wrote" not in again.stdout
    assert path.read_text() == written


@pytest.mark.parametrize("empty", ["expect:\n", "expect: {}\n", "expect: null\n"])
def test_write_expect_replaces_an_empty_expect(tmp_path: Path, empty: str) -> None:
    text = (GUIDE / "guide-required-host.yaml").read_text()
    path = tmp_path / "g.yaml"
    path.write_text(text[: text.index("expect:")] + empty + "# trailing comment\n")
    assert check("--write-expect", path).returncode == 0
    assert path.read_text().endswith(
        "expect:\n  train:\n    admitted: true\n    placement:\n      main: {gpu-node-3: 4}\n"
        "# trailing comment\n"
    )


def test_write_expect_in_a_flow_style_file(tmp_path: Path) -> None:
    data = yaml.safe_load((GUIDE / "guide-required-host.yaml").read_text())
    del data["expect"]
    path = tmp_path / "flow.yaml"
    path.write_text(yaml.safe_dump(data, default_flow_style=True, width=10_000))
    assert check("--write-expect", path).returncode == 0
    assert load_scenario(path).expect is not None


def test_written_expectations_state_the_fit_models_outcomes_for_every_suite(
    tmp_path: Path,
) -> None:
    """Every suite scenario stripped of its expectations gets them back from --write-expect,
    and they pass `check`; what is written is exactly the fit model's outcomes."""
    # suites/faults: --write-expect states no fault expectations (replaced, evicted, drift).
    modelled = [p for p in SUITE_FILES if not load_scenario(p).fault_features()]
    for source in modelled:
        data = yaml.safe_load(source.read_text())
        data.pop("expect", None)
        for step in data.get("steps") or []:
            step.pop("expect", None)
        path = tmp_path / source.name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    done = check("--write-expect", tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    for source in modelled:
        written = yaml.safe_load((tmp_path / source.name).read_text())
        scenario = load_scenario(source)
        predicted = fit(scenario)
        flavors = len(scenario.resource_flavors) > 1  # a world's one flavor goes unsaid
        want = expectation_data(predicted.outcomes, flavors) or None
        assert written.get("expect") == want, source
        for step, after in zip(written.get("steps") or [], predicted.steps, strict=True):
            assert step.get("expect") == (expectation_data(after, flavors) or None), source


def test_write_expect_adds_the_workloads_an_expect_leaves_out_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """A wrong expectation stays wrong (the file states what Kueue does; only a person may
    change it); a workload without one gets the fit model's, in block and in flow style."""
    text = (GUIDE / "guide-required-host-waits-for-freed-node.yaml").read_text()
    text = text.replace("  - name: train\n", "  - name: other\n    podSets:\n"
                        "      - {name: main, count: 1, requests: {nvidia.com/gpu: 1}}\n"
                        "  - name: train\n")  # fmt: skip
    text = text.replace("    expect:\n      train:\n        admitted: true\n        placement:\n"
                        "          main: {gpu-node-3: 4}\n",
                        "    expect: {train: {admitted: true, placement: {main: {gpu-node-1: 4}}}}\n")  # fmt: skip
    path = tmp_path / "partial.yaml"
    path.write_text(text)
    done = check("--write-expect", path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        f"{path}: wrote expect.other, steps[0].expect.other from the fit model"
    )
    assert "after step 1 (delete-usage): train/main: expected gpu-node-1=4, got gpu-node-3=4" in (
        done.stdout
    )
    written = path.read_text()
    assert (
        "    message: 'couldn''t assign flavors to pod set main: topology \"guide-topology\" allows to fit only 2 out of 4 pod(s)'\n  other:\n    admitted: true\n    placement:\n      main: {gpu-node-1: 1}\nsteps:\n"
        in written
    )
    assert (
        "    expect: {train: {admitted: true, placement: {main: {gpu-node-1: 4}}}, other: {admitted: true, placement: {main: {gpu-node-1: 1}}}}\n"
        in written
    )
