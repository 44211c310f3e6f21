"""Who says where the workloads go: the file's `expect`, a backend (real Kueue or the sim)
and the fit model, each as outcomes after the submissions and after every step, and where
they disagree (the nodes and workloads a map highlights)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.fit import FitResult
from harness.results.observation import Observation
from harness.results.outcome import Outcome
from harness.scenario.model import Expectation, Scenario

State = Mapping[str, Outcome]


@dataclass(frozen=True)
class Source:
    """`states[i]`: outcomes after the submissions (0) or after step i; None where the source
    says nothing (a step without `expect`). `unstated[i]`: workloads admitted there whose
    placement the source leaves open. `verdicts[i]`: the fit model's explain line per
    workload (empty for other sources)."""

    label: str
    states: tuple[State | None, ...]
    unstated: tuple[frozenset[str], ...] = ()
    verdicts: tuple[Mapping[str, str], ...] = ()

    def state(self, index: int) -> State | None:
        return self.states[index] if index < len(self.states) else None

    def open_placements(self, index: int) -> frozenset[str]:
        return self.unstated[index] if index < len(self.unstated) else frozenset()


def expected_source(scenario: Scenario) -> Source | None:
    """The file's `expect` and each step's `expect`; None when the file expects nothing."""
    expects: list[Mapping[str, Expectation] | None] = [scenario.expect]
    expects += [step.expect for step in scenario.steps]
    if not any(expects):
        return None
    states = tuple(_from_expect(e) if e else None for e in expects)
    unstated = tuple(
        frozenset(n for n, e in (want or {}).items() if e.admitted and e.placement is None)
        for want in expects
    )
    return Source("expected", states, unstated)


def _from_expect(expect: Mapping[str, Expectation]) -> dict[str, Outcome]:
    return {
        name: Outcome(
            admitted=want.admitted,
            placement=want.placement or {},
            message=want.message or "",
            rejected=bool(want.rejected),
            flavors=want.flavors or {},
            preempted=bool(want.preempted),
        )
        for name, want in expect.items()
    }


def fit_source(
    result: FitResult, verdicts: Sequence[Mapping[str, str]] = (), label: str = "fit model"
) -> Source:
    return Source(label, (result.outcomes, *result.steps), verdicts=tuple(verdicts))


def observed_source(label: str, observation: Observation) -> Source:
    return Source(label, (observation.outcomes, *observation.steps))


@dataclass(frozen=True)
class Disagreement:
    """Where the shown sources differ at one state: placement keys (node or domain names)
    and workload names."""

    domains: frozenset[str] = frozenset()
    workloads: frozenset[str] = frozenset()


def disagreement(sources: Sequence[Source], index: int) -> Disagreement:
    """Differences between the sources that speak at state `index`, over the workloads all
    of them state (a workload the file's `expect` leaves out is not compared)."""
    states = [(s.state(index), s.open_placements(index)) for s in sources]
    present = [(st, open_) for st, open_ in states if st is not None]
    if len(present) < 2:
        return Disagreement()
    names = set.intersection(*(set(st) for st, _ in present))
    domains: set[str] = set()
    workloads: set[str] = set()
    for name in sorted(names):
        outcomes = [(st[name], open_) for st, open_ in present]
        if len({(o.admitted, o.rejected) for o, _ in outcomes}) > 1:
            workloads.add(name)
        spreads = [_spread(o) for o, open_ in outcomes if not (o.admitted and name in open_)]
        for domain in set().union(*spreads):
            if len({spread.get(domain, 0) for spread in spreads}) > 1:
                domains.add(domain)
                workloads.add(name)
    return Disagreement(frozenset(domains), frozenset(workloads))


def _spread(outcome: Outcome) -> dict[str, int]:
    """Pods per placement key, over all pod sets (none when not admitted)."""
    total: dict[str, int] = {}
    if not outcome.admitted:
        return total
    for per_domain in outcome.placement.values():
        for domain, pods in per_domain.items():
            total[domain] = total.get(domain, 0) + pods
    return total
