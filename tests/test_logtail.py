"""Log tails in one place (harness/logtail.py): every failure report quotes its log alike."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.logtail import lines_about, quoted_tail, tail
from harness.providers.base import ClusterError, ProviderBase
from harness.providers.existing.cluster import ExistingCluster
from harness.providers.kind.cluster import KindCluster
from harness.providers.local.cluster import LocalCluster
from harness.providers.process import Process


def test_tail_is_the_last_lines_and_empty_for_a_missing_file(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert tail(log, 3) == "line 97\nline 98\nline 99"
    assert tail(log, 0) == ""
    assert tail(tmp_path / "missing.log") == ""
    assert quoted_tail(log, 1) == f"last lines of {log}:\nline 99"


def test_tail_read_from_the_end_is_the_whole_files_tail(tmp_path: Path) -> None:
    """Read block by block from the end: across block boundaries, with multi-byte characters
    cut by a block, with and without a last newline, the same lines as the whole file's."""
    from harness.logtail import TAIL_BLOCK, last_lines

    lines = [f"{i} {'é' * (i % 7)}{'x' * (i * 37 % 900)}" for i in range(700)]
    for ending in ("\n", ""):
        log = tmp_path / "kueue.log"
        log.write_text("\n".join(lines) + ending, encoding="utf-8")
        assert log.stat().st_size > 3 * TAIL_BLOCK
        text = log.read_text(encoding="utf-8")
        for n in (1, 2, 50, 150, 500, 699, 700, 5000):
            assert tail(log, n) == last_lines(text, n), n


def test_lines_about_names_or_everything() -> None:
    text = "a wl-1 admitted\nb other\nc wl-2 pending"
    assert lines_about(text, ["wl-1", "wl-2"]) == "a wl-1 admitted\nc wl-2 pending"
    assert lines_about(text, ["nothing"]) == text
    assert lines_about(text, [""]) == text


def test_every_provider_has_the_one_log_tail() -> None:
    for provider in (LocalCluster, KindCluster, ExistingCluster):
        assert provider.log_tail is ProviderBase.log_tail


def test_log_tail_names_the_known_components(tmp_path: Path) -> None:
    class Logs(ProviderBase):
        def logs(self) -> dict[str, Path]:
            return {"kueue": tmp_path / "kueue.log", "kwok": tmp_path / "kwok.log"}

    (tmp_path / "kueue.log").write_text("one\ntwo\n")
    assert Logs().log_tail("kueue", 1) == "two"
    with pytest.raises(ClusterError, match="no component 'etcd'; known: kueue, kwok"):
        Logs().log_tail("etcd")


def test_a_crash_quotes_the_tail_the_same_way(tmp_path: Path) -> None:
    log = tmp_path / "crash.log"
    proc = Process("crasher", [sys.executable, "-c", "print('boom'); raise SystemExit(3)"],
                   log, {}, tmp_path)  # fmt: skip
    proc.start()
    assert proc.popen is not None
    proc.popen.wait(30)
    with pytest.raises(ClusterError) as err:
        proc.check()
    assert str(err.value) == f"crasher exited with code 3; {quoted_tail(log)}"
    assert "boom" in str(err.value)


def _entry(msg: str, reconciled: str = "", level: str = "Level(-2)", **more: object) -> str:
    import json

    entry: dict[str, object] = {"level": level, "ts": "2026-05-09T07:33:22.123456789Z",
                                "caller": "x/y.go:1", "msg": msg, **more}  # fmt: skip
    if reconciled:  # controller-runtime's fields on a reconcile line
        entry.update({"controller": more.get("controller", "workload"), "controllerGroup": "kueue.x-k8s.io",
                      "controllerKind": "Workload", "Workload": {"name": reconciled, "namespace": "ns1"},
                      "namespace": "ns1", "name": reconciled, "reconcileID": "0f3a"})  # fmt: skip
    return json.dumps(entry)


KUEUE_LOG = "\n".join(
    [_entry("Skip Workload", "job-train-1a2b3", controller="multikueue_workload", isDeleted=False)]
    * 12
    + [_entry("Reconcile Workload", "job-other-9z8y7")] * 4
    + [
        _entry("Reconcile Workload", "job-train-1a2b3"),
        _entry(
            "couldn't assign flavors",
            level="info",
            workload={"name": "job-train-1a2b3", "namespace": "ns1"},
            clusterQueue={"name": "team-a"},
            podset="main",
        ),
        _entry(
            "Failed to admit",
            level="error",
            workload={"name": "job-train-1a2b3", "namespace": "ns1"},
            error="the object has been modified",
        ),
        "I0509 07:33:22 plain text about job-train-1a2b3",
    ]
)


def test_kueue_log_lines_about_a_workload_are_few_and_readable() -> None:
    """Issue 32 item 9: the failing workload's lines, formatted (time, level, message, key
    fields), without MultiKueue's `Skip Workload` for every Workload or other workloads'."""
    from harness.logtail import log_lines_about

    assert log_lines_about(KUEUE_LOG, ["job-train-1a2b3"]) == [
        "07:33:22.123 V2    Reconcile Workload workload=ns1/job-train-1a2b3",
        "07:33:22.123 info  couldn't assign flavors workload=ns1/job-train-1a2b3 "
        "clusterQueue=team-a podset=main",
        "07:33:22.123 error Failed to admit workload=ns1/job-train-1a2b3 "
        "error=the object has been modified",
        "I0509 07:33:22 plain text about job-train-1a2b3",
    ]
    assert log_lines_about(KUEUE_LOG, ["job-train-1a2b3"], limit=1) == [
        "I0509 07:33:22 plain text about job-train-1a2b3"
    ]
    assert log_lines_about(KUEUE_LOG, ["nobody"]) == []


def test_the_evidence_section_quotes_the_formatted_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.runner import backend as backend_module
    from harness.runner.backend import ClusterBackend
    from harness.runner.objects import Names

    class Logs(ProviderBase):
        def log_tail(self, component: str = "kueue", lines: int = 50) -> str:
            return KUEUE_LOG

    monkeypatch.setattr(backend_module.evidence, "workload_details", lambda *a: "workload train:")
    backend = ClusterBackend("local")
    backend.provider = Logs()  # type: ignore[assignment]
    text = backend.evidence(None, Names("r", "ns1"), {"train": "job-train-1a2b3"})  # type: ignore[arg-type]
    assert "Skip Workload" not in text and "job-other" not in text and '{"level"' not in text
    assert "  07:33:22.123 error Failed to admit workload=ns1/job-train-1a2b3" in text
