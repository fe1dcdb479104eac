"""Benchmarks: numbers are measured and reported, never asserted."""
