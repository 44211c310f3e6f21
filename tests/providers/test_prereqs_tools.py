"""Building the kind path's CLIs from Go modules into the harness cache."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.toolchain import ToolchainError, tools


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty tool cache (KTH_CACHE) and a PATH without any of the tools."""
    monkeypatch.setenv("KTH_CACHE", str(tmp_path / "cache"))
    bare = tmp_path / "bin"
    bare.mkdir()
    go = shutil.which("go")
    if go is not None:
        (bare / "go").symlink_to(go)
    monkeypatch.setenv("PATH", str(bare))
    return tmp_path / "cache"


def test_pins_name_the_cache_directories(empty_cache: Path) -> None:
    assert tools.cached_path("kind") == empty_cache / "kind-v0.32.0" / "kind"
    assert tools.cached_path("kubectl") == empty_cache / "kubectl-v1.36.1" / "kubectl"
    assert tools.TOOLS["helm"].version.startswith("v4.")


def test_which_fails_when_a_tool_is_nowhere(
    empty_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tools.main(["which", "kind"]) == 1
    assert capsys.readouterr().out.strip() == ""


def test_unknown_tool_is_a_one_line_error(
    empty_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tools.main(["build", "kubeadm"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("build: unknown 'kubeadm'; known: binaries, sim, tools, ")
    assert err.endswith("kind, helm, kubectl, kueuectl, actionlint") and "\n" not in err


def test_build_without_go_says_how_to_get_it(empty_cache: Path) -> None:
    (empty_cache.parent / "bin" / "go").unlink(missing_ok=True)
    with pytest.raises(ToolchainError, match="Go toolchain not found on PATH: building kind"):
        tools.ensure_built("kind")


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")
def test_actionlint_builds_into_the_cache_once(empty_cache: Path) -> None:
    built = tools.ensure_built("actionlint")
    assert built == tools.cached_path("actionlint")
    version = subprocess.run([str(built), "-version"], capture_output=True, text=True, check=True)
    assert version.stdout.splitlines()[0] == tools.ACTIONLINT_VERSION
    stamp = built.stat().st_mtime_ns
    assert tools.ensure_built("actionlint") == built
    assert built.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert tools.tool_path("actionlint") == built  # found without PATH
