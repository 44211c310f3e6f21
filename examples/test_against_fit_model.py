"""Real Kueue against the fit model on the same manifests: where the model and Kueue part
ways, the test names the workload and pod set."""

from __future__ import annotations

from pathlib import Path

SHAPE = Path(__file__).parent / "shapes" / "gpu-racks.yaml"

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  parallelism: {pods}
  completions: {pods}
  completionMode: Indexed
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-preferred-topology: kubernetes.io/hostname
    spec:
      restartPolicy: Never
      containers:
        - name: worker
          image: registry.k8s.io/pause:3.10
          resources:
            limits: {{nvidia.com/gpu: 1}}
"""


def test_kueue_places_jobs_where_the_fit_model_predicts(tas_shape, fit_model):
    shape = tas_shape(SHAPE, local_queues=["team-a"])
    first = shape.apply(JOB.format(name="first", pods=6))
    first.wait_admitted()
    second = shape.apply(JOB.format(name="second", pods=12))
    second.wait_settled()

    predicted = fit_model.predict(shape)  # the shape plus both manifests, in order

    assert second.outcome() == predicted.outcomes["second"]
    assert fit_model.differences(shape) == []
