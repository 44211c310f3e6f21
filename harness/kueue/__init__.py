"""What the harness knows of Kueue itself: feature gates, versions, annotation and label keys,
and the objects (ClusterQueue specs, admission status) it writes as Kueue would."""
