"""harness.kueue.quota_requests.quota_requests_before_v0_19: a pod's quota as Kueue v0.17.1 and
v0.18.2 count it (pkg/workload/workload.go applyResourceTransformations, one map, in Go map
order). The vGPU case is upstream's (kueue@v0.18.2 pkg/workload/workload_test.go TestNewInfo,
per pod); the others follow the code's lines cited in each."""

from __future__ import annotations

from fractions import Fraction

import pytest

from harness.kueue.quota_requests import (
    BeyondInt64,
    OutputNameClash,
    quota_requests,
    quota_requests_before_v0_19,
)
from harness.scenario.kueue_config import QuotaResources, ResourceTransformation
from tests.quota_helpers import q, rule


def legacy(cfg: QuotaResources, requests: dict[str, str]) -> dict[str, Fraction]:
    return dict(quota_requests_before_v0_19(cfg, {k: q(v) for k, v in requests.items()}))


def test_upstream_vgpu_multiply_by() -> None:
    """v0.18.2 workload_test.go: vgpu 2, vgpucores 30, vgpumem 2048 -> total-vgpucores 60,
    total-vgpumem 4096 per pod (Replace drops the inputs)."""
    cfg = QuotaResources(
        transformations=(
            rule("nvidia.com/vgpucores", {"nvidia.com/total-vgpucores": "1"}, multiply_by="nvidia.com/vgpu"),
            rule("nvidia.com/vgpumem", {"nvidia.com/total-vgpumem": "1"}, multiply_by="nvidia.com/vgpu"),
        )
    )  # fmt: skip
    got = legacy(cfg, {"nvidia.com/vgpu": "2", "nvidia.com/vgpucores": "30", "nvidia.com/vgpumem": "2048"})  # fmt: skip
    assert got == {"nvidia.com/vgpu": 2, "nvidia.com/total-vgpucores": 60, "nvidia.com/total-vgpumem": 4096}  # fmt: skip


def test_retain_keeps_the_multiplied_input() -> None:
    """:530-550 inputQuantity.Mul(q.Value()), then `output[inputName] = inputQuantity`."""
    cfg = QuotaResources(transformations=(rule("g/cores", {"g/total": "1"}, False, "g/gpu"),))
    requests = {"g/gpu": "2", "g/cores": "30"}
    assert legacy(cfg, requests) == {"g/gpu": 2, "g/cores": 60, "g/total": 60}
    assert dict(quota_requests(cfg, {k: q(v) for k, v in requests.items()}))["g/cores"] == 30


def test_outputs_come_from_the_input_rounded_up() -> None:
    """:540-547 outputQuantity.Mul(inputQuantity.Value()): 500m counts as 1."""
    cfg = QuotaResources(transformations=(rule("cpu", {"x/credits": "10"}, replace=False),))
    assert legacy(cfg, {"cpu": "500m"}) == {"cpu": q("500m"), "x/credits": 10}
    half = {"cpu": q("500m")}
    assert dict(quota_requests(cfg, half))["x/credits"] == 5


def test_negative_outputs_are_not_floored_and_round_away_from_zero() -> None:
    cfg = QuotaResources(
        transformations=(
            rule("x/allowance", {"x/credits": "-1"}),
            rule("x/token", {"x/credits": "1"}),
            rule("x/half", {"cpu": "-0.0005"}),
        )
    )
    assert legacy(cfg, {"x/allowance": "3", "x/token": "1"}) == {"x/credits": -2}
    # -0.0005 cpu is -0.5 millicores: Quantity.MilliValue rounds away from zero, to -1m.
    assert legacy(cfg, {"x/half": "1"}) == {"cpu": q("-1m")}


def test_outputs_of_one_name_from_several_inputs_add_up() -> None:
    cfg = QuotaResources(
        transformations=(rule("x/a", {"x/credits": "2"}), rule("x/b", {"x/credits": "3"}))
    )
    assert legacy(cfg, {"x/a": "1", "x/b": "1"}) == {"x/credits": 5}


@pytest.mark.parametrize(
    ("transformations", "requests"),
    [
        ((rule("x/a", {"cpu": "1"}),), {"x/a": "1", "cpu": "1"}),  # an untransformed request
        ((rule("x/a", {"x/b": "1"}), rule("x/b", {"x/c": "1"}, replace=False)), {"x/a": "1", "x/b": "1"}),  # a retained input
    ],
)  # fmt: skip
def test_an_output_named_like_a_kept_request_is_map_order(
    transformations: tuple[ResourceTransformation, ...], requests: dict[str, str]
) -> None:
    """`output[inputName] = inputQuantity` overwrites an output added before it, and an
    output added after it adds to it: which comes first is Go map order."""
    with pytest.raises(OutputNameClash):
        legacy(QuotaResources(transformations=transformations), requests)


def test_an_output_named_like_a_replaced_input_is_not_a_clash() -> None:
    cfg = QuotaResources(transformations=(rule("x/a", {"x/b": "2"}), rule("x/b", {"x/c": "1"})))
    assert legacy(cfg, {"x/a": "1", "x/b": "1"}) == {"x/b": 2, "x/c": 1}


def test_a_quantity_beyond_int64_is_refused() -> None:
    cfg = QuotaResources(transformations=(rule("x/credit", {"x/gpu": "10000000000"}),))
    with pytest.raises(BeyondInt64):
        legacy(cfg, {"x/credit": "10000000000"})
