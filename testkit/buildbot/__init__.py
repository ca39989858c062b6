"""Real Buildbot masters for tests and benchmarks.

``harness`` runs a master and a worker as subprocesses, polling a git
repository (``git_repository``), configured as ``master_config`` writes it;
``in_process_master`` runs a master in this process and feeds it finished
builds through its data API, faster than a worker could run them.
"""
