"""Benchmarks (not tests): ``python -m benchmarks.throughput`` measures training speed against the machine's limit."""
