"""A JobSet with a leader and a group of workers that must share one rack.

The leader and worker replicated Jobs carry the same `kueue.x-k8s.io/podset-group-name`, so
Kueue's TAS places them as one request: rack r1 has 12 free GPUs, enough for the 8 workers,
and the leader goes beside them.
"""

from __future__ import annotations

from pathlib import Path

SHAPE = Path(__file__).parent / "shapes" / "gpu-racks.yaml"
RACK = "cloud.example.com/rack"

JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: trainer
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  replicatedJobs:
    - name: leader
      template:
        spec:
          template:
            metadata:
              annotations:
                kueue.x-k8s.io/podset-required-topology: cloud.example.com/rack
                kueue.x-k8s.io/podset-group-name: trainer
            spec:
              restartPolicy: Never
              containers:
                - name: leader
                  image: registry.k8s.io/pause:3.10
                  resources: {requests: {cpu: "4", memory: 16Gi}}
    - name: workers
      template:
        spec:
          parallelism: 8
          completions: 8
          template:
            metadata:
              annotations:
                kueue.x-k8s.io/podset-required-topology: cloud.example.com/rack
                kueue.x-k8s.io/podset-group-name: trainer
            spec:
              restartPolicy: Never
              containers:
                - name: worker
                  image: registry.k8s.io/pause:3.10
                  resources:
                    requests: {cpu: "4", memory: 32Gi}
                    limits: {nvidia.com/gpu: 1}
"""


def test_leader_and_workers_land_in_one_rack(tas_shape):
    shape = tas_shape(SHAPE, local_queues=["team-a"])
    trainer = shape.apply(JOBSET)

    trainer.wait_admitted()

    by_rack = trainer.placement(level=RACK)  # from the Workload's topology assignment
    assert by_rack == {"leader": {"r1": 1}, "workers": {"r1": 8}}
    # kube-scheduler bound the pods where Kueue said
    assert trainer.pods_placement(level=RACK) == by_rack
