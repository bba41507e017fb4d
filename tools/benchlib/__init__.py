"""Helpers of tools/bench: the profiler benchmark (docs/BENCHMARKS.md)."""
