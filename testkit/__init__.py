"""What the tests and the benchmarks share: stand-ins and real servers to run the code against.

``github`` is a stateful GitHub stand-in over real HTTP; ``buildbot`` runs real
Buildbot masters (in subprocesses with a worker and a git repository, or
in-process); ``databases`` makes PostgreSQL databases and ledger runners;
``processes`` finds free ports and scripts and stops process groups.  Not
installed: tests and benchmarks import it from the checkout.
"""
