"""Embedded ZooKeeper and local clusters: the sandbox, tests, demos and benchmarks."""
