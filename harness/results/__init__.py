"""What happened to each workload (Outcome), how two sets of outcomes are compared, and the
one report that prints the differences."""
