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
