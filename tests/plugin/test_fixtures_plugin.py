"""The fixtures as a user's project sees them, end to end with pytester (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHAPE = REPO / "examples" / "shapes" / "gpu-racks.yaml"


def test_pytest_fixtures_lists_ours_with_their_docstrings(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "kueue_cluster [[]session scope[]] -- *harness/fixtures/plugin.py:*",
            "    Kueue with TAS on the --cluster cluster (local by default), one per session.",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "tas_shape -- *harness/fixtures/plugin.py:*",
            "    Factory: tas_shape(shape file or dict) shapes a fresh namespace, *",
        ]
    )
    result.stdout.fnmatch_lines(
        ["fit_model [[]session scope[]] -- *", "    The fit model (oracle): *"]
    )


def test_a_user_test_predicts_a_manifest_with_fit_model(pytester: pytest.Pytester) -> None:
    """fit_model needs no cluster: a project's test predicts its own manifest on a shape."""
    pytester.makepyfile(
        test_model=f'''
        JOB = """
        apiVersion: batch/v1
        kind: Job
        metadata: {{name: wide, labels: {{kueue.x-k8s.io/queue-name: q}}}}
        spec:
          parallelism: 17
          template:
            metadata:
              annotations: {{kueue.x-k8s.io/podset-required-topology: cloud.example.com/rack}}
            spec:
              containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
        """

        def test_too_wide(fit_model):
            outcome = fit_model.predict({str(SHAPE)!r}, JOB).outcomes["wide"]
            assert not outcome.admitted
            assert "allows to fit only 16 out of 17 pod(s)" in outcome.message
        '''
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_cluster_that_cannot_start_is_one_line(pytester: pytest.Pytester) -> None:
    """--cluster=existing without --kubeconfig: the fixture's setup error says what is
    missing, without a traceback."""
    pytester.makepyfile(test_user="def test_x(kueue_cluster):\n    pass\n")
    result = pytester.runpytest("--cluster=existing", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*kueue_cluster: --cluster=existing needs --kubeconfig PATH"])
    result.stdout.no_fnmatch_line("*Traceback*")
