"""Latency percentiles and the result document shared by the benchmarks."""

from __future__ import annotations


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def latency_ms(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99/max in milliseconds from per-entry latencies in seconds."""
    ordered = sorted(samples)
    return {
        "p50": round(percentile(ordered, 0.50) * 1000, 3),
        "p95": round(percentile(ordered, 0.95) * 1000, 3),
        "p99": round(percentile(ordered, 0.99) * 1000, 3),
        "max": round((ordered[-1] if ordered else 0.0) * 1000, 3),
    }


def throughput(entries: int, entry_size: int, seconds: float) -> dict[str, float]:
    return {
        "entries": entries,
        "seconds": round(seconds, 3),
        "entriesPerSec": round(entries / seconds) if seconds else 0,
        "mbPerSec": round(entries * entry_size / seconds / 1e6, 1) if seconds else 0.0,
    }
