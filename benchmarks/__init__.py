"""Benchmarks for tensorlang (run one with `python -m benchmarks.<name>` from the repository root)."""
