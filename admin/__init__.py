"""Operator workflows over bookie/: checks, recovery, GC fan-out, exports, benchmarks."""
