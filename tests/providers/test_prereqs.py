"""The kind prerequisite check against what is really on (or absent from) this machine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.providers.kind import prereqs
from harness.providers.kind.cluster import KindCluster
from harness.providers.kind.prereqs import PrerequisitesMissing, parse_version


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH with nothing on it and an empty tool cache: every tool is really absent."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("KTH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KIND_EXPERIMENTAL_PROVIDER", raising=False)
    return empty


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("kind v0.32.0 go1.26.8 linux/amd64", (0, 32, 0)),
        ("v4.3.2+g8b2d5b3", (4, 3, 2)),
        ("v1.32.4-dispatcher", (1, 32, 4)),
        ("28.2.2", (28, 2, 2)),
        ("4.9", (4, 9, 0)),
        ("Cannot connect to the Docker daemon", None),
    ],
)
def test_parse_version(text: str, version: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == version


def test_nothing_on_path_lists_everything_in_one_message(bare_path: Path) -> None:
    result = prereqs.check(env={})
    assert result.paths == {} and result.engine is None
    message = result.message()
    assert message.splitlines()[0] == "--cluster=kind cannot start: 4 prerequisite(s) missing"
    for needle in (
        "container engine: docker not found; podman not found",
        "kind: not found",
        "helm: not found",
        "kubectl: not found",
        "make tools",
    ):
        assert needle in message, needle  # fmt: skip
    with pytest.raises(PrerequisitesMissing) as err:
        result.raise_if_missing()
    assert str(err.value) == message


def test_kind_provider_stops_at_the_check_before_touching_anything(
    bare_path: Path, tmp_path: Path
) -> None:
    provider = KindCluster(run_root=tmp_path / "runs")
    with pytest.raises(PrerequisitesMissing, match="kind: not found"):
        provider.start()
    assert not (tmp_path / "runs").exists()
    provider.stop()  # idempotent, nothing to undo


def test_docker_cli_without_an_engine_is_reported(bare_path: Path) -> None:
    docker = shutil.which("docker", path="/usr/local/bin:/usr/bin:/bin")
    if docker is None:
        pytest.skip("no docker CLI on this machine")
    (bare_path / "docker").symlink_to(docker)
    result = prereqs.Prereqs()
    prereqs.check_engine(result, env={})
    if result.engine == "docker":
        pytest.skip("a Docker engine answers here")
    (problem,) = result.problems
    assert f"docker CLI at {bare_path / 'docker'} but no engine answers" in problem
    assert "Podman >= 4.0" in problem


def test_old_kubectl_is_reported_with_its_version(bare_path: Path) -> None:
    kubectl = shutil.which("kubectl", path="/usr/local/bin:/usr/bin:/bin")
    if kubectl is None:
        pytest.skip("no kubectl on this machine")
    code, out = prereqs.run([kubectl, "version", "--client", "-o", "json"])
    found = parse_version(out.split('"gitVersion"')[1]) if code == 0 else None
    if found is None or found >= prereqs.MIN_VERSIONS["kubectl"]:
        pytest.skip(f"kubectl here is not older than 1.35 ({found})")
    (bare_path / "kubectl").symlink_to(kubectl)
    result = prereqs.Prereqs()
    prereqs.check_tool("kubectl", result)
    (problem,) = result.problems
    assert problem.startswith("kubectl: need >= 1.35.0;")
    assert ".".join(map(str, found)) in problem


def test_cached_tool_is_found_when_path_has_none(bare_path: Path, tmp_path: Path) -> None:
    """A real kind build in the cache counts; skipped when none has been built."""
    real_cache = Path.home() / ".cache" / "kueue-tas-harness"
    built = real_cache / "kind-v0.32.0" / "kind"
    if not built.is_file():
        pytest.skip("kind is not built: run `make tools`")
    shutil.copytree(built.parent, tmp_path / "cache" / "kind-v0.32.0")
    result = prereqs.Prereqs()
    prereqs.check_tool("kind", result)
    assert result.problems == []
    assert result.paths["kind"] == tmp_path / "cache" / "kind-v0.32.0" / "kind"
