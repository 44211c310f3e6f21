"""Kueue's label and annotation keys: a misspelt one is a warning naming the closest known key
(Kueue itself ignores it silently, issue 32 item 2); every key Kueue v0.19.2 knows passes."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import did_you_mean
from harness.kueue.key_check import unknown_kueue_keys
from harness.kueue.keys import KNOWN

TYPO = "kueue.x-k8s.io/podset-requierd-topology"


def job(pod_annotations: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "t", "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})}},
        "spec": {"template": {"metadata": {"annotations": pod_annotations},
                              "spec": {"containers": [{"name": "c"}]}}},
    }  # fmt: skip


def test_a_misspelt_annotation_names_the_closest_key() -> None:
    (found,) = unknown_kueue_keys(job({TYPO: "example.com/rack"}))
    assert found.path == f"spec.template.metadata.annotations.{TYPO}"
    assert found.closest == "kueue.x-k8s.io/podset-required-topology"
    assert found.text() == (
        f"spec.template.metadata.annotations.{TYPO}: not a Kueue key, Kueue ignores it; "
        "did you mean 'kueue.x-k8s.io/podset-required-topology'?"
    )


def test_a_misspelt_label_is_found_too() -> None:
    (found,) = unknown_kueue_keys(job({}, {"kueue.x-k8s.io/queue-nme": "lq"}))
    assert found.path == "metadata.labels.kueue.x-k8s.io/queue-nme"
    assert found.closest == "kueue.x-k8s.io/queue-name"


@pytest.mark.parametrize(
    "key",
    [
        "kueue.x-k8s.io/queue-name",
        "kueue.x-k8s.io/priority-class",
        "kueue.x-k8s.io/pod-group-name",
        "kueue.x-k8s.io/pod-group-total-count",
        "kueue.x-k8s.io/podset-slice-size",
        "kueue.x-k8s.io/max-exec-time-seconds",
        "kueue.x-k8s.io/prebuilt-workload-name",
        "kueue.x-k8s.io/safe-to-forcefully-delete",
        "kueue.x-k8s.io/workload-allowed-resource-flavors",
    ],
)
def test_keys_kueue_knows_pass(key: str) -> None:
    assert key in KNOWN
    assert unknown_kueue_keys(job({key: "x"}, {key: "x"})) == []


def test_other_prefixes_are_not_kueues() -> None:
    assert (
        unknown_kueue_keys(job({"example.com/kueue-x": "1", "provreq.kueue.x-k8s.io/a": "b"})) == []
    )


def test_did_you_mean_is_empty_without_a_close_one() -> None:
    assert did_you_mean("topolgy", ["name", "topology", "nodes"]) == "did you mean 'topology'?"
    assert did_you_mean("ghost", ["w"]) == ""
