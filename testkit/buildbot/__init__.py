"""Real Buildbot masters for tests and benchmarks: in subprocesses with a worker, or in-process."""
