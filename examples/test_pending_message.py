"""A Job that cannot fit in any one rack stays pending, and Kueue says why."""

from __future__ import annotations

from pathlib import Path

SHAPE = Path(__file__).parent / "shapes" / "gpu-racks.yaml"

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: too-wide
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  parallelism: 17
  completions: 17
  completionMode: Indexed
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: cloud.example.com/rack
    spec:
      restartPolicy: Never
      containers:
        - name: worker
          image: registry.k8s.io/pause:3.10
          resources:
            limits: {nvidia.com/gpu: 1}
"""


def test_job_wider_than_any_rack_stays_pending(tas_shape):
    shape = tas_shape(SHAPE, local_queues=["team-a"])
    job = shape.apply(JOB)

    message = job.wait_pending()  # pending, and still pending after the settle window

    # rack r2 has the most free GPUs: 16 of the 17 the Job needs
    assert 'topology "gpu-topology" allows to fit only 16 out of 17 pod(s)' in message
