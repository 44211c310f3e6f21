"""`kueue:` and `expectByVersion` of a scenario file: which Kueue versions its expectations
hold for, the version it runs on, and its expectations per version
(docs/scenario-extensions.md, "Kueue versions")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import combinations

from harness.kueue.versions import (
    DEFAULT_KUEUE,
    KUEUE_VERSIONS,
    KueueVersions,
    VersionSpecError,
    newest,
    parse_versions,
    version_key,
)
from harness.scenario.keypath import KeyPath, kind
from harness.scenario.model import ByVersion, Expectation


def _parsed(at: KeyPath, value: object) -> KueueVersions:
    if not isinstance(value, (str, list)):
        at.fail(
            f"must be a version (v0.19.2), a range ('>=v0.18.2') or a list of them, "
            f"got {kind(value)}"
        )
    for index, item in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(item, str):
            at.fail(f"item {index} must be a version or a range, got {kind(item)}")
    try:
        return parse_versions(value)
    except VersionSpecError as err:
        at.fail(str(err))


def kueue(at: KeyPath) -> tuple[str, KueueVersions]:
    """The version the file runs on and the versions it names. One version: that one (any
    well-formed version; the fit model refuses one it does not model). A list or a range:
    the default when it includes it, else the newest version the harness runs that it
    includes; one that includes none of those is refused."""
    spec = _parsed(at, at.value)
    if spec.exact is not None:
        return spec.exact, spec
    included = [v for v in KUEUE_VERSIONS if spec.includes(v)]
    if not included:
        at.fail(
            f"{spec} includes none of the Kueue versions the harness runs "
            f"({', '.join(KUEUE_VERSIONS)})"
        )
    runs_on = DEFAULT_KUEUE if DEFAULT_KUEUE in included else newest(included)
    assert runs_on is not None
    return runs_on, spec


def upgrade(at: KeyPath, running: str) -> str:
    """The version of an `upgrade-kueue` step: one the harness runs, newer than the version
    running at that step (Kueue supports no downgrade)."""
    version = at.string()
    if version not in KUEUE_VERSIONS:
        at.fail(
            f"{version!r} is not a Kueue version the harness runs ({', '.join(KUEUE_VERSIONS)})"
        )
    if version_key(version) <= version_key(running):
        at.fail(
            f"{version} is not newer than {running}, the version running at this step "
            "(Kueue supports upgrades only; name the version the scenario starts on in kueue:)"
        )
    return version


def by_version(
    at: KeyPath,
    base: Mapping[str, Expectation] | None,
    declared: KueueVersions | None,
    read: Callable[[KeyPath], Mapping[str, Expectation]],
) -> ByVersion:
    """`expectByVersion`: version or range -> expectations in `expect`'s form. Refused: a
    malformed key, a key outside the file's `kueue:`, two keys that share a version."""
    if not isinstance(at.value, dict) or not at.value:
        at.fail(
            "must be a non-empty mapping of a Kueue version or range to expectations "
            f"(as in expect), got {kind(at.value)}"
        )
    candidates = set(KUEUE_VERSIONS) | set(declared.named() if declared else ())
    entries: list[tuple[KueueVersions, Mapping[str, Expectation], KeyPath]] = []
    for key, value in at.value.items():
        sub = at.child(str(key), value)
        if not isinstance(key, str):
            sub.fail(f"keys must be a version or a range in quotes, got {kind(key)}")
        spec = _parsed(sub, key)
        for named in spec.named():  # a bound and the next patch: '<v0.18.5' vs '>v0.18.3'
            major, minor, patch = version_key(named)
            candidates |= {named, f"v{major}.{minor}.{patch + 1}"}
        entries.append((spec, read(sub), sub))
    for spec, _, sub in entries:
        if declared is not None and not any(
            declared.includes(v) for v in candidates if spec.includes(v)
        ):
            sub.fail(f"includes none of the versions the file's kueue: names ({declared})")
    for (first, _, _), (second, _, sub) in combinations(entries, 2):
        shared = sorted(
            (v for v in candidates if first.includes(v) and second.includes(v)), key=version_key
        )
        if shared:
            sub.fail(f"{shared[0]} is also in {str(first)!r}; give each version at most one entry")
    return ByVersion(base, tuple((spec, entry) for spec, entry, _ in entries))


def undetermined(
    at: KeyPath, declared: KueueVersions | None, runs_on: str | None, by: ByVersion | None
) -> tuple[tuple[KueueVersions, str], ...]:
    """`undeterminedOn`: version or range -> why Kueue gives no single answer there (Go map
    order, pod creation order). Refused: a key including the version the file runs on (a file
    checks something where it runs), outside the file's `kueue:`, shared with another key or
    with an `expectByVersion` entry, and a reason that is not a non-empty string."""
    if not isinstance(at.value, dict) or not at.value:
        at.fail(
            "must be a non-empty mapping of a Kueue version or range to the reason Kueue gives "
            f"no single answer there, got {kind(at.value)}"
        )
    running = runs_on or DEFAULT_KUEUE
    entries: list[tuple[KueueVersions, str, KeyPath]] = []
    for key, value in at.value.items():
        sub = at.child(str(key), value)
        if not isinstance(key, str):
            sub.fail(f"keys must be a version or a range in quotes, got {kind(key)}")
        spec = _parsed(sub, key)
        if not isinstance(value, str) or not value.strip():
            sub.fail(f"must say why Kueue gives no single answer there, got {kind(value)}")
        if spec.includes(running):
            sub.fail(
                f"includes {running}, the version the file runs on: a file must hold "
                "expectations for the version it runs on"
            )
        included = [v for v in KUEUE_VERSIONS if spec.includes(v)]
        if declared is not None and not any(declared.includes(v) for v in included):
            sub.fail(f"includes none of the versions the file's kueue: names ({declared})")
        for other, _, _ in entries:
            shared = [v for v in KUEUE_VERSIONS if spec.includes(v) and other.includes(v)]
            if shared:
                sub.fail(f"{shared[0]} is also in {str(other)!r}; give each version one entry")
        for expected, _ in by.entries if by is not None else ():
            shared = [v for v in KUEUE_VERSIONS if spec.includes(v) and expected.includes(v)]
            if shared:
                sub.fail(f"{shared[0]} also has expectations under expectByVersion {expected}")
        entries.append((spec, value.strip(), sub))
    return tuple((spec, reason) for spec, reason, _ in entries)
