"""Toolchain: pins, staging derivation, atomic cache, overrides, missing Go, progress."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from harness import toolchain
from harness.toolchain import cache, gocmd, recipes
from harness.toolchain.pins import Pins

HAVE_GO = shutil.which("go") is not None


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty build cache (KTH_CACHE) for one test."""
    root = tmp_path / "cache"
    monkeypatch.setenv("KTH_CACHE", str(root))
    return root


def _executable(path: Path, body: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_staging_version_follows_kubernetes_pin() -> None:
    assert Pins(kubernetes="v1.36.1").staging == "v0.36.1"
    assert Pins(kubernetes="v1.35.4").staging == "v0.35.4"
    assert Pins(kubernetes="v1.36.1").kubernetes_minor == "36"


def test_ldflags_set_semver_version() -> None:
    flags = recipes.k8s_ldflags(Pins(kubernetes="v1.36.1"))
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.1" in flags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=36" in flags


def _rep(old: str, new: str, version: str = "") -> dict[str, dict[str, str]]:
    return {"Old": {"Path": old}, "New": {"Path": new, **({"Version": version} if version else {})}}


def test_staging_replaces_are_listed() -> None:
    reps = [
        _rep("k8s.io/api", "./staging/src/k8s.io/api"),
        _rep("k8s.io/apimachinery", "./staging/src/k8s.io/apimachinery"),
    ]
    assert recipes.staging_from_replaces(reps, "go.mod") == ["k8s.io/api", "k8s.io/apimachinery"]


def test_non_staging_replace_fails_loudly() -> None:
    reps = [
        _rep("k8s.io/api", "./staging/src/k8s.io/api"),
        _rep("github.com/onsi/ginkgo/v2", "github.com/openshift/onsi-ginkgo/v2", "v2.6.1"),
    ]
    with pytest.raises(gocmd.ToolchainError, match="onsi-ginkgo"):
        recipes.staging_from_replaces(reps, "go.mod")


def test_no_replaces_is_an_error() -> None:
    with pytest.raises(gocmd.ToolchainError, match="no staging replaces"):
        recipes.staging_from_replaces([], "go.mod")


@pytest.mark.skipif(not HAVE_GO, reason="needs the Go toolchain")
def test_real_kubernetes_go_mod_has_only_staging_replaces() -> None:
    gomod = Path(gocmd.module_info(recipes.K8S_MODULE, toolchain.PINS.kubernetes)["GoMod"])
    staging = recipes.staging_modules(gomod)
    assert "k8s.io/api" in staging and "k8s.io/client-go" in staging
    assert all(m.startswith("k8s.io/") for m in staging)


def test_failed_build_leaves_no_directory(cache_dir: Path) -> None:
    final = cache.cache_root() / "thing-v1"

    def fill(out: Path) -> None:
        (out / "half").write_text("x")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        cache.populate(final, {"v": "1"}, fill)
    assert not final.exists()
    assert [p.name for p in cache.cache_root().iterdir()] == []


def test_pin_change_makes_cache_stale(cache_dir: Path) -> None:
    final = cache.cache_root() / "thing"
    cache.populate(final, {"v": "1"}, lambda out: _executable(out / "thing") and None)
    assert cache.is_current(final, {"v": "1"}, ["thing"])
    assert not cache.is_current(final, {"v": "2"}, ["thing"])
    cache.populate(final, {"v": "2"}, lambda out: _executable(out / "thing") and None)
    assert json.loads((final / cache.STAMP).read_text())["fingerprint"] == {"v": "2"}
    assert sorted(p.name for p in cache.cache_root().iterdir()) == ["thing"]


def test_cached_binary_is_reused_without_go(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    comp = toolchain.components(toolchain.PINS)["etcd"]
    final = cache.cache_root() / comp.dirname
    cache.populate(final, comp.fingerprint(), lambda out: _executable(out / "etcd") and None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert toolchain.binary("etcd") == final / "etcd"


def test_missing_go_is_one_clear_error(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("KTH_KWOK", raising=False)
    with pytest.raises(gocmd.ToolchainError) as err:
        toolchain.binary("kwok")
    assert "Go toolchain not found" in str(err.value) and "KTH_KWOK" in str(err.value)
    assert not (cache.cache_root() / "kwok-v0.8.0").exists()


def test_env_override_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    own = _executable(tmp_path / "my-apiserver")
    monkeypatch.setenv("KTH_KUBE_APISERVER", str(own))
    assert toolchain.binary("kube-apiserver") == own


def test_env_override_must_be_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KTH_ETCD", str(tmp_path / "nope"))
    with pytest.raises(gocmd.ToolchainError, match=r"KTH_ETCD=.*not an executable"):
        toolchain.binary("etcd")


def test_every_component_has_its_own_env_var() -> None:
    table = toolchain.components(toolchain.PINS)
    assert set(table) == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "kueue",
        "jobset",
        "lws",
    }
    assert len({c.env_var for c in table.values()}) == len(table)


def test_unknown_component_lists_known_ones() -> None:
    with pytest.raises(gocmd.ToolchainError, match=r"known: .*kueue"):
        toolchain.binary("kubelet")


def test_progress_is_logged_while_go_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Progress is a log record under "kth" (pytest --log-cli-level=INFO shows it live)."""
    fake_bin = tmp_path / "bin"
    _executable(fake_bin / "go", "#!/bin/sh\nsleep 0.5\necho compiled\n")
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "build.log"
    gocmd.run_go(["build"], label="building thing", cwd=tmp_path, log=log, every_s=0.1)
    ticks = [r for r in caplog.records if r.getMessage().startswith("building thing... ")]
    assert ticks and {r.name for r in ticks} == {"kth.toolchain"}
    assert "compiled" in log.read_text()


def test_failing_go_reports_log_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_bin = tmp_path / "bin"
    _executable(fake_bin / "go", "#!/bin/sh\necho 'undefined: foo' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(gocmd.ToolchainError, match="undefined: foo"):
        gocmd.run_go(["build"], label="building thing", cwd=tmp_path, log=tmp_path / "l.log")


@pytest.mark.skipif(not HAVE_GO, reason="needs the Go toolchain")
def test_module_dirs_hold_manifests_and_stages() -> None:
    kueue = toolchain.kueue_module_dir()
    assert (kueue / "config/components/crd/bases").is_dir()
    assert (kueue / "config/components/webhook/manifests.yaml").is_file()
    assert (toolchain.kwok_module_dir() / "kustomize/stage/pod/fast/pod-ready.yaml").is_file()


def test_leftover_of_a_killed_build_is_swept(cache_dir: Path) -> None:
    final = cache.cache_root() / "thing-v1"
    stale = cache.cache_root() / ".tmp-thing-v1-abc123"
    stale.mkdir(parents=True)
    (stale / "half-linked").write_text("x")
    cache.populate(final, {"v": "1"}, lambda out: _executable(out / "thing") and None)
    assert not stale.exists()
    assert (final / "thing").is_file()


def test_sigterm_during_build_removes_temp_dir(cache_dir: Path, tmp_path: Path) -> None:
    """The CLI turns SIGTERM into an orderly exit: the go child is killed and no .tmp-*
    directory is left in the cache."""
    import signal
    import subprocess
    import sys
    import time

    fake_bin = tmp_path / "bin"
    _executable(fake_bin / "go", "#!/bin/sh\nexec sleep 300\n")
    env = {
        **os.environ,
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
        "KTH_CACHE": str(cache_dir),
    }
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.toolchain", "build", "kwok"],
        cwd=repo,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not list(cache_dir.glob(".tmp-kwok-*")):
        assert time.monotonic() < deadline, "build never started"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=20)
    assert proc.returncode == 143
    assert not list(cache_dir.glob(".tmp-*"))
    assert not (cache_dir / "kwok-v0.8.0").exists()
