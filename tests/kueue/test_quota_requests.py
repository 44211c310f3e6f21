"""harness.kueue.quota_requests: a pod's requests as Kueue v0.19.2 counts them against quota.
The cases and their expected totals are upstream's (sigs.k8s.io/kueue@v0.19.2
pkg/workload/workload_test.go TestNewInfo), per pod."""

from __future__ import annotations

from fractions import Fraction

import pytest

from harness.kueue.quota_requests import declared_only, pod_set_units, quota_requests
from harness.scenario.kueue_config import QuotaResources, ResourceTransformation
from tests.quota_helpers import q, rule


def config(
    *transformations: ResourceTransformation, exclude: tuple[str, ...] = ()
) -> QuotaResources:
    return QuotaResources(exclude_prefixes=exclude, transformations=transformations)


UPSTREAM_TRANSFORMS = config(
    rule("nvidia.com/mig-1g.5gb", {"example.com/accelerator-memory": "5Ki", "example.com/credits": "10"}),
    rule("nvidia.com/mig-2g.10gb", {"example.com/accelerator-memory": "10Ki", "example.com/credits": "15"}),
    rule("nvidia.com/gpu", {"example.com/accelerator-memory": "40Ki", "example.com/credits": "100"}, replace=False),
    rule("nvidia.com/vgpucores", {"nvidia.com/total-vgpucores": "1"}, multiply_by="nvidia.com/vgpu"),
    rule("nvidia.com/vgpumem", {"nvidia.com/total-vgpumem": "1"}, multiply_by="nvidia.com/vgpu"),
)  # fmt: skip
OVERAGE = config(
    rule("nvidia.com/gpumem", {"quota.example.com/gpu-memory-overage": "1"}, multiply_by="nvidia.com/gpu"),
    rule("nvidia.com/gpu", {"quota.example.com/gpu-memory-overage": "-1024"}, replace=False),
)  # fmt: skip


@pytest.mark.parametrize(
    ("cfg", "requests", "want"),
    [
        pytest.param(  # "filterResources"
            config(exclude=("dummyPrefix", "networking.example.com/")),
            {"cpu": "10m", "memory": "512Ki", "networking.example.com/vpc1": "1"},
            {"cpu": "10m", "memory": "512Ki"},
            id="excluded-prefix",
        ),
        pytest.param(  # "transformResources" pod set a: Replace, outputs of two inputs add up
            UPSTREAM_TRANSFORMS,
            {"nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-2g.10gb": "1", "cpu": "1"},
            {"cpu": "1", "example.com/accelerator-memory": "20Ki", "example.com/credits": "35"},
            id="replace",
        ),
        pytest.param(  # pod set b: Retain keeps the input
            UPSTREAM_TRANSFORMS,
            {"nvidia.com/gpu": "1", "cpu": "2"},
            {"cpu": "2", "nvidia.com/gpu": "1", "example.com/accelerator-memory": "40Ki", "example.com/credits": "100"},
            id="retain",
        ),
        pytest.param(  # pod set c: multiplyBy
            UPSTREAM_TRANSFORMS,
            {"nvidia.com/vgpu": "2", "nvidia.com/vgpucores": "20", "nvidia.com/vgpumem": "1024"},
            {"nvidia.com/vgpu": "2", "nvidia.com/total-vgpucores": "40", "nvidia.com/total-vgpumem": "2048"},
            id="multiply-by",
        ),
        pytest.param(  # "transformAllowanceAboveIt"
            OVERAGE, {"nvidia.com/gpumem": "2048", "nvidia.com/gpu": "2"},
            {"quota.example.com/gpu-memory-overage": "2048", "nvidia.com/gpu": "2"},
            id="negative-output-is-an-allowance",
        ),
        pytest.param(  # "transformAllowanceUnderIt": a negative total counts as zero
            OVERAGE, {"nvidia.com/gpumem": "512", "nvidia.com/gpu": "2"},
            {"quota.example.com/gpu-memory-overage": "0", "nvidia.com/gpu": "2"},
            id="negative-total-floors-to-zero",
        ),
        pytest.param(  # "transformAllowanceDoesNotReachADirectRequest"
            config(rule("example.com/credit", {"example.com/gpu": "-1"})),
            {"example.com/gpu": "8", "example.com/credit": "3"},
            {"example.com/gpu": "8"},
            id="allowance-does-not-reduce-a-request",
        ),
        pytest.param(  # "transformOutputSharingANameWithARequestIsAdded"
            config(rule("example.com/credit", {"example.com/gpu": "1"})),
            {"example.com/gpu": "1", "example.com/credit": "1"},
            {"example.com/gpu": "2"},
            id="output-adds-to-a-request",
        ),
        pytest.param(  # "...WithItsRetainedInputIsAddedToTheAmountRequested": Retain keeps 1, not 2
            config(rule("example.com/gpu", {"example.com/gpu": "1"}, replace=False, multiply_by="example.com/node")),
            {"example.com/gpu": "1", "example.com/node": "2"},
            {"example.com/gpu": "3", "example.com/node": "2"},
            id="retain-keeps-the-unmultiplied-input",
        ),
        pytest.param(  # "transformMilliValues": exact decimal products
            config(rule("cpu", {"example.com/cpu-credits": "3000"}), rule("memory", {"example.com/memory-credits": "3m"})),
            {"cpu": "100m", "memory": "100M"},
            {"example.com/cpu-credits": "300", "example.com/memory-credits": "300k"},
            id="milli-values",
        ),
        pytest.param(  # exclusion comes first: an excluded input is not transformed
            config(rule("example.com/mig", {"example.com/mem": "5"}), exclude=("example.com/mig",)),
            {"example.com/mig": "2", "cpu": "1"},
            {"cpu": "1"},
            id="excluded-before-transformed",
        ),
    ],
)  # fmt: skip
def test_upstream_cases(
    cfg: QuotaResources, requests: dict[str, str], want: dict[str, str]
) -> None:
    got = quota_requests(cfg, {k: q(v) for k, v in requests.items()})
    assert dict(got) == {k: q(v) for k, v in want.items()}


def test_an_empty_section_returns_the_requests_themselves() -> None:
    requests = {"cpu": q("1")}
    assert quota_requests(QuotaResources(), requests) is requests


def test_ignore_undeclared_acts_only_with_its_gate_on() -> None:
    ignoring = QuotaResources(ignore_undeclared=True)
    assert declared_only(ignoring, gate_on=True)
    assert not declared_only(ignoring, gate_on=False)
    assert not declared_only(QuotaResources(), gate_on=True)


def test_a_transformed_product_past_int64_is_capped_not_floored_away() -> None:
    """Upstream "transformProductPastTheRangeIsNotFlooredAway" (pkg/workload/workload_test.go):
    1e10 credits x 1e10 gpu each = 1e20 gpu, held as math.MaxInt64 (SafeValue), not wrapped
    negative and floored to zero."""
    cfg = config(rule("example.com/credit", {"example.com/gpu": "10000000000"}))
    ((name, per_pod),) = quota_requests(cfg, {"example.com/credit": q("10000000000")}).items()
    assert (name, per_pod) == ("example.com/gpu", Fraction(10**20))
    assert pod_set_units(name, per_pod, 1) == 2**63 - 1


@pytest.mark.parametrize(
    ("resource", "per_pod", "count", "want"),
    [
        ("example.com/gpu", Fraction(2**62), 2, 2**63 - 1),  # SaturatingMul
        ("example.com/gpu", Fraction(2**62), 1, 2**62),
        ("cpu", Fraction(2**62), 1, 2**63 - 1),  # SafeMilliValue: 2**62 cores in millicores
        ("cpu", Fraction(3, 1000), 4, 12),
    ],
)
def test_pod_set_units_saturate_as_kueues_int64(
    resource: str, per_pod: Fraction, count: int, want: int
) -> None:
    assert pod_set_units(resource, per_pod, count) == want
