"""A stateful stand-in for GitHub, served over real HTTP, for tests and benchmarks."""
