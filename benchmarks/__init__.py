"""Benchmarks, each run as a script (``python benchmarks/replay.py --help``).

A package so that the import contracts in pyproject.toml can check them: they
import nothing from the tests; what they share with the tests is in testkit.
"""
