"""Benchmarks (run with ``make bench``); never collected by pytest (``testpaths = ["tests"]``)."""
